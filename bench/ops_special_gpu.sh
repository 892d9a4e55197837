#!/bin/sh
# The special-function ops of issue 22 item 5 (Erf, Erfc, Lgamma, Digamma, Copysign, LogSumExp)
# on a real GPU: the conformance suite's per-op cases (values, every derivative mode, central
# differences) on the interpreter and on compiled kernels, in f32 and f64, against the reference
# VM. Run from the repository root after building (BUILD defaults to build):
#     sh bench/ops_special_gpu.sh
# TAPEVM_TEST_OPS restricts the per-op tests, so the suite's op-count check fails by design
# ("ops.size() == ..."); every other failure is real.
set -u
BUILD=${BUILD:-build}
OPS=${OPS:-Erf,Erfc,Lgamma,Digamma,Copysign,LogSumExp}
for engine in interpreter compiled; do
    echo "== gpu conformance, $engine engine, ops $OPS"
    TAPEVM_TEST_OPS=$OPS TAPEVM_TEST_GPU_ENGINE=$engine \
        "$BUILD/tests/conformance/test_conformance_gpu" -tc='every op*' 2>&1 | tail -40
done
