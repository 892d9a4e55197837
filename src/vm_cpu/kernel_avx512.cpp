// The block interpreter (kernel.hpp) for avx512, compiled with its flags (meson.build).
#include "kernel.hpp"

namespace tapevm::cpu::detail {

template <class Real> KernelSet<Real> kernels_avx512() { return Kernel<xsimd::avx512bw, Real>::kernels(); }

template KernelSet<double> kernels_avx512<double>();
template KernelSet<float> kernels_avx512<float>();

}  // namespace tapevm::cpu::detail
