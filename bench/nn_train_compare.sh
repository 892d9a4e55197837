#!/usr/bin/env bash
# bench/nn_train_compare.sh PACK CORPUS: issue 20's training figures in one call on the GPU
# machine, PyTorch in the same run. PACK is a packed build (bench/nn_gpu.sh --pack: .gpu/nn),
# CORPUS a text file (the KJV: `bible -f Gen1:1-Rev22:21 | sed 's/^[^ ]* //'`). Writes to $OUT
# (else /tmp/nn_train):
#   1. process start to the end of the first step, twice (cold: the driver's shader cache empty
#      for tapevm's pipelines; warm: the second run), one-step runs;
#   2. tokens/s of the shakespeare-char GPT on the GPU, STEPS (default 20) steps, f32 and fp16,
#      without dropout (bench/gpt_torch.py has none, so both do the same work), and
#      bench/gpt_torch.py on the same corpus in f32, fp16 autocast and bf16 autocast;
#   3. peak device memory: 5 steps with TAPEVM_NN_PROFILE=1 (the "peak in use" line) against
#      gpt_torch.py's torch.cuda.max_memory_allocated;
#   4. the MLP example on the GPU and the host's CPU (CPU=1 adds the batch-8 char GPT on the CPU
#      beside PyTorch CPU);
#   5. LONG=N (0: skipped): both trained N steps in PRECISION (default fp16; f32 or fp16) from one
#      initialisation (tapevm's --init-out) on the same batches (gpt_torch.py --data reproduces
#      tapevm's draws), validation every N/10 steps on the same 8 batches: long_*.jsonl for
#      bench/plot_loss.py and the final validation losses.
set -uo pipefail
pack=$1
corpus=$2
out=${OUT:-/tmp/nn_train}
steps=${STEPS:-20}
long=${LONG:-0}
precision_long=${PRECISION:-fp16}
mkdir -p "$out"
exec > >(tee "$out/train_log.txt") 2>&1
tapevm=$pack/src/cli/tapevm
run() { local limit=$1; shift; echo "== $*"; local start=$SECONDS; timeout "$limit" "$@"; echo "   exit $? ($((SECONDS - start)) s)"; }
gpt=(train char-gpt --data "$corpus" --preset shakespeare-char --device gpu --dropout 0)
no_eval=(--eval-interval 100000)

for kind in cold warm; do
    start=$(date +%s%N)
    "$tapevm" "${gpt[@]}" "${no_eval[@]}" --steps 1 --out /tmp/first.safetensors >/dev/null 2>&1
    echo "tapevm process start to first step done ($kind): $(( ($(date +%s%N) - start) / 1000000 )) ms (with corpus load, init, checkpoint)"
done
# f32_clip_on_host: f32 with the gradient norm read on the host before each update (the
# default computes the clip factor on the device): the A/B of that change.
for precision in f32 f32_clip_on_host fp16; do
    flag=; [[ $precision == fp16 ]] && flag=--fp16
    [[ $precision == f32_clip_on_host ]] && flag=--clip-on-host
    run 150 "$tapevm" "${gpt[@]}" "${no_eval[@]}" --steps "$steps" --log-interval 5 --out /tmp/ours_$precision.safetensors \
        --log "$out/ours_$precision.jsonl" $flag | tail -2
    TAPEVM_NN_PROFILE=1 "$tapevm" "${gpt[@]}" "${no_eval[@]}" --steps 5 --out /tmp/ours_$precision.safetensors $flag 2>&1 |
        grep -E "tensor buffers" | sed "s/^/tapevm $precision peak: /"
done
for precision in f32 fp16 bf16; do
    PYTHONUNBUFFERED=1 run 90 python3 bench/gpt_torch.py --data "$corpus" --steps "$((steps + 10))" \
        --precision "$precision" --json "$out/torch_$precision.json" | tail -2
done
python3 - "$out" <<'PY'
import json, sys
out = sys.argv[1]
for name in ("f32", "f32_clip_on_host", "fp16"):
    rows = [json.loads(l) for l in open(f"{out}/ours_{name}.jsonl")]
    rates = sorted(r["tokens_per_s"] for r in rows[3:])
    print(f"tapevm {name}: median tokens/s over steps 4..: {rates[len(rates) // 2]:,.0f}")
for name in ("f32", "fp16", "bf16"):
    r = json.load(open(f"{out}/torch_{name}.json"))
    print(f"torch {name}: {r['tokens_per_s']:,.0f} tokens/s, peak {r['peak_memory_bytes'] / 2**20:.0f} MiB, "
          f"process start to first step {r['process_start_to_first_step_s']:.2f} s")
PY
run 90 "$tapevm" train mlp --device gpu | tail -2
run 90 "$tapevm" train mlp --device cpu | tail -2
if [[ ${CPU:-0} == 1 ]]; then
    run 120 "$tapevm" train char-gpt --data "$corpus" --preset shakespeare-char --device cpu --batch 8 --steps 5 \
        --dropout 0 --log-interval 1 --eval-interval 100000 --out /tmp/ours_cpu.safetensors --log "$out/ours_cpu.jsonl"
    PYTHONUNBUFFERED=1 run 90 python3 bench/gpt_torch.py --data "$corpus" --device cpu --batch 8 --steps 8 \
        --warmup-timing 3 --precision f32 --json "$out/torch_cpu.json"
fi
if (( long > 0 )); then
    flag=; [[ $precision_long == fp16 ]] && flag=--fp16
    interval=$(( long / 10 ))
    run 450 "$tapevm" "${gpt[@]}" --steps "$long" --seed 1 --eval-interval "$interval" --eval-batches 8 \
        --log-interval 500 --init-out /tmp/long_init.safetensors --out /tmp/long.safetensors \
        --log "$out/long_tapevm_$precision_long.jsonl" $flag | tail -3
    PYTHONUNBUFFERED=1 run 300 python3 bench/gpt_torch.py --data "$corpus" --seed 1 --init /tmp/long_init.safetensors \
        --steps "$long" --eval-interval "$interval" --eval-iters 8 --precision "$precision_long" \
        --log "$out/long_torch_$precision_long.jsonl" --json "$out/long_torch_$precision_long.json" | tail -2
    python3 - "$out" "$precision_long" <<'PY'
import json, sys
out, p = sys.argv[1], sys.argv[2]
def vals(path):
    return {r["step"]: r["val_loss"] for r in map(json.loads, open(path)) if "val_loss" in r}
ours, torch = vals(f"{out}/long_tapevm_{p}.jsonl"), vals(f"{out}/long_torch_{p}.jsonl")
for step in sorted(set(ours) & set(torch)):
    print(f"step {step}: validation loss tapevm {ours[step]:.4f} torch {torch[step]:.4f} difference {ours[step] - torch[step]:+.4f}")
PY
fi
