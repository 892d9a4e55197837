// The row primitives compiled with -mavx2 -mfma (meson.build): xsimd's default batch here is
// 8 floats wide. Called only where the CPU has AVX2 and FMA (row_functions()).
#include "cpu/row_kernels_impl.hpp"

namespace tapevm::nn::detail {

const RowFunctions& row_functions_avx2() { return row_functions_here; }

}  // namespace tapevm::nn::detail
