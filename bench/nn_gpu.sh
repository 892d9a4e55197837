#!/usr/bin/env bash
# bench/nn_gpu.sh [BUILD_DIR] [OUT_DIR]: the nn kernels' GPU run, in one call on the GPU machine.
# bench/nn_gpu.sh --pack BUILD_DIR: here, before that call: packs the programs it runs, stripped,
#   with the shared libraries the GPU machine lacks (ADOL-C), into .gpu/nn.tar.xz (ignored; the
#   Vulkan loader's .deb is in .gpu already; OpenBLAS's runtime in .gpulibs), so that the device
#   call carries [".gpu"] and runs `bash bench/nn_gpu.sh .gpu/nn` (which unpacks it).
#
# BUILD_DIR (default build/) is a release build holding src/cli/tapevm and
# tests/nn/conformance/test_nn_conformance (and, optional, tests/nn/gpu/bench_nn_gpu and the
# tests/nn/gpu suites). OUT_DIR defaults to $OUT (the device tool's folder), else /tmp/nn_gpu.
# Run from the repository root. Steps, about 5 minutes on an H100 (each has a time limit,
# TAPEVM_NN_GPU_LIMITS="conformance bench torch extra" seconds, default "180 150 100 60", so the
# whole stays under 8.5 minutes and a hang in one step leaves the others' results):
#   0. the Vulkan loader (.gpu/*.deb) and OpenBLAS's runtime (.gpulibs/*.deb) are unpacked when the
#      machine lacks them (../shared/vulkan-loader/README.md); NVIDIA's driver file is found when
#      the loader finds no device on its default paths;
#   1. the GPU conformance suite over the full shape table (TAPEVM_NN_SWEEP=1, validation layer
#      on where installed), with its coverage table (nn_coverage_gpu.md): the tensor-core
#      (cooperative matrix) kernels run here, unlike on lavapipe, so this is their check;
#   2. tapevm bench-nn --device gpu --json (f32, f16);
#   3. python3 bench/nn_torch.py --json: PyTorch on the same shapes (CUDA events, no TF32);
#   4. one markdown table (nn_gpu.md, also printed): per kernel and shape our time, TFLOP/s or
#      GB/s, our GB/s as a share of our own copy bandwidth, torch's time and the ratio
#      torch time / our time (above 1: ours is faster), for bench/RESULTS.md;
#   5. where built: the gpu helper's own steps (tests/nn/gpu suites, bench_nn_gpu and its matmul
#      tile sweep at 4096^3) into extra.txt.
# OUT_DIR gets log.txt (everything printed), conformance.txt, nn_coverage_gpu.md, nn_ours.json,
# nn_torch.json, nn_gpu.md and extra.txt: seven files, within what the device tool brings back.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
if [[ ${1:-} == --pack ]]; then
    from=${2:?usage: bench/nn_gpu.sh --pack BUILD_DIR}
    rm -rf .gpu/nn .gpu/nn.tar.xz
    for path in "$from"/src/cli/tapevm "$from"/src/cli/tapevm-bench "$from"/tests/nn/conformance/test_nn_conformance "$from"/tests/nn/gpu/test_nn_gpu* \
        "$from"/tests/nn/gpu/bench_nn_gpu "$from"/tests/nn/elementwise/*_nn_elementwise* \
        "$from"/tests/conformance/test_conformance_gpu "$from"/tests/conformance/test_conformance_cpu \
        "$from"/tests/gpu/test_gpu_device; do
        [[ -f $path && -x $path ]] || continue
        program=${path#"$from"/}
        mkdir -p ".gpu/nn/$(dirname "$program")"
        strip --strip-unneeded -o ".gpu/nn/$program" "$from/$program" || exit 1
    done
    # Shared libraries the GPU machine lacks (ADOL-C for tapevm; OpenBLAS travels in .gpulibs).
    mkdir -p .gpu/nn/lib
    ldd .gpu/nn/src/cli/tapevm* .gpu/nn/tests/nn/*/* 2>/dev/null | awk '/=> \// {print $3}' | sort -u | while read -r library; do
        case $(basename "$library") in
            libadolc.so* | libColPack*.so* | libgomp.so* | libboost*.so* | libxxhash.so* | libglog.so* | libgflags.so* | libunwind.so*)
                cp -L "$library" .gpu/nn/lib/ ;;
        esac
    done
    ls ../shared/vulkan-loader/*.deb >/dev/null 2>&1 && cp -n ../shared/vulkan-loader/*.deb .gpu/
    tar -cJf .gpu/nn.tar.xz -C .gpu nn && rm -rf .gpu/nn  # compressed: the device tool carries 64 MiB
    du -sh .gpu .gpu/nn.tar.xz .gpulibs 2>/dev/null
    exit 0
fi
build=${1:-build}
out=${2:-${OUT:-/tmp/nn_gpu}}
mkdir -p "$out"
# A packed build (--pack) travels compressed: unpack it where it was asked for.
if [[ $build == .gpu/nn && ! -d .gpu/nn && -f .gpu/nn.tar.xz ]]; then
    tar -xJf .gpu/nn.tar.xz -C .gpu || exit 1
fi
[[ -d $build/lib ]] && export LD_LIBRARY_PATH=$root/$build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
tapevm=$build/src/cli/tapevm
conformance=$build/tests/nn/conformance/test_nn_conformance
read -r limit_conformance limit_bench limit_torch limit_extra <<<"${TAPEVM_NN_GPU_LIMITS:-180 150 100 60}"
exec > >(tee "$out/log.txt") 2>&1
start_all=$SECONDS

# 0. loader, OpenBLAS, driver
# (libglvnd's packages beside the loader: NVIDIA's Vulkan driver needs libGLX.so.0.)
if { ! ldconfig -p | grep -q libvulkan.so.1 || ! ldconfig -p | grep -q libGLX.so.0; } && ls .gpu/*.deb >/dev/null 2>&1; then
    for f in .gpu/*.deb; do dpkg -x "$f" /; done
    ldconfig
fi
if ! ldconfig -p | grep -q libopenblas && ls .gpulibs/*.deb >/dev/null 2>&1; then
    for f in .gpulibs/*.deb; do dpkg -x "$f" /; done
    ldconfig
fi
if [[ -z ${VK_DRIVER_FILES:-} ]] && ! "$tapevm" devices >/dev/null 2>&1; then
    icd=$(find /usr/local/nvidia /usr/share/vulkan /etc/vulkan /usr/lib -maxdepth 6 -name 'nvidia_icd*.json' 2>/dev/null |
        head -1)
    echo "nn_gpu: no driver on the default paths; using VK_DRIVER_FILES=${icd:-<none found>}"
    [[ -n $icd ]] && export VK_DRIVER_FILES=$icd
fi
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm --format=csv 2>&1
"$tapevm" devices 2>&1 || VK_LOADER_DEBUG=error,driver "$tapevm" devices 2>&1 | tail -20

# 1. conformance, full table
start=$SECONDS
TAPEVM_NN_SWEEP=1 TAPEVM_VULKAN_VALIDATION=${TAPEVM_VULKAN_VALIDATION:-1} timeout "$limit_conformance" \
    "$conformance" --devices=gpu --coverage "$out/nn_coverage_gpu.md" >"$out/conformance.txt" 2>&1
status=$?
echo "conformance (gpu, sweep): exit $status ($((SECONDS - start)) s)$([[ $status == 124 ]] && echo ' TIMED OUT')"
grep -E "^(FAILED|device under test)|validation" "$out/conformance.txt" | cut -c1-300 | head -40
sed -n '/nn conformance summary/,/^total:/p' "$out/conformance.txt"

# 2. ours
start=$SECONDS
timeout "$limit_bench" "$tapevm" bench-nn --device gpu --dtype f32,f16 --json "$out/nn_ours.json" 2>&1
echo "bench-nn: exit $? ($((SECONDS - start)) s)"

# 3. torch
start=$SECONDS
PYTHONUNBUFFERED=1 timeout "$limit_torch" python3 bench/nn_torch.py --dtype f32,f16 --json "$out/nn_torch.json" 2>&1
echo "nn_torch: exit $? ($((SECONDS - start)) s)"

# 4. the combined table
python3 - "$out/nn_ours.json" "$out/nn_torch.json" "$out/nn_gpu.md" <<'PY'
import json, sys

def load(path):
    try:
        return json.load(open(path))
    except (OSError, ValueError) as error:
        print(f"nn_gpu: {path}: {error}")
        return []

ours, torch = load(sys.argv[1]), load(sys.argv[2])
anchor = {(r["kernel"], r["shape"], r["dtype"]): r for r in torch}
copy = next((r["gbps"] for r in ours if r["kernel"] == "copy"), 0)
torch_copy = next((r["gbps"] for r in torch if r["kernel"] == "copy"), 0)
device = ours[0]["device"] if ours else "?"
lines = [f"nn kernels on {device}: tapevm bench-nn beside bench/nn_torch.py ({torch[0]['device'] if torch else 'no torch records'}), same run.",
         f"Our copy bandwidth {copy:.0f} GB/s (nn::copy, read + write); torch's {torch_copy:.0f} GB/s.",
         "speed vs torch = torch's time / ours (above 1: ours is faster); %copy = our GB/s / our copy GB/s.", "",
         "| kernel | shape | dtype | ours ms | ours TFLOP/s | ours GB/s | %copy | torch ms | torch TFLOP/s or GB/s | speed vs torch |",
         "|---|---|---|---:|---:|---:|---:|---:|---:|---:|"]
# Attention forward + backward, summed from our two records, beside torch's fwd+bwd record.
combined = list(ours)
for r in ours:
    if r["kernel"] == "attention":
        back = next((b for b in ours if b["kernel"] == "attention_backward" and b["shape"] == r["shape"] and b["dtype"] == r["dtype"]), None)
        if back:
            seconds, flops = r["seconds"] + back["seconds"], r["flops"] + back["flops"]
            combined.append({**r, "kernel": "attention fwd+bwd", "seconds": seconds, "flops": flops,
                             "tflops": flops / seconds / 1e12})
for r in combined:
    t = anchor.get((r["kernel"], r["shape"], r["dtype"]))
    rate = lambda rec: (f"{rec['tflops']:.1f}" if rec.get("flops") else (f"{rec['gbps']:.0f} GB/s" if rec.get("bytes") else ""))
    share = f"{100 * r['gbps'] / copy:.0f}%" if r.get("bytes") and copy and r["kernel"] != "copy" else ""
    if r["group"] == "dispatch":
        ours_ms = f"{r['seconds'] * 1e6:.2f} us"
        torch_ms = f"{t['seconds'] * 1e6:.2f} us" if t else "-"
    else:
        ours_ms = f"{r['seconds'] * 1e3:.4f}"
        torch_ms = f"{t['seconds'] * 1e3:.4f}" if t else "-"
    ratio = f"{t['seconds'] / r['seconds']:.2f}x" if t and r["seconds"] > 0 else "-"
    tflops = f"{r['tflops']:.1f}" if r.get("flops") else ""
    gbps = f"{r['gbps']:.0f}" if r.get("bytes") else ""
    lines.append(f"| {r['kernel']} | {r['shape']} | {r['dtype']} | {ours_ms} | {tflops} | {gbps} | {share} | "
                 f"{torch_ms} | {rate(t) if t else '-'} | {ratio} |")
notes = sorted({f"{t['kernel']}: {t['note']}" for t in torch if t.get("note")})
if notes:
    lines += ["", "torch records: " + "; ".join(notes) + "."]
text = "\n".join(lines) + "\n"
open(sys.argv[3], "w").write(text)
print(text)
PY

# 5. the gpu helper's steps, where built (its own suites with the tensor-core cases, and
# bench_nn_gpu's matmul tile sweep): into extra.txt, within its own time limit.
bench_gpu=$build/tests/nn/gpu/bench_nn_gpu
if [[ -x $bench_gpu ]] || ls "$build"/tests/nn/gpu/test_nn_gpu* >/dev/null 2>&1; then
    start=$SECONDS
    timeout "$limit_extra" bash -c '
        build=$1
        for t in "$build"/tests/nn/gpu/test_nn_gpu*; do
            [[ -x $t && -f $t ]] || continue
            TAPEVM_VULKAN_VALIDATION=0 "$t" >/tmp/nn_gpu_suite.log 2>&1
            echo "$(basename "$t"): exit $? ($(tail -n 3 /tmp/nn_gpu_suite.log | tr "\n" " "))"
        done
        bench=$build/tests/nn/gpu/bench_nn_gpu
        [[ -x $bench ]] || exit 0
        "$bench" --json
        for tile in 128x128x8 128x128x16 128x128x32 64x64x16 128x64x16 64x128x16; do
            printf "f32 tile %s: " "$tile"
            TAPEVM_NN_MATMUL_TILE=$tile "$bench" --filter "cube f32->f32 4096x4096x4096" --reps 3 | grep matmul || echo failed
        done
        for tile in 128x128x32x2 128x128x16x2 64x128x32x1 128x64x32x4 128x128x64x2; do
            printf "f16 tensor-core tile %s: " "$tile"
            TAPEVM_NN_COOPMAT_TILE=$tile "$bench" --filter "cube f16->f32 4096x4096x4096" --reps 3 | grep matmul || echo failed
        done
    ' _ "$build" >"$out/extra.txt" 2>&1
    echo "extra (gpu helper's suites and bench_nn_gpu): exit $? ($((SECONDS - start)) s)"
    grep -E "exit|tile" "$out/extra.txt" | head -20
fi
echo "nn_gpu: done in $((SECONDS - start_all)) s; files in $out"
