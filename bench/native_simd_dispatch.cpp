// The run-time choice of native-simd's instruction set: the CPU VM's own detection
// (tapevm::cpu::supported_isas: CPUID and the OS's saved register state, the same sets the CPU
// VM may pick), so the baseline and the VM it is compared with agree on what this machine runs.
#include <cstdlib>
#include <string>
#include <vector>

#include "native_simd.hpp"
#include "tapevm/cpu.hpp"
#include "tapevm/error.hpp"

#ifndef TAPEVM_BENCH_X86_KERNELS
#error "bench/meson.build defines TAPEVM_BENCH_X86_KERNELS (1 when the avx2 and avx512 units are built)"
#endif

namespace tapevm::bench {

NativeSimdKernels native_simd_kernels() {
    std::vector<NativeSimdKernels> supported{native_simd_baseline()};
#if TAPEVM_BENCH_X86_KERNELS
    for (const cpu::Isa isa : cpu::supported_isas()) {  // narrowest first, as `supported`
        if (isa == cpu::Isa::avx2) supported.push_back(native_simd_avx2());
        if (isa == cpu::Isa::avx512) supported.push_back(native_simd_avx512());
    }
#endif
    const char* forced = std::getenv("TAPEVM_CPU_ISA");
    if (forced == nullptr || *forced == '\0' || std::string_view(forced) == "automatic")
        return supported.back();
    std::string names;
    for (const NativeSimdKernels& kernels : supported) {
        if (kernels.isa == forced) return kernels;
        names += (names.empty() ? "" : ", ") + std::string(kernels.isa);
    }
    throw Unsupported("TAPEVM_CPU_ISA=" + std::string(forced) + ": not supported here (supported: " + names +
                      ")");
}

}  // namespace tapevm::bench
