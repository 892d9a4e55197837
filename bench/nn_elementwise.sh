#!/bin/sh
# bench/nn_elementwise.sh: elementwise tapes on a real GPU (the H100 run) and its host's CPU.
#
#   bench/nn_elementwise.sh [BUILD_DIR] [quick]
#
# 1. The elementwise test suites (test_nn_elementwise_cpu, test_nn_elementwise_gpu: against the
#    reference device and the reference VM, determinism, bad input).
# 2. bench_nn_elementwise: GELU forward/backward (f32, f16), a broadcast x * row + column and an
#    in-place AdamW update, each against the device's own copy bandwidth (issue 19's target:
#    >= 70% of copy), one JSON line per case.
# Output: a table on stdout; JSON lines in $OUT/nn_elementwise.jsonl when OUT is set (else
# ./nn_elementwise.jsonl).
set -u
BUILD=${1:-build}
QUICK=${2:-}
JSON=${OUT:-.}/nn_elementwise.jsonl
: > "$JSON"
ARGS=""
[ "$QUICK" = quick ] && ARGS="--quick"

echo "== tests"
for t in test_nn_elementwise_cpu test_nn_elementwise_gpu; do
  if [ -x "$BUILD/tests/nn/elementwise/$t" ]; then
    TAPEVM_VULKAN_VALIDATION=0 "$BUILD/tests/nn/elementwise/$t" >"/tmp/$t.log" 2>&1
    echo "$t: exit $? ($(tail -n 3 /tmp/$t.log | tr '\n' ' '))"
  fi
done

echo "== bench_nn_elementwise"
"$BUILD/tests/nn/elementwise/bench_nn_elementwise" $ARGS --json | tee /tmp/bench_nn_elementwise.out | grep -v '^{'
grep '^{' /tmp/bench_nn_elementwise.out >> "$JSON"
