#!/usr/bin/env bash
# bench/ceres_gpu.sh: the Ceres adapter (src/ceres, issue 23 item 5) on a GPU machine.
#
#   bench/ceres_gpu.sh pack BUILD DIR   (here) copies BUILD/bench/tapevm-ceres-ba into DIR and
#                                       the shared libraries it needs that a bare machine may
#                                       lack (glog, gflags, SuiteSparse, CXSparse, BLAS/LAPACK)
#                                       into DIR/lib
#   bench/ceres_gpu.sh run DIR OUT      (on the GPU machine, from the repository root, after the
#                                       Vulkan loader is unpacked as for bench/gpu_bench.sh)
#                                       solves ba1 and ba3 with Ceres through the adapter on the
#                                       GPU and on the CPU and through AutoDiffCostFunction, at 1
#                                       thread and all cores; OUT/ceres.txt gets the tables.
# ba3 is read from ../shared/adbench/ba (ADBENCH_BA to change); ba1 from bench/data/adbench.
set -euo pipefail
case "${1:-}" in
pack)
    build=$2 dir=$3
    mkdir -p "$dir/lib"
    cp "$build/bench/tapevm-ceres-ba" "$dir/"
    ldd "$build/bench/tapevm-ceres-ba" | awk '/=> \// {print $3}' |
        grep -E 'glog|gflags|cholmod|spqr|cxsparse|suitesparse|amd|colamd|metis|lapack|blas|atlas|gfortran|quadmath|unwind|tbb' |
        while read -r lib; do cp -L "$lib" "$dir/lib/"; done
    ;;
run)
    dir=$2 out=$3
    mkdir -p "$out"
    export LD_LIBRARY_PATH="$dir/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    ba=${ADBENCH_BA:-../shared/adbench/ba}
    cores=$(nproc)
    {
        nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
        for file in bench/data/adbench/ba1_n49_m7776_p31843.txt "$ba/ba3_n161_m48126_p182072.txt"; do
            for threads in 1 "$cores"; do
                "$dir/tapevm-ceres-ba" "$file" --threads "$threads" --repeat 5 --device cpu
                "$dir/tapevm-ceres-ba" "$file" --threads "$threads" --repeat 5 --device gpu
            done
        done
    } 2>&1 | tee "$out/ceres.txt"
    ;;
*)
    echo "usage: bench/ceres_gpu.sh pack BUILD DIR | run DIR OUT" >&2
    exit 2
    ;;
esac
