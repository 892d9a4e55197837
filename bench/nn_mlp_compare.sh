#!/usr/bin/env bash
# bench/nn_mlp_compare.sh PACK [STEPS]: on the GPU machine, issue 20's MLP row in one call:
# `tapevm train mlp` (2-64-64-1 tanh MLP, batch 1,024, Adam) on the gpu and the cpu device
# against bench/mlp_torch.py on CUDA and on the CPU with the same threads (all of the host's),
# then 300 gpu steps with TAPEVM_NN_PROFILE=1 (device time per kernel, host wait). Steps per
# second exclude the first 20 steps on both sides. Writes mlp.txt under $OUT (else /tmp).
set -uo pipefail
pack=${1:?usage: bench/nn_mlp_compare.sh PACK [STEPS]}
steps=${2:-2000}
out=${OUT:-/tmp}
threads=$(nproc)
{
    for device in gpu cpu; do
        echo "== tapevm train mlp --device $device --steps $steps"
        timeout 120 "$pack/src/cli/tapevm" train mlp --device "$device" --steps "$steps" 2>&1 | tail -4
    done
    echo "== pytorch cuda"
    timeout 120 python3 bench/mlp_torch.py --device cuda --steps "$steps" 2>&1 | tail -2
    echo "== pytorch cpu, $threads threads"
    timeout 120 python3 bench/mlp_torch.py --device cpu --threads "$threads" --steps "$steps" 2>&1 | tail -2
    echo "== tapevm gpu profile (300 steps)"
    TAPEVM_NN_PROFILE=1 timeout 60 "$pack/src/cli/tapevm" train mlp --device gpu --steps 300 2>&1 | tail -30
} >"$out/mlp.txt" 2>&1
cat "$out/mlp.txt"
