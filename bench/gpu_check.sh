#!/usr/bin/env bash
# bench/gpu_check.sh BUILD_DIR: checks a tapevm build on a GPU machine, in one call.
#
# Run it from the repository root after the Vulkan loader is in place (see
# ../shared/vulkan-loader/README.md: `for f in .gpu/*.deb; do dpkg -x "$f" /; done; ldconfig`):
#   1. `tapevm devices`: what the loader sees and which device the GPU backend picks;
#   2. the GPU test executables (tests/gpu/test_gpu_* and the conformance suite's GPU
#      executable, when built), each on its own (they use the validation layer when it is
#      installed, and exit 77 = skipped when there is no Vulkan device);
# and prints one summary line per step and "N passed, M failed, K skipped". Exit status 0 only
# when nothing failed. The binaries embed their SPIR-V: nothing of this checkout is read at run
# time, so a build folder copied from another machine works.
set -uo pipefail

if [[ $# -ne 1 || ! -d $1 ]]; then
    echo "usage: bench/gpu_check.sh BUILD_DIR" >&2
    exit 2
fi
build=$1
passed=0
failed=0
skipped=0
summary=()

# When the loader finds no device with the default search path, try NVIDIA's driver file.
if [[ -z ${VK_DRIVER_FILES:-} && -f /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ]]; then
    if ! "$build/src/cli/tapevm" devices >/dev/null 2>&1; then
        export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
        echo "gpu_check: using VK_DRIVER_FILES=$VK_DRIVER_FILES"
    fi
fi

step() {  # step NAME COMMAND...: runs COMMAND, records pass (0), skip (77) or fail
    local name=$1
    shift
    echo
    echo "==> $name"
    local start=$SECONDS
    "$@"
    local status=$?
    local took=$((SECONDS - start))
    case $status in
        0) passed=$((passed + 1)); summary+=("ok       $name (${took}s)") ;;
        77) skipped=$((skipped + 1)); summary+=("SKIPPED  $name (${took}s)") ;;
        *) failed=$((failed + 1)); summary+=("FAILED   $name (status $status, ${took}s)") ;;
    esac
}

step "tapevm devices" "$build/src/cli/tapevm" devices
for exe in "$build"/tests/gpu/test_gpu_* "$build"/tests/conformance/test_conformance_gpu; do
    [[ -x $exe && -f $exe ]] || continue
    step "$(basename "$exe")" "$exe"
done

echo
echo "==> summary"
printf '  %s\n' "${summary[@]}"
echo "$passed passed, $failed failed, $skipped skipped"
[[ $failed -eq 0 ]]
