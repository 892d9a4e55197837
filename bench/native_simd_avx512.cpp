// native-simd kernels for AVX-512 (F, DQ, BW, VL; built with those flags).
#include "native_simd_kernel.hpp"

namespace tapevm::bench {

NativeSimdKernels native_simd_avx512() { return native_simd_detail::kernels<xsimd::avx512bw>("avx512"); }

}  // namespace tapevm::bench
