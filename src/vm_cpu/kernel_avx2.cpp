// The block interpreter (kernel.hpp) for avx2, compiled with its flags (meson.build).
#include "kernel.hpp"

namespace tapevm::cpu::detail {

template <class Real> KernelSet<Real> kernels_avx2() {
    return Kernel<xsimd::fma3<xsimd::avx2>, Real>::kernels();
}

template KernelSet<double> kernels_avx2<double>();
template KernelSet<float> kernels_avx2<float>();

}  // namespace tapevm::cpu::detail
