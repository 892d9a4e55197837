// The run-time choice of native-simd's instruction set.
#include <cstdlib>
#include <string>
#include <vector>

#include <xsimd/xsimd.hpp>

#include "native_simd.hpp"
#include "tapevm/error.hpp"

#ifndef TAPEVM_BENCH_X86_KERNELS
#error "bench/meson.build defines TAPEVM_BENCH_X86_KERNELS (1 when the avx2 and avx512 units are built)"
#endif

namespace tapevm::bench {

NativeSimdKernels native_simd_kernels() {
    std::vector<NativeSimdKernels> supported{native_simd_baseline()};
#if TAPEVM_BENCH_X86_KERNELS
    const auto available = xsimd::available_architectures();
    if (available.avx2 && available.fma3_avx2) supported.push_back(native_simd_avx2());
    if (available.avx512bw && available.avx512dq && available.avx512f)
        supported.push_back(native_simd_avx512());
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
