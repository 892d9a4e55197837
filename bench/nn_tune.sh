#!/usr/bin/env bash
# bench/nn_tune.sh PACK: the matmul kernels' tiles on the GPT shapes, swept on the GPU machine in
# one call. For each TAPEVM_NN_MATMUL_TILE (f32 tiled kernel), TAPEVM_NN_MATMUL_SPLIT (split-K
# slices) and TAPEVM_NN_COOPMAT_TILE (f16 tensor-core kernel) below, `tapevm bench-nn --only gpt`
# in a fresh process; then bench/nn_torch.py --only gpt for cuBLAS on the same shapes. Prints one
# table per dtype: shape x setting, milliseconds (median of --repeats), the best setting per
# shape and cuBLAS. PACK: an unpacked bench/nn_gpu.sh --pack (.gpu/nn). Writes tune_*.json and
# tune.md under $OUT (else /tmp/nn_tune). ONLY=gpt,matmul adds the square 4096^3 and 8192^3
# matmuls to the GPT shapes; F32_TILES, SPLITS and COOPMAT_TILES replace the lists below
# (F32 tiles: BMxBNxBK[xSTAGES]; COOPMAT tiles: BMxBNxBKxWARPS_MxWARPS_N[/STAGES]). The table is
# rewritten after every setting, so a run cut short keeps what it measured.
set -uo pipefail
pack=$1
out=${OUT:-/tmp/nn_tune}
mkdir -p "$out"
tapevm=$pack/src/cli/tapevm
repeats=${REPEATS:-3}
f32_tiles=${F32_TILES:-"128x128x16 128x128x8 128x64x16 64x128x16 256x128x16 128x256x16 64x64x16 128x128x32"}
splits=${SPLITS:-"1 2 4 8 16"}
coopmat_tiles=${COOPMAT_TILES:-"128x128x32x2x2 128x128x32x2x4 128x256x32x2x4 256x128x32x4x2 128x64x32x2x2 128x64x32x4x1 64x64x32x2x2 128x128x64x2x2"}
only=${ONLY:-gpt}
bench() {  # NAME ENV... : one bench-nn run, then the table so far
    local name=$1; shift
    env "$@" timeout 60 "$tapevm" bench-nn --device gpu --only "$only" --dtype "${DTYPE}" --repeats "$repeats" \
        --json "$out/tune_${name}.json" >/dev/null 2>"$out/tune_${name}.err" || echo "nn_tune: $name failed: $(tail -2 "$out/tune_${name}.err")"
    summary >/dev/null
}
summary() {
python3 - "$out" <<'PY'
import glob, json, os, sys
out = sys.argv[1]
runs = {}
for path in sorted(glob.glob(f"{out}/tune_*.json")):
    name = os.path.basename(path)[5:-5]
    try:
        records = json.load(open(path))
    except ValueError:
        continue
    runs[name] = {(r["shape"], r["dtype"]): r["seconds"] * 1e3 for r in records if r["kernel"] == "matmul"}
torch = runs.pop("torch", {})
lines = []
for dtype in ("f32", "f16"):
    names = [n for n in runs if n.startswith(dtype)]
    shapes = sorted({s for n in names for (s, d) in runs[n] if d == dtype})
    lines += [f"## {dtype} (ms, median of repeats; best per shape in bold)", "",
              "| shape | " + " | ".join(n[len(dtype) + 1:] for n in names) + " | cuBLAS |",
              "|---|" + "---:|" * (len(names) + 1)]
    for s in shapes:
        values = [runs[n].get((s, dtype)) for n in names]
        best = min((v for v in values if v), default=None)
        cells = [("**%.3f**" if v == best else "%.3f") % v if v else "-" for v in values]
        t = torch.get((s, dtype))
        lines.append(f"| {s} | " + " | ".join(cells) + f" | {t:.3f} |" if t else f"| {s} | " + " | ".join(cells) + " | - |")
    lines.append("")
text = "\n".join(lines)
open(f"{out}/tune.md", "w").write(text)
print(text)
PY
}
PYTHONUNBUFFERED=1 timeout 90 python3 bench/nn_torch.py --only "$only" --dtype f32,f16 --repeats "$repeats" \
    --json "$out/tune_torch.json" >/dev/null 2>&1 || echo "nn_tune: torch failed"
DTYPE=f32
for tile in $f32_tiles; do bench "f32_tile_$tile" TAPEVM_NN_MATMUL_TILE="$tile"; done
for split in $splits; do bench "f32_split_$split" TAPEVM_NN_MATMUL_SPLIT="$split"; done
DTYPE=f16
for setting in $coopmat_tiles; do
    tile=${setting%/*}; stages=1
    [[ $setting == */* ]] && stages=${setting#*/}
    bench "f16_tile_${tile}_s$stages" TAPEVM_NN_COOPMAT_TILE="$tile" TAPEVM_NN_COOPMAT_STAGES="$stages"
done
for split in $splits; do bench "f16_split_$split" TAPEVM_NN_MATMUL_SPLIT="$split"; done
summary
