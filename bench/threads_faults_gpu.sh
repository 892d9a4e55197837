#!/usr/bin/env bash
# bench/threads_faults_gpu.sh: issue 24 items 3 and 4 on a real GPU (the suites run on lavapipe
# in CI): the fault-injection sweeps (tests/faults) and the concurrency suites that use the GPU
# (tests/concurrency), on NVIDIA's driver, whose pipeline counts, allocations and compiled
# kernels differ from lavapipe's.
#
#   bench/threads_faults_gpu.sh pack BUILD_DIR PACK_DIR   here: copies the four executables of a
#       release build into PACK_DIR/threads_faults.tar.xz (beside what bench/gpu_pack.sh puts
#       there: the Vulkan loader packages and bin/ with bin/lib/).
#   bench/threads_faults_gpu.sh run PACK_DIR OUT_DIR     on the GPU machine, after gpu_pack's
#       loader is unpacked: runs each suite, its output in OUT_DIR/<suite>.txt, and writes
#       OUT_DIR/summary.txt (one line per suite: exit status, seconds, doctest's totals, and the
#       sweeps' "faults swept/injected" lines). Exit status 0 when every suite passed.
set -uo pipefail
suites=(test_faults_gpu test_faults_nn test_concurrency_gpu test_concurrency_nn)
case ${1:-} in
    pack)
        [[ $# -eq 3 ]] || { echo "usage: $0 pack BUILD_DIR PACK_DIR" >&2; exit 2; }
        build=$2 pack=$3
        staging=$(mktemp -d)
        mkdir -p "$staging/threads_faults" "$pack"
        for suite in "${suites[@]}"; do
            exe=$(find "$build/tests/faults" "$build/tests/concurrency" -maxdepth 1 -name "$suite" -type f | head -1)
            [[ -n $exe ]] || { echo "$0: $suite is not built in $build" >&2; exit 1; }
            cp "$exe" "$staging/threads_faults/"
        done
        strip --strip-unneeded "$staging"/threads_faults/* 2>/dev/null || true
        tar -cJf "$pack/threads_faults.tar.xz" -C "$staging" threads_faults
        rm -rf "$staging"
        ls -l "$pack/threads_faults.tar.xz"
        ;;
    run)
        [[ $# -eq 3 ]] || { echo "usage: $0 run PACK_DIR OUT_DIR" >&2; exit 2; }
        pack=$2 out=$3
        mkdir -p "$out"
        tar -xJf "$pack/threads_faults.tar.xz" -C "$pack"
        [[ -d $pack/bin/lib ]] && export LD_LIBRARY_PATH=$pack/bin/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
        if [[ -z ${VK_DRIVER_FILES:-} ]]; then
            icd=$(find /usr/local/nvidia /usr/share/vulkan /etc/vulkan /usr/lib -maxdepth 6 -name 'nvidia_icd*.json' \
                2>/dev/null | head -1)
            [[ -n $icd ]] && export VK_DRIVER_FILES=$icd
        fi
        # The compiled kernels' disk cache of these runs, not the user's.
        export TAPEVM_CACHE_DIR=$out/cache
        status=0
        : >"$out/summary.txt"
        for suite in "${suites[@]}"; do
            start=$SECONDS
            "$pack/threads_faults/$suite" >"$out/$suite.txt" 2>&1
            code=$?
            ((code == 0)) || status=1
            {
                echo "$suite: exit $code, $((SECONDS - start)) s, $(grep -E '^\[doctest\] (test cases|assertions)' "$out/$suite.txt" | tr -s ' ' | paste -sd ';')"
                grep -E 'faults (swept|injected|ending)|known failure' "$out/$suite.txt" | sed 's/^/    /'
            } >>"$out/summary.txt"
        done
        cat "$out/summary.txt"
        exit $status
        ;;
    *)
        sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'
        exit 2
        ;;
esac
