#!/usr/bin/env bash
# bench/nn_matmul_probe.sh BUILD OUT: the nn matmul check on the GPU machine: pipeline statistics
# (local memory), the gpu matmul tests, bench_nn_gpu in full and a few f32 tiles at 4096^3.
set -u
build=${1:-.gpu/nn}
out=${2:-${OUT:-/tmp/probe}}
B=$build/tests/nn/gpu/bench_nn_gpu
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader 2>&1
echo "=== stats"
TAPEVM_GPU_PIPELINE_STATS=1 timeout 60 $B --filter "4096x4096x4096" --reps 1 2>&1 | grep -v '^device:' | cut -c1-400
echo "=== bench (all cases)"
timeout 150 $B --reps 3 2>&1
for tile in 64x64x16 128x128x8 128x64x16 64x128x16; do
    echo "=== f32 tile $tile"
    TAPEVM_NN_MATMUL_TILE=$tile timeout 30 $B --filter "cube f32->f32 4096x4096x4096" --reps 3 2>&1 | grep -v '^device:'
done
for t in test_nn_gpu_matmul test_nn_gpu; do
    echo "=== $t"
    timeout 120 $build/tests/nn/gpu/$t >"$out/$t.txt" 2>&1
    echo "exit $?"; tail -4 "$out/$t.txt"
done
