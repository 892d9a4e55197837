#!/usr/bin/env bash
# bench/gpu_bench.sh BIN_DIR OUT_DIR: everything a GPU issue needs, in one call on the GPU machine.
#
# BIN_DIR holds a release build's programs (tapevm and the GPU test executables, copied flat) and
# lib/ with shared libraries the GPU machine lacks (libadolc). Run from the repository root after
# the Vulkan loader is unpacked (../shared/vulkan-loader/README.md). Steps, each logged to OUT_DIR:
#   1. tapevm devices, then the GPU tests (tests/gpu and the conformance suite's GPU executable),
#      test_gpu_modes again on the local, compact and compiled kernels, and the conformance
#      suite on compact and compiled kernels (step tests);
#   1b. the tape compiler's compile times per workload and mode, cold and from the disk cache,
#      then JAX's for the same functions, cold and from its persistent compilation cache, into
#      compile.txt (step compile);
#   1c. time to first result (issue 21): `tapevm bench --first-result` for ba, mlp16 and mlp in f32
#      and f64 at 2^16 points, a new Vm per record whose kernel builds in the background while its
#      first call runs on the interpreter: cold (empty tapevm cache, NVIDIA's shader cache off),
#      then warm (the kernels cached on disk by the cold run), into first.txt (step first);
#   2. tapevm bench: the tape compiler's kernels (compiled, compiled-e2e) and the GPU interpreter
#      (gpu, gpu-e2e) device-resident and with transfers, the CPU VM and the native baselines on
#      this machine's cores, f32 and f64, at 2^16, 2^20, 2^22 points for ba, rosenbrock16 and
#      trig16, and the ~1,100-instruction mlp16 and 15,825-instruction mlp tapes (step gpu, cpu);
#   3. JAX on the same points (bench/jax_bench.py), float32 and float64 (step jax);
#   4. (only when asked: TAPEVM_GPU_BENCH_STEPS=...,tune) the interpreter's variants side by side
#      (src/vm_gpu/tuning.hpp): each pipeline's statistics (registers, spills) in pipelines.txt,
#      then f32 at the largest batch for each TAPEVM_GPU_TUNE entry interpreter:workgroup:chunk[:ops]
#      (interpreter slots, compact or local; chunk 0 = the default size, which for local is up
#      to 2^22 lanes: no work buffer), all records in tune.json with their variant;
#   5. (only when asked: tune-compiled) the compiled kernels' variants: staging through shared
#      memory or not, workgroup sizes (TAPEVM_GPU_TUNE_COMPILED), and the fixed
#      cost of a call (small batches), into tune_compiled.json.
# bench/gpu_pack.sh BUILD .gpu makes BIN_DIR (.gpu/bin) and brings the loader.
# Few files come back from the GPU machine: OUT_DIR gets log.txt (everything printed), tests.txt
# (the test executables' output), compile.txt, first.txt, smi.csv and gpu.json, mlp.json, cpu.json, jax.json,
# tune.json, tune_compiled.json (bench records).
set -uo pipefail
bin=$1
out=$2
mkdir -p "$out"
export LD_LIBRARY_PATH=$bin/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
tapevm=$bin/tapevm
# When the loader finds no driver on its default paths, point it at NVIDIA's driver file.
if [[ -z ${VK_DRIVER_FILES:-} ]] && ! "$tapevm" devices >/dev/null 2>&1; then
    icd=$(find /usr/local/nvidia /usr/share/vulkan /etc/vulkan /usr/lib -maxdepth 6 -name 'nvidia_icd*.json' 2>/dev/null |
        head -1)
    echo "gpu_bench: no driver on the default paths; using VK_DRIVER_FILES=${icd:-<none found>}"
    [[ -n $icd ]] && export VK_DRIVER_FILES=$icd
fi
# TAPEVM_GPU_BENCH_STEPS picks steps (default "tests,compile,first,gpu,cpu,jax"; "tune" adds step 4,
# "tune-compiled" step 5).
steps=,${TAPEVM_GPU_BENCH_STEPS:-tests,compile,first,gpu,cpu,jax},
want() { [[ $steps == *,$1,* ]]; }
# TAPEVM_GPU_BENCH_POINTS=a,b,c runs other batch sizes (a quick check elsewhere: 256,1024).
points=${TAPEVM_GPU_BENCH_POINTS:-65536,1048576,4194304}
largest=${points##*,}

exec > >(tee "$out/log.txt") 2>&1
# The GPU's clocks, power and utilisation every 500 ms while this runs (the machine is shared:
# this shows whether a slow record met a throttled or busy device).
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,utilization.gpu,utilization.memory,temperature.gpu \
    --format=csv -lms 500 >"$out/smi.csv" 2>/dev/null &
smi=$!
trap 'kill $smi 2>/dev/null' EXIT
{
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>&1
    lscpu | grep -E "Model name|^CPU\(s\)" 2>&1
    "$tapevm" devices 2>&1
}

# 1. tests
"$tapevm" devices >/dev/null 2>&1 || VK_LOADER_DEBUG=error,driver "$tapevm" devices 2>&1 | tail -20
# TAPEVM_GPU_BENCH_TESTS="test_gpu_compiler ..." runs only those executables, without the variants.
for exe in "$bin"/test_gpu_* "$bin"/test_conformance_gpu; do
    want tests || break
    [[ -x $exe ]] || continue
    [[ -z ${TAPEVM_GPU_BENCH_TESTS:-} || " $TAPEVM_GPU_BENCH_TESTS " == *" $(basename "$exe") "* ]] || continue
    name=$(basename "$exe")
    start=$SECONDS
    echo "==> $name" >>"$out/tests.txt"
    "$exe" >>"$out/tests.txt" 2>&1
    status=$?
    echo "test $name: exit $status ($((SECONDS - start)) s)$([[ $status == 77 ]] && echo ' SKIPPED')"
done
# The same suites on other kernels (meson's gpu_modes_local, gpu_modes_compiled and
# conformance_gpu_compiled; on a GPU the default interpreter is local, so the compact kernels,
# lavapipe's default, run as a variant here): VARIABLE=VALUE EXECUTABLE.
run_variant() {
    [[ -x $bin/$2 ]] || return 0
    local start=$SECONDS
    echo "==> $2 ($1)" >>"$out/tests.txt"
    env "$1" TAPEVM_CACHE_DIR=/tmp/tapevm-test-cache "$bin/$2" >>"$out/tests.txt" 2>&1
    echo "test $2 ($1): exit $? ($((SECONDS - start)) s)"
}
if want tests && [[ -z ${TAPEVM_GPU_BENCH_TESTS:-} ]]; then
    run_variant TAPEVM_GPU_OP_SET=all test_gpu_modes
    run_variant TAPEVM_GPU_INTERPRETER=local test_gpu_modes
    run_variant TAPEVM_GPU_INTERPRETER=compact test_gpu_modes
    run_variant TAPEVM_GPU_INTERPRETER=compact test_conformance_gpu
    run_variant TAPEVM_TEST_GPU_ENGINE=compiled test_gpu_modes
    run_variant TAPEVM_TEST_GPU_ENGINE=compiled test_conformance_gpu
fi

# 1b. the tape compiler's compile times (step compile): for each workload's tape, every mode in
# f32 by `tapevm inspect --plan --compile` in a new process with an empty cache (cold: GLSL,
# glslang, the driver's pipeline; the first kernel of a process also pays glslang's start-up),
# then five times more in new processes with that cache (SPIR-V and the driver's pipeline cache on
# disk), into compile.txt. NVIDIA's driver keeps a shader cache of its own, which would make a
# kernel built earlier in this script "cold" for tapevm only: it is off here (__GL_SHADER_DISK_CACHE=0),
# so the disk-cache runs measure tapevm's caches (SPIR-V and VkPipelineCache) alone.
# An entry WORKLOAD:MODE times that mode only (mlp16:gradient: the ~1,000-instruction tape).
if want compile; then
    compile_entries=${TAPEVM_GPU_BENCH_COMPILE:-rosenbrock16 trig16 ba mlp16:gradient mlp16:forward}
    for entry in $compile_entries; do
        w=${entry%%:*}
        mode=()
        [[ $entry == *:* ]] && mode=(--mode "${entry#*:}")
        "$tapevm" bench --workload "$w" --write-tape "/tmp/$w.tape" >/dev/null 2>&1 || continue
        rm -rf /tmp/tapevm-compile-cache
        for run in cold disk-cache disk-cache disk-cache disk-cache disk-cache; do
            echo "== $entry f32, $run" >>"$out/compile.txt"
            start_ns=$(date +%s%N)
            __GL_SHADER_DISK_CACHE=0 TAPEVM_CACHE_DIR=/tmp/tapevm-compile-cache "$tapevm" inspect "/tmp/$w.tape" --plan \
                "${mode[@]}" --compile >>"$out/compile.txt" 2>&1
            echo "process: $((($(date +%s%N) - start_ns) / 1000000)) ms (start, device, compile, exit)" >>"$out/compile.txt"
        done
    done
    echo "compile: done ($(grep -c compiled "$out/compile.txt") kernels)"
    # JAX's compile time for the same functions (f32, 2^16 points), cold and from its persistent
    # compilation cache, each in a new process: BA's Jacobian, the others' gradients.
    for w in rosenbrock16 ba trig16 mlp16; do
        [[ " $compile_entries " == *" $w"[\ :]* ]] || continue
        "$tapevm" bench --workload $w --points 65536 --write-inputs "/tmp/$w.bin" >/dev/null 2>&1 || continue
        rm -rf /tmp/jax-compile-cache
        for run in cold disk-cache disk-cache disk-cache; do
            python3 bench/jax_bench.py --inputs "/tmp/$w.bin" --points 65536 --repeats 3 \
                --compilation-cache /tmp/jax-compile-cache 2>&1 >/dev/null | grep -o "compile .*" |
                sed "s/^/jax $w f32 $run: /" >>"$out/compile.txt"
        done
    done
fi

# 1c. time to first result (step first): each record a new Vm (Engine::compiled, CompileWait::background)
# in one process whose device is opened first; cold: an empty tapevm cache and NVIDIA's shader
# cache off, so every kernel (the interpreter's too) is compiled by the driver; warm: the second
# process finds the cold run's kernels on disk. JAX's compile times for the same tapes are
# compile.txt's (step compile).
if want first; then
    rm -rf /tmp/tapevm-first-cache
    for run in cold warm; do
        echo "== $run" >>"$out/first.txt"
        __GL_SHADER_DISK_CACHE=$([[ $run == cold ]] && echo 0 || echo 1) TAPEVM_CACHE_DIR=/tmp/tapevm-first-cache \
            "$tapevm" bench --first-result --workload ba,mlp16,mlp --precision f32,f64 --points 65536 \
            >>"$out/first.txt" 2>&1
    done
    cat "$out/first.txt"
fi

# 2. tapevm bench
run_bench() {  # NAME ARGS...
    local name=$1
    shift
    local start=$SECONDS
    echo "== $(date +%T) bench $name"
    "$tapevm" bench "$@" --json "$out/$name.json" 2>&1
    echo "bench $name: exit $? ($((SECONDS - start)) s)"
}
want gpu && run_bench gpu --workload ba,rosenbrock16,trig16 --backend compiled,gpu,compiled-e2e,gpu-e2e,native-simd \
    --precision f32,f64 --repeats 20 --threads 16 --points "$points"
want gpu && run_bench mlp --workload mlp16,mlp --backend compiled,gpu,native-simd --precision f32,f64 --repeats 20 \
    --threads 16 --points "${points%,*}"
want cpu && run_bench cpu --workload ba,rosenbrock16,trig16 --backend cpu,native-simd --precision f32,f64 --threads 1,16 \
    --points "$largest"

# 3. JAX, same points
for w in ba rosenbrock16 trig16 mlp16 mlp; do
    want jax || break
    n=$largest
    [[ $w == mlp* ]] && n=${points%,*} && n=${n##*,}
    "$tapevm" bench --workload $w --points $n --write-inputs "/tmp/$w.bin" >/dev/null 2>&1
    start=$SECONDS
    python3 bench/jax_bench.py --inputs "/tmp/$w.bin" --points "$(tr , '\n' <<<"$points" | awk -v n=$n '$1<=n' | paste -sd,)" \
        --precision all --json "/tmp/jax_$w.json" 2>&1
    echo "jax $w: exit $? ($((SECONDS - start)) s)"
done
python3 - "$out/jax.json" /tmp/jax_*.json <<'PY'
import json, sys
records = []
for path in sys.argv[2:]:
    try:
        records += json.load(open(path))
    except (OSError, ValueError) as error:
        print("jax records:", path, error)
json.dump(records, open(sys.argv[1], "w"), indent=1)
PY

# 4. variants of the interpreter
if want tune; then
    for interpreter in slots compact local local:all; do
        TAPEVM_GPU_PIPELINE_STATS=1 TAPEVM_GPU_INTERPRETER=${interpreter%:*} TAPEVM_GPU_OP_SET=${interpreter#*:} \
            "$tapevm" bench --workload ba,rosenbrock16,trig16 --backend gpu --precision f32,f64 --points 1024 \
            --repeats 1 2>&1 | grep "gpu pipeline" | sed "s/^/$interpreter  /" >>"$out/pipelines.txt"
    done
    # local:64:1048576 runs the local kernels in the compact kernels' chunks, to tell the home
    # storage's effect from the chunk size's.
    default_variants="compact:64:0 local:64:0 compact:64:0 local:64:0 local:32:0 local:128:0"
    default_variants+=" compact:128:0 local:64:1048576"
    for variant in ${TAPEVM_GPU_TUNE:-$default_variants}; do
        IFS=: read -r interpreter group chunk ops <<<"$variant"
        echo "== $(date +%T) $variant"
        [[ $chunk == 0 ]] && chunk=
        TAPEVM_GPU_INTERPRETER=$interpreter TAPEVM_GPU_WORKGROUP=$group TAPEVM_GPU_CHUNK_POINTS=$chunk \
            TAPEVM_GPU_OP_SET=${ops:-auto} \
            "$tapevm" bench --workload ba,rosenbrock16,trig16 --backend gpu --precision f32 --repeats 20 --threads 16 \
            --points "$largest" --json "/tmp/tune_$variant.json" 2>&1 | grep -E "^(ba|rosenbrock16|trig16) .* gpu " |
            sed "s/^/$variant  /"
    done
    # mlp needs more homes than TAPEVM_GPU_LOCAL_HOMES: local runs the compact kernels there.
    for interpreter in slots compact local; do
        TAPEVM_GPU_INTERPRETER=$interpreter "$tapevm" bench --workload mlp --backend gpu --precision f32 \
            --threads 16 --points 65536 --json "/tmp/tune_mlp_$interpreter.json" 2>&1 | grep -E "^mlp .* gpu " |
            sed "s/^/$interpreter  /"
    done
    python3 - "$out/tune.json" /tmp/tune_*.json <<'PY'
import json, os, sys
records = []
for path in sys.argv[2:]:
    for record in json.load(open(path)):
        record["variant"] = os.path.basename(path)[5:-5]
        records.append(record)
json.dump(records, open(sys.argv[1], "w"), indent=1)
PY
fi

# 5. variants of the tape compiler's kernels (step tune-compiled): each compiled pipeline's
# statistics (registers, spills) in pipelines.txt, then f32 at the largest batch for each
# TAPEVM_GPU_TUNE_COMPILED entry staging:workgroup (staging 1: inputs and results through shared
# memory, 0: one row per invocation), records in tune_compiled.json with their variant.
if want tune-compiled; then
    TAPEVM_GPU_PIPELINE_STATS=1 "$tapevm" bench --workload ba,rosenbrock16,trig16,mlp16 --backend compiled \
        --precision f32,f64 --points 1024 --repeats 1 2>&1 | grep "gpu pipeline" >>"$out/pipelines.txt"
    rm -f /tmp/tunec_*.json
    for variant in ${TAPEVM_GPU_TUNE_COMPILED:-1:64 0:64 1:64 0:64 1:128}; do
        IFS=: read -r staging group <<<"$variant"
        echo "== $(date +%T) compiled $variant"
        TAPEVM_GPU_COMPILE_STAGING=$staging TAPEVM_GPU_WORKGROUP=$group TAPEVM_CACHE_DIR=/tmp/tapevm-tune-cache "$tapevm" bench --workload ba,rosenbrock16,trig16,mlp16 \
            --backend compiled --precision f32 --repeats 20 --threads 16 --points "$largest" \
            --json "/tmp/tunec_$variant.json" 2>&1 | grep -E "^(ba|rosenbrock16|trig16|mlp16) .* compiled " |
            sed "s/^/$variant  /"
    done
    # The fixed cost of a call: small batches, compiled and interpreter.
    "$tapevm" bench --workload rosenbrock16,ba --backend compiled,gpu --precision f32 --repeats 50 --threads 16 \
        --points 64,4096 --json /tmp/tunec_small.json 2>&1 | grep -E "^(ba|rosenbrock16) .* (compiled|gpu) "
    python3 - "$out/tune_compiled.json" /tmp/tunec_*.json <<'PY'
import json, os, sys
records = []
for path in sys.argv[2:]:
    for record in json.load(open(path)):
        record["variant"] = os.path.basename(path)[6:-5]
        records.append(record)
json.dump(records, open(sys.argv[1], "w"), indent=1)
PY
fi
