#!/usr/bin/env bash
# bench/gmm_device.sh [BUILD_DIR] [OUT_DIR]: issue 22 item 1 in one call on the GPU machine.
# Here, before: `bash bench/nn_gpu.sh --pack build` (packs tapevm-bench and the conformance
# executables into .gpu/nn.tar.xz); the call carries [".gpu"] and runs
# `bash bench/gmm_device.sh .gpu/nn`. Steps (each instance has a time limit, the whole stays
# under TAPEVM_GMM_BUDGET seconds, default 540, so one slow instance leaves the others):
#   1. the reduced-gradient conformance cases on the GPU (interpreter and compiled kernels) and
#      the CPU VM at this host's widest instruction set: the same sums as on lavapipe;
#   2. bench/gmm_jax.py: JAX's jit(grad) of the same objective, GPU f32 and f64 at d 64, K 200,
#      n 10,000 (issue 22's GPU row), and its CPU at d 20, K 50, n 1,000;
#   3. `tapevm-bench adbench gmm D,K,N` on all threads over ADBench's d x K grid at n = 1,000,
#      then on 1 thread (with ADOL-C where its tape fits) on part of it, then n = 10,000;
#   4. gmm.md: one table (instance, threads, each implementation's gradient/objective ratio,
#      tapevm's gradient time against the hand-written one's), and gmm.svg (bench/plot_gmm.py).
# OUT_DIR (default $OUT, else /tmp/gmm_device) gets log.txt, the JSON files (gmm/*.json),
# gmm.md and gmm.svg.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
build=${1:-build}
out=${2:-${OUT:-/tmp/gmm_device}}
mkdir -p "$out/gmm"
if [[ $build == .gpu/nn && ! -d .gpu/nn && -f .gpu/nn.tar.xz ]]; then
    tar -xJf .gpu/nn.tar.xz -C .gpu || exit 1
fi
[[ -d $build/lib ]] && export LD_LIBRARY_PATH=$root/$build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
exec > >(tee "$out/log.txt") 2>&1
budget=${TAPEVM_GMM_BUDGET:-540}
start=$SECONDS
if ! ldconfig -p | grep -q libvulkan.so.1 && ls .gpu/*.deb >/dev/null 2>&1; then
    for f in .gpu/*.deb; do dpkg -x "$f" /; done
    ldconfig
fi
if [[ -z ${VK_DRIVER_FILES:-} && -x $build/src/cli/tapevm ]] && ! "$build/src/cli/tapevm" devices >/dev/null 2>&1; then
    icd=$(find /usr/local/nvidia /usr/share/vulkan /etc/vulkan /usr/lib -maxdepth 6 -name 'nvidia_icd*.json' 2>/dev/null |
        head -1)
    [[ -n $icd ]] && export VK_DRIVER_FILES=$icd
fi
bench=$build/src/cli/tapevm-bench
threads=$(nproc)
lscpu | grep -E "Model name|^CPU\(s\)|Flags" | cut -c1-200

echo "== 1. reduced-gradient conformance"
if [[ -x $build/tests/conformance/test_conformance_gpu ]]; then
    timeout 120 "$build/tests/conformance/test_conformance_gpu" -tc='*reduced*' | tail -3
    TAPEVM_TEST_GPU_ENGINE=compiled TAPEVM_CACHE_DIR=$(mktemp -d) \
        timeout 120 "$build/tests/conformance/test_conformance_gpu" -tc='*reduced*' | tail -3
fi
[[ -x $build/tests/conformance/test_conformance_cpu ]] &&
    timeout 60 "$build/tests/conformance/test_conformance_cpu" -tc='*reduced*' | tail -3

echo "== 2. JAX jit(grad) of the same objective on the GPU (d 64, K 200, n 10,000)"
timeout 120 python3 bench/gmm_jax.py --d 64 --k 200 --n 10000 2>&1 | grep -v "^WARNING" | tail -2
timeout 120 python3 bench/gmm_jax.py --d 64 --k 200 --n 10000 --f64 2>&1 | grep -v "^WARNING" | tail -2
JAX_PLATFORMS=cpu timeout 120 python3 bench/gmm_jax.py --d 20 --k 50 --n 1000 --f64 2>&1 | grep -v "^WARNING" | tail -2

echo "== 3. adbench gmm"
run() {  # run D,K,N THREADS LIMIT
    local left=$((budget - (SECONDS - start)))
    ((left > 20)) || { echo "skipped gmm $1 on $2 threads: out of time"; return; }
    local limit=$(($3 < left ? $3 : left))
    timeout "$limit" "$bench" adbench gmm "$1" --threads "$2" --repeats 3 \
        --json "$out/gmm/gmm_${1//,/_}_t$2.json" || echo "gmm $1 on $2 threads: exit $?"
}
for d in 2 10 20 32 64; do
    for k in 5 10 25 50 100 200; do run "$d,$k,1000" "$threads" 60; done
done
for d in 2 10 20; do
    for k in 5 25 100; do run "$d,$k,1000" 1 60; done
done
run 10,25,10000 "$threads" 60
run 64,200,10000 "$threads" 150

echo "== 4. table"
/usr/bin/python3 - "$out" <<'EOF'
import glob, json, sys
out = sys.argv[1]
rows = []
for path in sorted(glob.glob(f"{out}/gmm/*.json")):
    with open(path) as f:
        rows.append(json.load(f))
rows.sort(key=lambda r: (r["threads"], r["n"], r["d"], r["k"]))
lines = ["| d | K | n | threads | tapevm grad/obj | hand-written grad/obj | ADOL-C grad/obj | tapevm grad ms | hand grad ms | ADOL-C grad ms | tapevm error |",
         "|---|---|---|---|---|---|---|---|---|---|---|"]
for r in rows:
    a = r.get("adolc", {})
    lines.append("| {d} | {k} | {n} | {threads} | {t:.2f} | {h:.2f} | {ar} | {tg:.2f} | {hg:.2f} | {ag} | {e:.1e} |".format(
        d=r["d"], k=r["k"], n=r["n"], threads=r["threads"], t=r["tapevm"]["ratio"], h=r["hand_written"]["ratio"],
        ar=f"{a['ratio']:.2f}" if "ratio" in a else "-", tg=r["tapevm"]["gradient_s"] * 1e3,
        hg=r["hand_written"]["gradient_s"] * 1e3, ag=f"{a['gradient_s'] * 1e3:.2f}" if "gradient_s" in a else "-",
        e=r["tapevm"]["largest_difference"]))
text = "\n".join(lines) + "\n"
open(f"{out}/gmm.md", "w").write(text)
print(text)
EOF
/usr/bin/python3 bench/plot_gmm.py "$out"/gmm/*_t"$threads".json -o "$out/gmm.svg" 2>/dev/null ||
    echo "(no plot: matplotlib missing here)"
echo "done in $((SECONDS - start)) s"
