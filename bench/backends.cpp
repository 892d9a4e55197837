#include "backends.hpp"

#include <string>

#include "tapevm/error.hpp"

// The build defines TAPEVM_BENCH_CPU, TAPEVM_BENCH_GPU and TAPEVM_BENCH_ADOLC (0 or 1) by what
// it found (bench/meson.build).
#if !defined(TAPEVM_BENCH_CPU) || !defined(TAPEVM_BENCH_GPU) || !defined(TAPEVM_BENCH_ADOLC)
#error "bench/meson.build defines TAPEVM_BENCH_CPU, TAPEVM_BENCH_GPU and TAPEVM_BENCH_ADOLC"
#endif

namespace tapevm::bench {
namespace {

#if TAPEVM_BENCH_CPU
constexpr auto cpu_factory = &make_cpu_runner;
#else
constexpr std::unique_ptr<Runner> (*cpu_factory)(const Problem&) = nullptr;
#endif
#if TAPEVM_BENCH_GPU
constexpr auto gpu_factory = &make_gpu_runner;
#else
constexpr std::unique_ptr<Runner> (*gpu_factory)(const Problem&) = nullptr;
#endif
#if TAPEVM_BENCH_ADOLC
constexpr auto adolc_factory = &make_adolc_runner;
#else
constexpr std::unique_ptr<Runner> (*adolc_factory)(const Problem&) = nullptr;
#endif

const BackendInfo all[] = {
    {"native-simd", "the workload's C++ template on xsimd batches, vectorised over points (primal)",
     &make_native_simd_runner, ""},
    {"native-scalar", "the workload's C++ template compiled for double/float, one point at a time (primal)",
     &make_native_scalar_runner, ""},
    {"cpu", "tapevm::cpu::Vm, the SIMD batch interpreter", cpu_factory,
     "not in this build (src/vm_cpu has no tapevm/cpu.hpp)"},
    {"gpu", "tapevm::gpu::Vm, device-resident buffers", gpu_factory,
     "not in this build (bench/backend_gpu.cpp is not written yet)"},
    {"reference", "tapevm::reference::Vm, the scalar oracle", &make_reference_runner, ""},
    {"adolc", "ADOL-C: taped once, jacobian()/gradient() per point (double only)", adolc_factory,
     "not in this build (ADOL-C, Debian's libadolc-dev, was not found)"},
};

}  // namespace

std::span<const BackendInfo> backends() { return all; }

const BackendInfo& backend(std::string_view name) {
    std::string known;
    for (const BackendInfo& info : all) {
        if (info.name == name) return info;
        known += (known.empty() ? "" : ", ") + std::string(info.name);
    }
    throw Error("unknown backend '" + std::string(name) + "' (known: " + known + ")");
}

}  // namespace tapevm::bench
