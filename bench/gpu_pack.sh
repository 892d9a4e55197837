#!/usr/bin/env bash
# bench/gpu_pack.sh BUILD_DIR PACK_DIR: packs a release build for the GPU machine.
#
# PACK_DIR (an ignored folder of the checkout, e.g. .gpu) gets the Vulkan loader package
# (../shared/vulkan-loader, unpacked there with `for f in PACK_DIR/*.deb; do dpkg -x $f /; done;
# ldconfig`; Debian's libglvnd packages too) and bin.tar.xz, which unpacks (`tar xJf PACK_DIR/bin.tar.xz -C PACK_DIR`) into bin/:
# tapevm and tapevm-bench (which `tapevm bench` runs from the same folder), the GPU test executables and the conformance suite's GPU executable (their SPIR-V is
# embedded, the tape compiler's GLSL library too: nothing else of the checkout is read at run
# time), and bin/lib/ with the shared libraries the GPU machine lacks (ADOL-C). Compressed, as
# the device tool carries at most 64 MiB (each program links glslang statically, ~10 MB).
# bench/gpu_bench.sh PACK_DIR/bin OUT then runs every GPU measurement.
set -euo pipefail
if [[ $# -ne 2 || ! -x $1/src/cli/tapevm ]]; then
    echo "usage: bench/gpu_pack.sh BUILD_DIR PACK_DIR (BUILD_DIR: a built release folder)" >&2
    exit 2
fi
build=$1
pack=$2
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
loader_dir=${TAPEVM_VULKAN_LOADER_DIR:-$root/../shared/vulkan-loader}
rm -rf "$pack/bin"
mkdir -p "$pack/bin/lib"
cp "$loader_dir"/*.deb "$pack/"
# NVIDIA's Vulkan driver (libGLX_nvidia.so.0) needs libglvnd's libraries; without them the
# loader reports ErrorIncompatibleDriver. Fetched from Debian's archive once (the set
# ../.library/device/README.md names for GL and Vulkan).
for package in libglvnd0 libegl1 libopengl0 libgl1 libglx0 libgles2; do
    ls "$pack"/${package}_*.deb >/dev/null 2>&1 && continue
    (cd "$pack" && apt-get download "$package") || echo "gpu_pack: could not download $package" >&2
done
cp "$build/src/cli/tapevm" "$pack/bin/"
# `tapevm bench` and `tapevm adbench` run tapevm-bench from tapevm's folder (built with -Dbench).
[[ -x $build/src/cli/tapevm-bench ]] && cp "$build/src/cli/tapevm-bench" "$pack/bin/"
for exe in "$build"/tests/gpu/test_gpu_* "$build"/tests/conformance/test_conformance_gpu; do
    [[ -x $exe && -f $exe ]] && cp "$exe" "$pack/bin/"
done
# Shared libraries outside the base system that the programs link (ADOL-C and what it needs).
ldd "$pack"/bin/tapevm* "$pack"/bin/test_* 2>/dev/null | awk '/=> \// {print $3}' | sort -u | while read -r library; do
    case $(basename "$library") in
        libc.so* | libm.so* | libstdc++.so* | libgcc_s.so* | ld-linux* | libdl.so* | libpthread.so*) ;;
        libvulkan.so*) ;;  # from the loader package
        *) cp -L "$library" "$pack/bin/lib/" ;;
    esac
done
strip --strip-unneeded "$pack"/bin/tapevm* "$pack"/bin/test_* 2>/dev/null || true
ls "$pack/bin" "$pack/bin/lib"
tar -cJf "$pack/bin.tar.xz" -C "$pack" bin
rm -rf "$pack/bin"
du -sh "$pack"
