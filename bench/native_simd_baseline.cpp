// native-simd kernels for the compiler's baseline instruction set (sse2 on x86-64).
#include "native_simd_kernel.hpp"

namespace tapevm::bench {

NativeSimdKernels native_simd_baseline() {
    return native_simd_detail::kernels<xsimd::default_arch>(xsimd::default_arch::name());
}

}  // namespace tapevm::bench
