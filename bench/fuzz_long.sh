#!/usr/bin/env bash
# bench/fuzz_long.sh BUILD_FUZZ SECONDS [PROCESSES]: issue 24's long fuzzing runs on a machine
# with many cores (the GPU machine's host): every target of fuzz/ (README.md there) in
# PROCESSES libFuzzer processes (default: the cores / 6), each with its own seed and corpus
# folder, all at once for SECONDS, starting from the seeds and the regression inputs. Prints
# one line per process (executions, cov, ft, corpus, crashes) and a total per target; crashing
# inputs land in fuzz-artifacts/ under $OUT (else /tmp/fuzz_long), to become regression tests.
# TARGETS="csv ba" picks targets (default: all six).
set -uo pipefail
build=${1:?usage: bench/fuzz_long.sh BUILD_FUZZ SECONDS [PROCESSES]}
seconds=${2:?usage: bench/fuzz_long.sh BUILD_FUZZ SECONDS [PROCESSES]}
read -r -a targets <<<"${TARGETS:-tape csv bench_inputs ba kernel_cache safetensors}"
processes=${3:-$(($(nproc) / ${#targets[@]}))}
((processes >= 1)) || processes=1
out=${OUT:-/tmp/fuzz_long}
work=/tmp/fuzz_long_work
rm -rf "$work"
mkdir -p "$work" "$out/fuzz-artifacts"
for target in "${targets[@]}"; do
    dict=()
    [[ -f fuzz/$target.dict ]] && dict=(-dict="fuzz/$target.dict")
    # libFuzzer stops at a corpus folder that does not exist: only the targets' own.
    inputs=()
    for folder in "fuzz/corpus/$target" "tests/fuzz_regressions/$target"; do
        [[ -d $folder ]] && inputs+=("$folder")
    done
    for ((p = 1; p <= processes; ++p)); do
        mkdir -p "$work/$target-$p"
        UBSAN_OPTIONS=halt_on_error=1 "$build/fuzz/fuzz_$target" -max_total_time="$seconds" -seed="$p" \
            -print_final_stats=1 -artifact_prefix="$out/fuzz-artifacts/$target-" "${dict[@]}" \
            "$work/$target-$p" "${inputs[@]}" \
            >"$work/$target-$p.log" 2>&1 &
    done
done
wait
for target in "${targets[@]}"; do
    total=0
    for ((p = 1; p <= processes; ++p)); do
        log=$work/$target-$p.log
        runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
        last=$(grep -E '^#[0-9]+' "$log" | tail -1)
        crashes=$(grep -c -E 'ERROR: (AddressSanitizer|libFuzzer|UndefinedBehaviorSanitizer)|runtime error' "$log")
        echo "$target process $p: ${runs:-?} executions, crashes $crashes; last: $last"
        total=$((total + ${runs:-0}))
    done
    echo "$target: $total executions in $processes x $seconds s"
done
ls "$out/fuzz-artifacts" | head
