#!/usr/bin/env bash
# bench/nn_cpu.sh PACK CORPUS: the nn layer's CPU figures on the GPU machine's host (all its
# cores), PyTorch CPU in the same call. PACK is an unpacked bench/nn_gpu.sh --pack (.gpu/nn).
#   1. the shakespeare-char GPT at batch 8 on the CPU, 6 steps, no dropout: tokens/s with the
#      device's pool slicing each sgemm (default) and with OpenBLAS's own threads
#      (TAPEVM_NN_BLAS_THREADS=openblas); bench/gpt_torch.py --device cpu on the same threads;
#   2. tapevm bench-nn --device cpu: matmul beside OpenBLAS called directly, the row kernels
#      beside a memcpy of the same bytes (issue 19's CPU targets).
# Writes cpu_log.txt and bench_cpu.json to $OUT (else /tmp/nn_cpu).
set -uo pipefail
pack=$1
corpus=$2
out=${OUT:-/tmp/nn_cpu}
mkdir -p "$out"
exec > >(tee "$out/cpu_log.txt") 2>&1
tapevm=$pack/src/cli/tapevm
threads=$(nproc)
echo "host: $threads hardware threads, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
for mode in pool openblas; do
    env $([[ $mode == openblas ]] && echo TAPEVM_NN_BLAS_THREADS=openblas) timeout 150 "$tapevm" train char-gpt \
        --data "$corpus" --preset shakespeare-char --device cpu --batch 8 --steps 6 --dropout 0 --log-interval 1 \
        --eval-interval 100000 --out /tmp/cpu.safetensors --log "$out/cpu_$mode.jsonl" >/dev/null 2>&1
    python3 -c "
import json, sys
rates = sorted(json.loads(l)['tokens_per_s'] for l in list(open('$out/cpu_$mode.jsonl'))[2:])
print('tapevm cpu ($mode threads): median tokens/s over steps 3-6:', round(rates[len(rates) // 2]))"
done
PYTHONUNBUFFERED=1 timeout 120 python3 bench/gpt_torch.py --data "$corpus" --device cpu --threads "$threads" --batch 8 \
    --steps 8 --warmup-timing 3 --precision f32 --json "$out/torch_cpu.json" | tail -1
timeout 60 "$tapevm" train mlp --device cpu | tail -1
timeout 200 "$tapevm" bench-nn --device cpu --only matmul,gpt,rows,ce,adamw --dtype f32 --repeats 5 \
    --json "$out/bench_cpu.json" 2>&1 | grep -vE "^\s*$" | tail -45
