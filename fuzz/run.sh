#!/usr/bin/env bash
# fuzz/run.sh: runs one libFuzzer target of fuzz/ (README.md) for a fixed time over its seed
# corpus and its regression inputs, and fails when it finds a crash.
#
#   fuzz/run.sh BUILD TARGET SECONDS [--fresh] [LIBFUZZER-OPTIONS...]
#
# BUILD     a build folder configured with -Dfuzz=true (dev.sh's build-fuzz/), targets built
# TARGET    tape, csv, bench_inputs, ba, kernel_cache or safetensors
# SECONDS   libFuzzer's -max_total_time
# --fresh   start from the seeds alone (dev.sh does), instead of resuming what earlier runs
#           found
#
# libFuzzer first runs every file of tests/fuzz_regressions/TARGET/ and fuzz/corpus/TARGET/
# (read only), then mutates with -seed=1 unless the options give another, using the format's
# words from fuzz/TARGET.dict where there is one. Inputs that reach new code go to
# BUILD/fuzz-corpus/TARGET/, which later runs resume from; a crashing input is saved as
# BUILD/fuzz-artifacts/TARGET-crash-* (and the exit status is non-zero). The output goes to
# BUILD/fuzz-logs/TARGET.log; the last line printed sums it up: executions, time, coverage
# (libFuzzer's cov: code edges, ft: features) and corpus size.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
readonly ROOT

if (($# < 3)); then
    sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2
    exit 2
fi
build=$(cd "$1" && pwd)
target=$2
seconds=$3
shift 3
fresh=false
if [[ ${1:-} == --fresh ]]; then
    fresh=true
    shift
fi

program=$build/fuzz/fuzz_$target
[[ -x $program ]] || {
    printf 'fuzz/run.sh: %s not built (ninja -C %s fuzz-targets)\n' "$program" "$build" >&2
    exit 2
}
work=$build/fuzz-corpus/$target
$fresh && rm -rf "$work"
mkdir -p "$work" "$build/fuzz-artifacts" "$build/fuzz-logs"
log=$build/fuzz-logs/$target.log

# Corpus folders: the first gets what libFuzzer finds; the others are only read.
folders=("$work")
for folder in "$ROOT/tests/fuzz_regressions/$target" "$ROOT/fuzz/corpus/$target"; do
    [[ -d $folder ]] && folders+=("$folder")
done

# The format's words (fuzz/TARGET.dict), where there is a dictionary.
dictionary=()
[[ -f $ROOT/fuzz/$target.dict ]] && dictionary=(-dict="$ROOT/fuzz/$target.dict")

status=0
# Exit status 1 for every finding (libFuzzer's default 77 reads as "skipped" to Meson).
UBSAN_OPTIONS=print_stacktrace=1 "$program" "${folders[@]}" "${dictionary[@]}" -seed=1 \
    -max_total_time="$seconds" -timeout=10 -error_exitcode=1 -timeout_exitcode=1 -print_final_stats=1 \
    -artifact_prefix="$build/fuzz-artifacts/$target-" "$@" >"$log" 2>&1 || status=$?

if ((status != 0)); then
    tail -n 60 "$log"
    printf 'fuzz/run.sh: fuzz_%s failed (exit status %d); the input is under %s/fuzz-artifacts/, the log %s\n' \
        "$target" "$status" "$build" "$log" >&2
    exit "$status"
fi
python3 - "$log" "$target" <<'EOF'
import re, sys
text = open(sys.argv[1], errors="replace").read()
stats = dict(re.findall(r"stat::(\w+):\s+(\d+)", text))
done = re.findall(r"Done (\d+) runs in (\d+) second", text)
progress = re.findall(r"cov: (\d+) ft: (\d+) corp: (\d+)/", text)
cov, ft, corpus = progress[-1] if progress else ("?", "?", "?")
runs, seconds = done[-1] if done else (stats.get("number_of_executed_units", "?"), "?")
print(f"fuzz_{sys.argv[2]}: {runs} executions in {seconds} s, cov {cov}, ft {ft}, corpus {corpus} inputs, "
      f"peak RSS {stats.get('peak_rss_mb', '?')} MB, no crash")
EOF
