#!/usr/bin/env bash
# bench/nn_train_compare.sh PACK CORPUS: issue 20's training figures in one call on the GPU
# machine, PyTorch in the same run. PACK is a packed build (bench/nn_gpu.sh --pack: .gpu/nn),
# CORPUS a text file (the KJV: `bible -f Gen1:1-Rev22:21 | sed 's/^[^ ]* //'`). Writes to $OUT
# (else /tmp/nn_train): the MLP example on the GPU and the host's CPU; the shakespeare-char GPT
# for a few steps on the GPU in f32 and fp16 (tokens/s from the JSON log); bench/gpt_torch.py on
# the same corpus in f32, fp16 autocast and bf16 autocast; a CPU run of both at batch 8.
# STEPS (default 20) sets the GPT runs' steps.
set -uo pipefail
pack=$1
corpus=$2
out=${OUT:-/tmp/nn_train}
steps=${STEPS:-20}
mkdir -p "$out"
exec > >(tee "$out/train_log.txt") 2>&1
tapevm=$pack/src/cli/tapevm
run() { local limit=$1; shift; echo "== $*"; local start=$SECONDS; timeout "$limit" "$@"; echo "   exit $? ($((SECONDS - start)) s)"; }
run 90 "$tapevm" train mlp --device gpu
run 90 "$tapevm" train mlp --device cpu
for precision in f32 fp16; do
    flag=; [[ $precision == fp16 ]] && flag=--fp16
    run 150 "$tapevm" train char-gpt --data "$corpus" --preset shakespeare-char --device gpu --steps "$steps" \
        --log-interval 5 --eval-interval 100000 --out /tmp/ours_$precision.safetensors --log "$out/ours_$precision.jsonl" $flag
done
for precision in f32 fp16 bf16; do
    PYTHONUNBUFFERED=1 run 90 python3 bench/gpt_torch.py --data "$corpus" --steps "$((steps + 10))" \
        --precision "$precision" --json "$out/torch_$precision.json"
done
run 120 "$tapevm" train char-gpt --data "$corpus" --preset shakespeare-char --device cpu --batch 8 --steps 5 \
    --log-interval 1 --eval-interval 100000 --out /tmp/ours_cpu.safetensors --log "$out/ours_cpu.jsonl"
PYTHONUNBUFFERED=1 run 90 python3 bench/gpt_torch.py --data "$corpus" --device cpu --batch 8 --steps 8 \
    --warmup-timing 3 --precision f32 --json "$out/torch_cpu.json"
