// The native-simd baseline's kernels: a workload's primal (its C++ template on SimdReal,
// simd_real.hpp) for a range of points, one translation unit per instruction set
// (native_simd_<arch>.cpp, compiled with that set's flags) and the run-time choice of the
// widest one this CPU has (native_simd_dispatch.cpp). TAPEVM_CPU_ISA=sse2|avx2|avx512 narrows
// it, as for the CPU VM, so ratios compare like with like.
#pragma once

#include <cstddef>
#include <string_view>

#include "mlp.hpp"
#include "workloads.hpp"

namespace tapevm::bench {

/// Points in Real, row-major as Points holds them; outputs [points][n_outputs].
template <class Real> struct NativeData {
    const Real* inputs = nullptr;
    const Real* params = nullptr;
    Real* outputs = nullptr;
    /// The MLP workloads' weights in Real (Workload::mlp converted); null for the others.
    const BasicMlpModel<Real>* mlp = nullptr;
};

/// Evaluates the primal of points [begin, end).
template <class Real>
using NativeKernel = void (*)(WorkloadKind kind, const NativeData<Real>& data, std::size_t begin,
                              std::size_t end);

struct NativeSimdKernels {
    std::string_view isa;  // "sse2", "avx2", "avx512"
    NativeKernel<double> f64;
    NativeKernel<float> f32;
    std::size_t lanes_f64;  // doubles per batch
};

/// The widest kernels this CPU runs (or TAPEVM_CPU_ISA's; an unknown or unsupported value
/// throws tapevm::Unsupported naming the supported ones).
NativeSimdKernels native_simd_kernels();

/// native-scalar's kernel (native_scalar.cpp): the templates on Real, one point at a time.
template <class Real>
void native_scalar_primal(WorkloadKind kind, const NativeData<Real>& data, std::size_t begin,
                          std::size_t end);

// One per translation unit.
NativeSimdKernels native_simd_baseline();
NativeSimdKernels native_simd_avx2();
NativeSimdKernels native_simd_avx512();

}  // namespace tapevm::bench
