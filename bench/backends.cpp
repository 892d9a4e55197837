#include "backends.hpp"

#include <string>

#include "tapevm/error.hpp"

// The build defines TAPEVM_BENCH_ADOLC (0 or 1) by whether it found ADOL-C (bench/meson.build).
#if !defined(TAPEVM_BENCH_ADOLC)
#error "bench/meson.build defines TAPEVM_BENCH_ADOLC"
#endif

namespace tapevm::bench {
namespace {

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
    {"cpu", "tapevm::cpu::Vm, the SIMD batch interpreter", &make_cpu_runner, ""},
    {"gpu", "tapevm::gpu::Vm, device-resident buffers (compute only)", &make_gpu_runner, ""},
    {"gpu-e2e", "tapevm::gpu::Vm from host spans: uploads and downloads inside the clock",
     &make_gpu_end_to_end_runner, ""},
    {"compiled", "tapevm::gpu::Vm with the tape compiler (Engine::compiled), device-resident buffers",
     &make_compiled_runner, ""},
    {"compiled-e2e", "the compiled engine from host spans: uploads and downloads inside the clock",
     &make_compiled_end_to_end_runner, ""},
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
