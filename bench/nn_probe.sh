#!/usr/bin/env bash
# bench/nn_probe.sh PACK: on the GPU machine, the checks and timings of kernel variants that the
# defaults do not run, in one call (after `bash bench/nn_gpu.sh --pack build` here):
#   check.txt    the GPU conformance sweep of matmul and attention with the tensor-core matmul's
#                two-stage and 8-subgroup variants and the f32 matmul's one-stage variant;
#   kernels.txt  bench-nn: attention (f16 and f32, with the driver's pipeline statistics; f16
#                again on the f32-arithmetic kernels), gelu with the per-kernel profile, the
#                square matmuls per variant;
#   tune.md      bench/nn_tune.sh over F32_TILES and COOPMAT_TILES (see there) on the GPT shapes;
#   profile_{f32,fp16}.txt  10 training steps of the shakespeare-char GPT with TAPEVM_NN_PROFILE=1
#                (device time per kernel), on CORPUS (default /tmp/kjv.txt).
# PROBE="check kernels tune profile" (the default) picks the steps. Writes under $OUT (else
# /tmp/nn_probe). Stays under about 9 minutes.
set -uo pipefail
pack=${1:?usage: bench/nn_probe.sh PACK}
out=${OUT:-/tmp/nn_probe}
mkdir -p "$out"
T=$pack/src/cli/tapevm
C=$pack/tests/nn/conformance/test_nn_conformance
bench() { timeout 60 "$T" bench-nn --device gpu "$@"; }
probe=" ${PROBE:-check kernels tune profile} "
[[ $probe == *" check "* ]] && {
    for setting in "TAPEVM_NN_PROBE=defaults" "TAPEVM_NN_COOPMAT_STAGES=2" "TAPEVM_NN_COOPMAT_TILE=128x128x32x2x2" "TAPEVM_NN_MATMUL_TILE=128x128x16x1"; do
        echo "== $setting"
        env TAPEVM_NN_SWEEP=1 "$setting" timeout 100 "$C" --devices=gpu \
            -tc="conformance: matmul,conformance: attention*,conformance: kv_attention" | grep -E "^total|FAILED"
    done
} >"$out/check.txt" 2>&1
[[ $probe == *" kernels "* ]] && {
    TAPEVM_GPU_PIPELINE_STATS=1 bench --only attention --dtype f16,f32 --repeats 5 2>&1 | grep -v "^nn gpu pipeline [^a]"
    TAPEVM_NN_ATTENTION=tiled bench --only attention --dtype f16 --repeats 5
    TAPEVM_NN_PROFILE=1 bench --only gelu --dtype f16,f32 --repeats 5
    for s in 1 2; do echo "== coopmat stages $s"; TAPEVM_NN_COOPMAT_STAGES=$s bench --only matmul --dtype f16 --repeats 3; done
    echo "== f32 one stage"; TAPEVM_NN_MATMUL_TILE=128x128x16x1 bench --only matmul --dtype f32 --repeats 3
    echo "== f32 default"; bench --only matmul --dtype f32 --repeats 3
} >"$out/kernels.txt" 2>&1
[[ $probe == *" tune "* ]] && OUT=/tmp/nn_probe_tune ONLY=gpt REPEATS=3 SPLITS="" \
    F32_TILES=${F32_TILES:-"128x128x16x2 128x128x16x1 128x64x16x2 128x64x16x1 128x128x8x2"} \
    COOPMAT_TILES=${COOPMAT_TILES:-"128x128x32x2x2 128x128x32x2x2/2 128x128x32x2x4 128x128x32x2x4/2 128x64x32x2x2 128x64x32x2x2/2 128x128x64x2x2 256x128x32x4x2 128x256x32x2x4"} \
    timeout 280 bash bench/nn_tune.sh "$pack" >/dev/null 2>&1
cp /tmp/nn_probe_tune/tune.md "$out/" 2>/dev/null
if [[ $probe == *" profile "* ]]; then
    for precision in f32 fp16; do
        flag=; [[ $precision == fp16 ]] && flag=--fp16
        TAPEVM_NN_PROFILE=1 timeout 90 "$T" train char-gpt --data "${CORPUS:-/tmp/kjv.txt}" --preset shakespeare-char \
            --device gpu --dropout 0 --eval-interval 100000 --steps 10 --out /tmp/probe.safetensors $flag \
            >"$out/profile_$precision.txt" 2>&1
    done
fi
cat "$out/check.txt" 2>/dev/null
