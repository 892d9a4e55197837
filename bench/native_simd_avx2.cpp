// native-simd kernels for AVX2 + FMA (built with -mavx2 -mfma).
#include "native_simd_kernel.hpp"

namespace tapevm::bench {

NativeSimdKernels native_simd_avx2() { return native_simd_detail::kernels<xsimd::avx2>("avx2"); }

}  // namespace tapevm::bench
