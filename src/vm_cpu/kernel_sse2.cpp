// The block interpreter (kernel.hpp) for sse2, compiled with its flags (meson.build).
#include "kernel.hpp"

namespace tapevm::cpu::detail {

template <class Real> KernelSet<Real> kernels_sse2() { return Kernel<xsimd::sse2, Real>::kernels(); }

template KernelSet<double> kernels_sse2<double>();
template KernelSet<float> kernels_sse2<float>();

}  // namespace tapevm::cpu::detail
