#!/usr/bin/env bash
# bench/nn_ab.sh BEFORE AFTER ROUNDS FILTER...: A/B of two bench_nn_gpu binaries on the GPU
# machine, each case in a fresh process, alternating BEFORE and AFTER ROUNDS times (bench-nn's
# records drift within one long process: bench/RESULTS.md), printing one line per run.
set -u
before=$1 after=$2 rounds=$3
shift 3
for filter in "$@"; do
    for ((round = 1; round <= rounds; ++round)); do
        for side in before after; do
            binary=$before; [[ $side == after ]] && binary=$after
            printf '%-6s %s: ' "$side" "$round"
            timeout 60 "$binary" --filter "$filter" --reps 5 2>&1 | grep -E "matmul|GB/s" | grep -v '^{' | head -3 | tr '\n' ' '
            echo
        done
    done
done
