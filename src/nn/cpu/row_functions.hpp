// The row primitives of the cpu kernels as a table of functions, one table per instruction
// set (row_kernels_impl.hpp has the bodies): row_functions() picks AVX2+FMA where the CPU has
// it, else the build's baseline; TAPEVM_CPU_ISA=sse2 forces the baseline (as for the CPU VM).
#pragma once

#include <cstddef>

namespace tapevm::nn::detail {

struct RowFunctions {
    std::size_t lanes;  // floats per SIMD register
    /// Largest value of x[0..n) (-inf for n = 0).
    float (*max)(const float* x, std::size_t n);
    /// Sum of x[0..n).
    float (*sum)(const float* x, std::size_t n);
    /// Sum of x[i] * y[i].
    float (*dot)(const float* x, const float* y, std::size_t n);
    /// y[i] = exp(x[i] - shift) (y may be x); returns the sum of the y[i].
    float (*exp_shifted)(const float* x, float shift, float* y, std::size_t n);
    /// y[i] *= factor.
    void (*scale)(float* y, float factor, std::size_t n);
    /// y[i] += a * x[i].
    void (*axpy)(float a, const float* x, float* y, std::size_t n);
    /// Sum of (x[i] - mean)^2.
    float (*squared_deviation)(const float* x, float mean, std::size_t n);
    /// y[i] = (x[i] - mean) * rstd * gamma[i] (+ beta[i] when beta is not null); y may be x.
    void (*normalize)(const float* x, float mean, float rstd, const float* gamma, const float* beta, float* y,
                      std::size_t n);
    /// dx[i] += y[i] * (dy[i] - dot).
    void (*softmax_backward)(const float* y, const float* dy, float dot, float* dx, std::size_t n);
};

/// The table for the build's baseline instruction set, and for AVX2 with FMA (x86-64 only;
/// call it only where the CPU has both).
const RowFunctions& row_functions_baseline();
const RowFunctions& row_functions_avx2();
/// The table this process uses (chosen once).
const RowFunctions& row_functions();

}  // namespace tapevm::nn::detail
