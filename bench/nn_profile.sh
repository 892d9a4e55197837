#!/usr/bin/env bash
# bench/nn_profile.sh PACK CORPUS [STEPS]: where a training step's time goes, on the GPU machine.
# Runs the shakespeare-char GPT for STEPS (default 12) steps on the GPU in f32 and fp16, once
# plainly (tokens/s) and once with TAPEVM_NN_PROFILE=1 (the gpu device's table of device time per
# kernel from GPU timestamps, host wait and allocation time, printed as the device goes), and
# bench/gpt_torch.py on the same corpus for the anchor. PACK is a packed build (bench/nn_gpu.sh
# --pack, unpacked: .gpu/nn). Writes profile_*.txt and train_*.jsonl to $OUT (else /tmp/nn_profile).
set -uo pipefail
pack=$1
corpus=$2
steps=${3:-12}
out=${OUT:-/tmp/nn_profile}
mkdir -p "$out"
tapevm=$pack/src/cli/tapevm
run() { local limit=$1; shift; echo "== $*"; local start=$SECONDS; timeout "$limit" "$@"; echo "   exit $? ($((SECONDS - start)) s)"; }
for precision in f32 fp16; do
    flag=; [[ $precision == fp16 ]] && flag=--fp16
    common=(train char-gpt --data "$corpus" --preset shakespeare-char --device gpu --steps "$steps" --log-interval 1
        --eval-interval 100000 --out /tmp/profile_$precision.safetensors $flag)
    run 120 "$tapevm" "${common[@]}" --log "$out/train_$precision.jsonl" 2>&1 | tail -4
    TAPEVM_NN_PROFILE=1 run 120 "$tapevm" "${common[@]}" >"$out/profile_$precision.txt" 2>&1
    head -45 "$out/profile_$precision.txt" | grep -v "^step"
done
PYTHONUNBUFFERED=1 run 90 python3 bench/gpt_torch.py --data "$corpus" --steps "$((steps + 8))" --precision f32 \
    --json "$out/torch_f32.json" | tail -3
