#!/bin/sh
# The training examples on the GPU machine (run from the repository root after a release
# build in ./build): the MLP example and the tiny char-gpt on the GPU and the CPU, then
# sampling from the GPU checkpoint. The corpus is the King James Bible when `bible` is
# installed (bible-kjv), else a generated Markov-chain text. Prints the commands' output.
#
#   sh bench/nn_train_gpu.sh [build folder] [steps]
set -eu
build=${1:-build}
steps=${2:-2000}
tapevm="$build/src/cli/tapevm"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if command -v bible >/dev/null 2>&1; then
    bible -f Gen1:1-Rev22:21 > "$work/corpus.txt"  # the whole KJV, about 4.4 MB
else
    python3 - "$work/corpus.txt" <<'PY'
import random, sys
random.seed(1)
s, out = 0, []
for _ in range(2_000_000):
    s = (s + 1) % 8 if random.random() < 0.5 else (3 * s + 2) % 8
    out.append(chr(ord('a') + s))
open(sys.argv[1], 'w').write(''.join(out))
PY
fi

for device in gpu cpu; do
    echo "== train mlp --device $device"
    "$tapevm" train mlp --device "$device"
    echo "== train char-gpt --preset tiny --device $device"
    "$tapevm" train char-gpt --data "$work/corpus.txt" --device "$device" --preset tiny --steps "$steps" \
        --out "$work/$device.safetensors" --log "$work/$device.jsonl"
done
echo "== train char-gpt --preset tiny --device gpu --fp16"
"$tapevm" train char-gpt --data "$work/corpus.txt" --device gpu --preset tiny --steps "$steps" --fp16 \
    --out "$work/gpu_fp16.safetensors" --log "$work/gpu_fp16.jsonl"
echo "== sample from the gpu checkpoint"
"$tapevm" sample --checkpoint "$work/gpu.safetensors" --prompt "In the beginning" --tokens 300 --device gpu
