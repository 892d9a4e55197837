#!/usr/bin/env bash
# bench/nn_fresh_bench.sh [GROUPS] [DTYPES]: on the GPU machine, each (dtype, group) of
# `tapevm bench-nn` in a process of its own, twice, then all of them in one process as
# bench/nn_gpu.sh runs them, with nvidia-smi's clock/power/utilization log beside.
# Why: on an H200 (2026-11-26) one bench-nn process over several groups and dtypes timed the
# later records up to 4 times slower than a fresh process does, same code: bf16 attention
# 7.3 ms as the last dtype of one process, 1.9 ms in its own; gelu f16 0.42-0.54 ms after
# copy, attention and rows, 0.11 ms alone; gelu f32 0.09-0.28 ms depending on what ran before.
# So per-dtype comparisons from one process (bench/nn_gpu.sh) mislead; compare fresh ones.
# Here first: bash bench/nn_gpu.sh --pack build (and, optional, a stripped older tapevm as
# .gpu/tapevm_base.xz: it runs interleaved, for before/after figures on the same machine).
# Device call (carry [".gpu", ".gpulibs"]): bash bench/nn_fresh_bench.sh
# Defaults: GROUPS "attention rows gelu", DTYPES "f32 f16 bf16". Output: $OUT/fresh.txt, $OUT/dmon.txt.
set -uo pipefail
groups=${1:-attention rows gelu}
dtypes=${2:-f32 f16 bf16}
for f in .gpu/*.deb .gpulibs/*.deb; do [[ -f $f ]] && dpkg -x "$f" /; done
ldconfig
rm -rf .gpu/nn && tar xJf .gpu/nn.tar.xz -C .gpu || exit 1
export LD_LIBRARY_PATH=$PWD/.gpu/nn/lib
T=.gpu/nn/src/cli/tapevm
B=""
if [[ -f .gpu/tapevm_base.xz ]]; then xz -dc .gpu/tapevm_base.xz > /tmp/tapevm_base && chmod +x /tmp/tapevm_base && B=/tmp/tapevm_base; fi
out=${OUT:-/tmp/nn_fresh}; mkdir -p "$out"
nvidia-smi dmon -s puc -d 1 > "$out/dmon.txt" 2>&1 &
dmon=$!
bench() {  # label, binary, bench-nn arguments: the table rows only
    local label=$1 bin=$2; shift 2
    echo "=== $(date +%T) $label: $*"
    timeout 60 "$bin" bench-nn --device gpu --repeats 5 "$@" 2>/dev/null |
        grep -vE '^(bench-nn|nn kernels|kernel |  )' | grep -v '^\s*$' | cut -c1-100
}
{
for rep in 1 2; do
    for dt in $dtypes; do
        for group in $groups; do
            bench "new rep $rep" "$T" --dtype "$dt" --only "$group"
            [[ -n $B ]] && bench "base rep $rep" "$B" --dtype "$dt" --only "$group"
        done
    done
done
all_groups=$(echo $groups | tr ' ' ,)
all_dtypes=$(echo $dtypes | tr ' ' ,)
bench "new, one process" "$T" --dtype "$all_dtypes" --only "$all_groups"
} > "$out/fresh.txt" 2>&1
kill $dmon 2>/dev/null
cat "$out/fresh.txt"
