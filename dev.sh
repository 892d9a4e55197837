#!/usr/bin/env bash
# dev.sh: from a fresh Debian 12 machine to a built and checked tapevm, in one command.
#
#   ./dev.sh demo [ARGS...]   install what is missing, build build/, run `tapevm demo ARGS...`
#   ./dev.sh test             install what is missing, then every check below; exit status 0
#                             only when all of them pass
#   ./dev.sh deps             only install what is missing
#
# `test` runs, in order, continuing past a failure so that one run reports everything:
#   0. format     every tracked C++ file as .clang-format lays it out (clang-format-14)
#   1. release    build/ with g++ (warnings are errors), meson test
#   2. sanitizers build-asan/ with clang++ 14, AddressSanitizer + UndefinedBehaviorSanitizer,
#                 the same suite less suite shader_variants (run_tests_sanitized); the CPU VM's
#                 kernels only for the instruction sets this machine runs (MACHINE_ISAS), as
#                 in steps 4, 6 and 7
#   3. installed  build/ installed into a staging folder; tests/consumer_pkgconfig built
#                 against it through pkg-config and run
#   4. subproject tests/consumer_subproject built with tapevm as a Meson subproject and run
#   5. fuzz       build-fuzz/ with clang++ 14 and -Dfuzz=true (libFuzzer + ASan + UBSan), then
#                 each target of fuzz/ for FUZZ_SECONDS (two at a time) over its seed corpus and
#                 its regression inputs (tests/fuzz_regressions/): a crash fails it (fuzz/README.md)
#   6. CPU only   build-cpu/ with g++ and the optional parts off (-Dgpu=disabled -Dnn=disabled
#                 -Dbench=disabled: what a machine with only a compiler, Meson, doctest and
#                 xsimd builds): the libraries, tapevm and a few suites (CPU_ONLY_TESTS: the
#                 conformance suite on the reference and CPU VMs, the CLI, and test_unsupported,
#                 which checks that the parts left out throw tapevm::Unsupported); the other
#                 core suites ran in step 1 on the same code
#   7. tsan       build-tsan/ with clang++ 14 and ThreadSanitizer (at -O0: it compiles in a
#                 fraction of -O2's time), only the executables of suite concurrency (alias target
#                 concurrency-tests and what they link), then that suite with the suppressions
#                 of tests/concurrency/tsan.supp (the Vulkan loader, validation layer and
#                 lavapipe): a data race fails it (docs/THREADS.md)
# and ends with one line "N passed, M failed": N and M count Meson tests of steps 1, 2, 6 and 7
# plus one per consumer, one per fuzz target and one for the format check; a build that fails
# counts as one failure.
#
# Running it again is fast: configured build folders are reused (ninja re-runs Meson when a
# meson.build changes); a folder is set up again only when its compiler, options or the Meson
# version differ from what dev.sh recorded in it (dev-sh-setup.txt).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
readonly ROOT
readonly BUILD=$ROOT/build
readonly BUILD_ASAN=$ROOT/build-asan
readonly BUILD_FUZZ=$ROOT/build-fuzz
readonly BUILD_TSAN=$ROOT/build-tsan
readonly BUILD_CPU=$ROOT/build-cpu

# What building and running everything needs (Vulkan, glslang and xsimd for the GPU and CPU
# VMs; mesa-vulkan-drivers is lavapipe, the Vulkan device of machines without a GPU, and
# vulkan-validationlayers checks every Vulkan call in the tests; cmake is how Meson finds
# Debian's doctest; libadolc-dev is ADOL-C, a peer the benchmark runs side by side; the nn
# layer's CPU matmul is OpenBLAS, its safetensors header JSON (and the benchmark's) nlohmann-json, and
# bench/plot_loss.py draws training curves with matplotlib; xxHash hashes the kernel cache's entries; Ceres
# Solver is what the Ceres adapter (src/ceres/) plugs into).
readonly PACKAGES=(meson ninja-build g++ pkg-config cmake python3 libvulkan-dev glslang-dev glslang-tools
                   doctest-dev libxsimd-dev spirv-tools mesa-vulkan-drivers vulkan-validationlayers
                   vulkan-tools libadolc-dev libopenblas-dev nlohmann-json3-dev python3-matplotlib
                   libxxhash-dev libceres-dev libcolpack-dev ccache)
# What the sanitizer build needs on top: clang 14 and its sanitizer run-time libraries.
readonly SANITIZER_PACKAGES=(clang-14 libclang-rt-14-dev)
# What the fuzz step needs on top: LLVM's libFuzzer (clang's -fsanitize=fuzzer links the
# copy in libclang-rt-14-dev; this package adds libFuzzer's own library and headers).
readonly FUZZ_PACKAGES=(libfuzzer-14-dev)
# What the format check needs: clang-format 14 (the layout is .clang-format's).
readonly FORMAT_PACKAGES=(clang-format-14)

# The instruction sets this machine runs (sse2, avx2 with fma, avx512 f/dq/bw/vl: what
# tapevm::cpu::supported_isas() checks). The release build (step 1) compiles the CPU VM's kernels
# for all three, as users get them; the check builds of steps 2, 4, 6 and 7 only for these
# (-Dcpu_isas): a kernel this machine cannot run tests nothing and costs minutes to compile.
machine_isas() {
    local flags isas=sse2
    flags=" $(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null) "
    if [[ $flags == *" avx2 "* && $flags == *" fma "* ]]; then
        isas+=,avx2
        if [[ $flags == *" avx512f "* && $flags == *" avx512dq "* && $flags == *" avx512bw "* &&
              $flags == *" avx512vl "* ]]; then
            isas+=,avx512
        fi
    fi
    printf '%s' "$isas"
}
MACHINE_ISAS=$(machine_isas)
readonly MACHINE_ISAS

# g++ through ccache, its cache in .ccache/ of this checkout: the CPU-only build (step 6)
# compiles the CPU VM's kernel units with exactly the release build's commands (Meson's are
# relative to the build folder, and the cache ignores which folder), so they come from the
# cache instead of costing minutes each; a second `./dev.sh test` reuses everything unchanged.
readonly RELEASE_CXX="ccache g++"
export CCACHE_DIR=${CCACHE_DIR:-$ROOT/.ccache} CCACHE_BASEDIR=$ROOT CCACHE_NOHASHDIR=true
export CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-4G}
readonly RELEASE_MESON_ARGS=(--buildtype=release -Dwerror=true -Dtests=true)
readonly SANITIZER_CXX=clang++-14
# -O2 with line tables only (what ASan's reports need; clang's last -g option wins): full
# debug info made each unit about 15% slower to compile (src/tape/reference.cpp: 17.2 s user
# against 15.0 s).
readonly SANITIZER_MESON_ARGS=(--buildtype=debugoptimized -Dcpp_args=-gline-tables-only -Dwerror=true -Dtests=true
                               '-Db_sanitize=address,undefined' -Db_lundef=false "-Dcpu_isas=$MACHINE_ISAS")
# The fuzz targets bring their own instrumentation (fuzz/meson.build); nothing else is built.
readonly FUZZ_MESON_ARGS=(--buildtype=debugoptimized -Dwerror=true -Dtests=false -Dfuzz=true)
readonly FUZZ_TARGETS=(tape csv bench_inputs ba kernel_cache safetensors)
readonly FUZZ_SECONDS=20
# The ThreadSanitizer build: -O0 with line tables only, since the CPU VM's kernels (xsimd,
# three instruction sets) take minutes each to compile with optimisation under TSan.
readonly TSAN_MESON_ARGS=(--buildtype=plain -Doptimization=0 -Ddebug=false -Dcpp_args=-gline-tables-only
                          -Dwerror=true -Dtests=true -Db_sanitize=thread -Db_lundef=false "-Dcpu_isas=$MACHINE_ISAS")
# The CPU-only build: every optional part off by name, not left to `auto`, which would find the
# packages installed for the other steps. Release, as a user would build it.
readonly CPU_ONLY_MESON_ARGS=(--buildtype=release -Dwerror=true -Dtests=true -Dgpu=disabled -Dnn=disabled
                              -Dbench=disabled "-Dcpu_isas=$MACHINE_ISAS")
# Its Meson tests, and the targets they run (with tapevm itself).
readonly CPU_ONLY_TESTS=(unsupported cli conformance_reference conformance_cpu_sse2 conformance_cpu_avx2
                         conformance_cpu_avx512 cpu_vm)
readonly CPU_ONLY_TARGETS=(src/cli/tapevm tests/test_unsupported tests/test_cli
                           tests/conformance/test_conformance_reference tests/conformance/test_conformance_cpu
                           tests/cpu/test_cpu_vm)

log() { printf '\n==> %s\n' "$*"; }
die() {
    printf 'dev.sh: error: %s\n' "$*" >&2
    exit 1
}

usage() {
    sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
}

# ---------------------------------------------------------------------------------------------
# Debian packages

# Prints the packages among "$@" that are not installed.
missing_packages() {
    local package
    for package in "$@"; do
        [[ $(dpkg-query -W -f='${db:Status-Abbrev}' "$package" 2>/dev/null) == ii* ]] || echo "$package"
    done
}

# Installs the packages among "$@" that are missing: with apt-get when running as root,
# otherwise prints the command to run and stops.
ensure_packages() {
    command -v dpkg-query >/dev/null ||
        die "dpkg-query not found: dev.sh sets up Debian 12; elsewhere install the equivalents of: $*"
    local missing
    mapfile -t missing < <(missing_packages "$@")
    ((${#missing[@]} == 0)) && return 0
    if ((EUID != 0)); then
        printf 'dev.sh: these Debian packages are missing: %s\n' "${missing[*]}" >&2
        printf 'Install them, then run dev.sh again:\n\n' >&2
        printf '    sudo apt-get update && sudo apt-get install -y --no-install-recommends %s\n\n' \
            "${missing[*]}" >&2
        exit 1
    fi
    log "Installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update
    apt-get install -y --no-install-recommends "${missing[@]}"
}

# ---------------------------------------------------------------------------------------------
# Build folders

# setup_build DIR CXX SOURCE MESON_ARGS...: makes DIR a Meson build folder of SOURCE compiled
# with CXX and configured with MESON_ARGS. Does nothing when DIR already is one with exactly
# these settings; reconfigures when only the options changed; starts afresh otherwise (another
# compiler or Meson version, a folder dev.sh did not set up, a broken one).
setup_build() {
    local dir=$1 cxx=$2 source=$3
    shift 3
    local record=$dir/dev-sh-setup.txt
    local toolchain wanted
    toolchain="meson $(meson --version), CXX=$cxx"
    wanted=$(printf '%s\n' "$toolchain" "source $source" "$@")
    if [[ -f $dir/build.ninja && -f $record ]]; then
        [[ $(<"$record") == "$wanted" ]] && return 0
        if [[ $(head -n 2 "$record") == "$(head -n 2 <<<"$wanted")" ]]; then
            log "Reconfiguring $dir (options changed)"
            meson setup --reconfigure "$dir" "$source" "$@"
            printf '%s\n' "$wanted" >"$record"
            return 0
        fi
    fi
    if [[ -e $dir ]]; then
        log "Setting up $dir afresh ($toolchain)"
        rm -rf "$dir"
    else
        log "Setting up $dir ($toolchain)"
    fi
    CXX=$cxx meson setup "$dir" "$source" "$@"
    printf '%s\n' "$wanted" >"$record"
}

build_release() {
    setup_build "$BUILD" "$RELEASE_CXX" "$ROOT" "${RELEASE_MESON_ARGS[@]}"
    meson compile -C "$BUILD"
}

build_asan() {
    setup_build "$BUILD_ASAN" "$SANITIZER_CXX" "$ROOT" "${SANITIZER_MESON_ARGS[@]}"
    meson compile -C "$BUILD_ASAN"
}

# run_tests DIR [MESON-TEST-ARGS...]: the Meson test suite of DIR. Its results are read back
# from testlog.json.
run_tests() {
    rm -f "$1/meson-logs/testlog.json"
    meson test -C "$1" --print-errorlogs "${@:2}"
}

# Only the fuzz targets and what they compile (the tape library, each parser's sources).
build_fuzz() {
    setup_build "$BUILD_FUZZ" "$SANITIZER_CXX" "$ROOT" "${FUZZ_MESON_ARGS[@]}"
    meson compile -C "$BUILD_FUZZ" fuzz-targets
}

# The sanitizer run leaves out suite shader_variants: the GPU suites that run the host code of
# another test on other shaders (compiled kernels, the slots, local and op-set interpreters),
# which costs lavapipe's time (~28 minutes of test time on 2 cores) and shows ASan nothing new.
# The release run has them all. Timeouts are doubled: under ASan lavapipe's LLVM allocates
# through the sanitizer's malloc, and gpu_modes ran past its 600 s timeout (on this 2-core
# machine with a build beside it; the likely failure of the CI run of a1224d0, whose log named
# no test: the summary now names failed tests).
# TAPEVM_TEST_BENCH_CPU_ONLY=1: the benchmark harness's suite (bench) checks its CPU backends
# only; its GPU backends on lavapipe took 185 of its 190 s under ASan (their host code runs
# under ASan in the GPU suites; the release run checks them all).
run_tests_sanitized() {
    TAPEVM_TEST_BENCH_CPU_ONLY=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ASAN_OPTIONS=detect_leaks=1 \
        run_tests "$BUILD_ASAN" --no-suite shader_variants --timeout-multiplier 2
}

build_cpu_only() {
    setup_build "$BUILD_CPU" "$RELEASE_CXX" "$ROOT" "${CPU_ONLY_MESON_ARGS[@]}"
    meson compile -C "$BUILD_CPU" "${CPU_ONLY_TARGETS[@]}"
}

run_tests_cpu_only() {
    run_tests "$BUILD_CPU" --no-rebuild "${CPU_ONLY_TESTS[@]}"
}

# Only the concurrency suite's executables and what they link (the tape library, the CPU and
# GPU VMs, the interpreter's shaders): not the whole project.
build_tsan() {
    setup_build "$BUILD_TSAN" "$SANITIZER_CXX" "$ROOT" "${TSAN_MESON_ARGS[@]}"
    meson compile -C "$BUILD_TSAN" concurrency-tests
}

# TSan exits 66 from a test that raced, which fails it. The Vulkan validation layer stays off
# (it runs in steps 1 and 2): TSan sees only its reports about the layer's own threads.
run_tests_tsan() {
    TSAN_OPTIONS="suppressions=$ROOT/tests/concurrency/tsan.supp second_deadlock_stack=1" \
        TAPEVM_VULKAN_VALIDATION=0 run_tests "$BUILD_TSAN" --no-rebuild --suite concurrency
}

# Every tracked C++ file is laid out as .clang-format says (subprojects/ aside, and
# shaders/push_constants.h, which GLSL includes too). A file that is not prints clang-format's
# diagnostics; `clang-format-14 -i FILE` fixes it.
check_format() {
    local files
    mapfile -t files < <(git -C "$ROOT" ls-files '*.cpp' '*.hpp' '*.h' '*.inc' |
        grep -v -e '^subprojects/' -e '^shaders/push_constants\.h$')
    ((${#files[@]} > 0)) || die "no C++ files found by git ls-files in $ROOT"
    (cd "$ROOT" && clang-format-14 --dry-run --Werror "${files[@]}")
}

# Installs build/ into a staging folder and builds and runs tests/consumer_pkgconfig against
# it. The installed tapevm.pc names the real prefix (/usr/local); a copy of it with the
# staging folder's prefix is what the consumer finds. (PKG_CONFIG_SYSROOT_DIR would also put
# the staging folder in front of the absolute paths of the system's static glslang libraries.)
check_installed_tree() {
    local work=$BUILD/consumer-pkgconfig
    local stage=$work/stage
    rm -rf "$work"
    meson install -C "$BUILD" --destdir "$stage" --quiet
    local pc_file
    pc_file=$(find "$stage" -name tapevm.pc -print -quit)
    [[ -n $pc_file ]] || die "meson install wrote no tapevm.pc under $stage"
    local prefix
    prefix=$(sed -n 's/^prefix=//p' "$pc_file")
    [[ -n $prefix ]] || die "$pc_file names no prefix"
    mkdir -p "$work/pkgconfig"
    sed "s|^prefix=.*|prefix=$stage$prefix|" "$pc_file" >"$work/pkgconfig/tapevm.pc"
    PKG_CONFIG_PATH=$work/pkgconfig \
        CXX=$RELEASE_CXX meson setup "$work/build" "$ROOT/tests/consumer_pkgconfig" --buildtype=release
    meson compile -C "$work/build"
    "$work/build/consumer"
}

# Builds and runs tests/consumer_subproject with this checkout as its subprojects/tapevm (a
# copy of the consumer, with a link to the checkout, under build/). --force-fallback-for makes
# sure an installed tapevm never stands in for the subproject.
check_subproject() {
    local work=$BUILD/consumer-subproject
    rm -rf "$work/source"
    mkdir -p "$work"
    cp -a "$ROOT/tests/consumer_subproject" "$work/source"
    ln -s "$ROOT" "$work/source/subprojects/tapevm"
    # The check is the subproject mechanism, not the kernels (step 1 builds and tests all of
    # them): the CPU VM's kernels for sse2 only, and no optimization (the kernel unit compiles
    # in a fraction of -O3's time; the consumer evaluates one small tape).
    setup_build "$work/build" "$RELEASE_CXX" "$work/source" --buildtype=plain --force-fallback-for=tapevm \
        "-Dtapevm:cpu_isas=sse2"
    meson compile -C "$work/build" consumer
    "$work/build/consumer"
}

# ---------------------------------------------------------------------------------------------
# Steps of `test` and their tally

passed=0
failed=0
report=()

# step NAME COMMAND...: runs COMMAND in a subshell with errexit and leaves its exit status in
# step_status. Always returns 0: called as an `if` or `&&` condition, bash would ignore errexit
# inside COMMAND, so callers test step_status instead.
step_status=0
step_seconds=0
step() {
    local name=$1 start=$SECONDS
    shift
    log "$name"
    set +e
    (
        set -e
        "$@"
    )
    step_status=$?
    set -e
    step_seconds=$((SECONDS - start))
    if ((step_status != 0)); then
        printf 'dev.sh: %s failed (exit status %d)\n' "$name" "$step_status" >&2
    fi
    return 0
}

# count_step NAME COMMAND...: a step that is one check.
count_step() {
    local name=$1
    step "$@"
    if ((step_status == 0)); then
        passed=$((passed + 1))
        report+=("$name: passed ($step_seconds s)")
    else
        failed=$((failed + 1))
        report+=("$name: FAILED ($step_seconds s)")
    fi
}

# count_steps_in_parallel FUNCTION ARG...: FUNCTION ARG for each ARG at once, each one check
# named by `FUNCTION ARG --name`; their output is printed after all end, one after another.
count_steps_in_parallel() {
    local function=$1 arg i start=$SECONDS
    shift
    local logs=() pids=() statuses=()
    for arg in "$@"; do
        logs+=("$(mktemp)")
        ( set -e; "$function" "$arg" ) >"${logs[-1]}" 2>&1 &
        pids+=($!)
    done
    for i in "${!pids[@]}"; do
        set +e
        wait "${pids[i]}"
        statuses+=($?)
        set -e
    done
    for i in "${!pids[@]}"; do
        arg=${*:i+1:1}
        log "$("$function" "$arg" --name)"
        cat "${logs[i]}"
        rm -f "${logs[i]}"
        if ((statuses[i] == 0)); then
            passed=$((passed + 1))
            report+=("$("$function" "$arg" --name): passed ($((SECONDS - start)) s, in parallel)")
        else
            failed=$((failed + 1))
            report+=("$("$function" "$arg" --name): FAILED ($((SECONDS - start)) s, in parallel)")
            printf 'dev.sh: %s failed (exit status %d)\n' "$("$function" "$arg" --name)" "${statuses[i]}" >&2
        fi
    done
}

# build_step NAME COMMAND...: a build. One failure when it fails; callers test step_status
# and skip the steps that need it.
build_step() {
    local name=$1
    step "$@"
    if ((step_status == 0)); then
        report+=("$name: built ($step_seconds s)")
    else
        failed=$((failed + 1))
        report+=("$name: FAILED ($step_seconds s), the steps that need it did not run")
    fi
}

# Prints "ok bad skipped names": the results in DIR/meson-logs/testlog.json, then the failed
# tests with their result and duration.
tally_meson_tests() {
    python3 - "$1/meson-logs/testlog.json" <<'EOF'
import json, sys
ok = bad = skipped = 0
names = []
try:
    with open(sys.argv[1]) as log:
        for line in log:
            if line.strip():
                test = json.loads(line)
                result = test["result"]
                if result in ("OK", "EXPECTEDFAIL"):
                    ok += 1
                elif result == "SKIP":
                    skipped += 1
                else:
                    bad += 1
                    names.append(f"{test['name']} ({result}, {test.get('duration', 0):.0f} s)")
except FileNotFoundError:
    pass
print(ok, bad, skipped, "; ".join(names))
EOF
}

# test_step NAME DIR COMMAND...: runs a Meson test suite and adds its results to the tally. A
# suite that fails without a failed test in its log (it did not get to run) is one failure.
test_step() {
    local name=$1 dir=$2 ok bad skipped which
    shift 2
    step "$name" "$@"
    read -r ok bad skipped which < <(tally_meson_tests "$dir")
    if ((step_status != 0 && bad == 0)); then bad=1; fi
    passed=$((passed + ok))
    failed=$((failed + bad))
    report+=("$name: $ok passed, $bad failed, $skipped skipped ($step_seconds s)")
    if [[ -n $which ]]; then report+=("  failed: $which"); fi
}

# fuzz_step TARGET [--name]: runs fuzz target TARGET for FUZZ_SECONDS from its seeds, or
# prints the step's name.
fuzz_step() {
    if [[ ${2:-} == --name ]]; then
        printf 'fuzz %s (%d s, fuzz/corpus/%s)' "$1" "$FUZZ_SECONDS" "$1"
        return 0
    fi
    "$ROOT/fuzz/run.sh" "$BUILD_FUZZ" "$1" "$FUZZ_SECONDS" --fresh
}

cmd_test() {
    ensure_packages "${PACKAGES[@]}" "${SANITIZER_PACKAGES[@]}" "${FUZZ_PACKAGES[@]}" "${FORMAT_PACKAGES[@]}"
    local start=$SECONDS release_built=false
    count_step "format (clang-format-14 --dry-run --Werror, .clang-format)" check_format
    build_step "release build (g++, build/)" build_release
    if ((step_status == 0)); then
        release_built=true
        test_step "release tests" "$BUILD" run_tests "$BUILD"
    fi
    build_step "sanitizer build (clang++ 14, ASan + UBSan, build-asan/)" build_asan
    if ((step_status == 0)); then
        test_step "sanitizer tests" "$BUILD_ASAN" run_tests_sanitized
    fi
    if $release_built; then
        count_step "installed tree (tests/consumer_pkgconfig through pkg-config)" check_installed_tree
    fi
    count_step "subproject (tests/consumer_subproject)" check_subproject
    build_step "fuzz build (clang++ 14, libFuzzer + ASan + UBSan, build-fuzz/)" build_fuzz
    if ((step_status == 0)); then
        # Two targets at a time, one per core (each libFuzzer run is one process).
        local i
        for ((i = 0; i < ${#FUZZ_TARGETS[@]}; i += 2)); do
            count_steps_in_parallel fuzz_step "${FUZZ_TARGETS[@]:i:2}"
        done
    fi
    build_step "CPU-only build (g++, gpu, nn and bench off, build-cpu/)" build_cpu_only
    if ((step_status == 0)); then
        test_step "CPU-only tests" "$BUILD_CPU" run_tests_cpu_only
    fi
    build_step "tsan build (clang++ 14, ThreadSanitizer, concurrency suite only, build-tsan/)" build_tsan
    if ((step_status == 0)); then
        test_step "tsan tests (suite concurrency)" "$BUILD_TSAN" run_tests_tsan
    fi

    log "Summary ($((SECONDS - start)) s)"
    printf '  %s\n' "${report[@]}"
    printf '%d passed, %d failed\n' "$passed" "$failed"
    ((failed == 0))
}

cmd_demo() {
    ensure_packages "${PACKAGES[@]}"
    build_release
    log "tapevm demo $*"
    "$BUILD/src/cli/tapevm" demo "$@"
}

main() {
    local command=${1:-}
    (($# > 0)) && shift
    case $command in
        demo) cmd_demo "$@" ;;
        test)
            (($# == 0)) || die "test takes no arguments"
            cmd_test
            ;;
        deps)
            (($# == 0)) || die "deps takes no arguments"
            ensure_packages "${PACKAGES[@]}" "${SANITIZER_PACKAGES[@]}" "${FUZZ_PACKAGES[@]}"
            ;;
        help | -h | --help) usage ;;
        *)
            usage >&2
            if [[ -n $command ]]; then
                printf "\ndev.sh: unknown command '%s'\n" "$command" >&2
            else
                printf '\ndev.sh: no command given\n' >&2
            fi
            exit 2
            ;;
    esac
}

main "$@"
