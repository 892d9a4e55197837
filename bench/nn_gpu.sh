#!/bin/sh
# bench/nn_gpu.sh: the gpu device's own kernels on a real GPU (the H100 run).
#
#   bench/nn_gpu.sh [BUILD_DIR] [quick]
#
# 1. The nn gpu test suites (on a device with cooperative matrices, their f16 matmul cases run
#    the tensor-core kernel: its correctness check).
# 2. bench_nn_gpu: dispatch cost in a stream of 250, copy bandwidth, matmul f32 and f16 at 4096^3
#    and 8192^3 and on the GPT shapes (NN, NT, TN), one JSON line per case.
# 3. A tile sweep of the tiled f32 kernel and the tensor-core kernel at 4096^3.
# 4. bench/nn_torch.py (PyTorch on the same shapes) where torch with CUDA is installed.
# Output: a table on stdout; JSON lines in $OUT/nn_gpu.jsonl and $OUT/nn_torch.jsonl when OUT
# is set (else in the current folder).
set -u
BUILD=${1:-build}
QUICK=${2:-}
JSON=${OUT:-.}/nn_gpu.jsonl
: > "$JSON"
BENCH="$BUILD/tests/nn/gpu/bench_nn_gpu"
ARGS=""
[ "$QUICK" = quick ] && ARGS="--quick"

echo "== tests"
for t in test_nn_gpu test_nn_gpu_matmul test_nn_gpu_rows test_nn_gpu_attention; do
  if [ -x "$BUILD/tests/nn/gpu/$t" ]; then
    TAPEVM_VULKAN_VALIDATION=0 "$BUILD/tests/nn/gpu/$t" >"/tmp/$t.log" 2>&1
    echo "$t: exit $? ($(tail -n 3 /tmp/$t.log | tr '\n' ' '))"
  fi
done

echo "== bench_nn_gpu"
"$BENCH" $ARGS --json | tee /tmp/bench_nn_gpu.out | grep -v '^{'
grep '^{' /tmp/bench_nn_gpu.out >> "$JSON"

if [ "$QUICK" != quick ]; then
echo "== tile sweep, f32 4096^3 (TAPEVM_NN_MATMUL_TILE=BMxBNxBK)"
for tile in 128x128x8 128x128x16 128x128x32 64x64x16 128x64x16 64x128x16; do
  printf '%s: ' "$tile"
  TAPEVM_NN_MATMUL_TILE=$tile "$BENCH" --json --filter "cube f32->f32 4096x4096x4096" --reps 3 \
    | tee -a /tmp/bench_nn_gpu_tiles.out | grep -v '^{' | grep matmul || echo "failed"
done
grep '^{' /tmp/bench_nn_gpu_tiles.out >> "$JSON" 2>/dev/null

echo "== tile sweep, f16 tensor cores 4096^3 (TAPEVM_NN_COOPMAT_TILE=BMxBNxBKxWARPS_M)"
for tile in 128x128x32x2 128x128x16x2 64x128x32x1 128x64x32x4 128x128x64x2; do
  printf '%s: ' "$tile"
  TAPEVM_NN_COOPMAT_TILE=$tile "$BENCH" --json --filter "cube f16->f32 4096x4096x4096" --reps 3 \
    | grep -v '^{' | grep matmul || echo "failed"
done
echo "== f16 without tensor cores (TAPEVM_NN_COOPMAT=0)"
TAPEVM_NN_COOPMAT=0 "$BENCH" --filter "cube f16->f32 4096" --reps 3 | grep matmul
echo "== split-K off (TAPEVM_NN_MATMUL_SPLIT=1) on the GPT weight-gradient shapes"
TAPEVM_NN_MATMUL_SPLIT=1 "$BENCH" --filter "TN" --reps 3 | grep matmul
fi

echo "== PyTorch anchors (bench/nn_torch.py), where torch with CUDA is installed"
if python3 -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null; then
  python3 "$(dirname "$0")/nn_torch.py" ${QUICK:+--quick} --json "${OUT:-.}/nn_torch.jsonl"
else
  echo "no torch with CUDA: skipped"
fi
