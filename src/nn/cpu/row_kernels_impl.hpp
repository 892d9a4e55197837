// The row primitives' bodies, written once on xsimd's default batch of the translation unit
// that includes this file: row_primitives.cpp (the build's baseline, SSE2 on x86-64) and
// row_primitives_avx2.cpp (compiled with -mavx2 -mfma). Everything here has internal linkage
// (an anonymous namespace), so the two instantiations never meet at link time.
//
// Sums keep several batch accumulators folded in a fixed order: a row gives the same bits on
// every call (for one instruction set).
#pragma once

#include <cmath>
#include <cstddef>
#include <limits>

#include <xsimd/xsimd.hpp>

#include "cpu/row_functions.hpp"

namespace tapevm::nn::detail {
namespace {

using Batch = xsimd::batch<float>;
constexpr std::size_t lanes = Batch::size;

float impl_max(const float* x, std::size_t n) {
    float best = -std::numeric_limits<float>::infinity();
    std::size_t i = 0;
    if (n >= lanes) {
        Batch m(best);
        for (; i + lanes <= n; i += lanes) m = xsimd::max(m, Batch::load_unaligned(x + i));
        alignas(64) float values[lanes];
        m.store_aligned(values);
        for (float value : values) best = value > best ? value : best;
    }
    for (; i < n; ++i) best = x[i] > best ? x[i] : best;
    return best;
}

float impl_sum(const float* x, std::size_t n) {
    Batch a(0.f), b(0.f), c(0.f), d(0.f);
    std::size_t i = 0;
    for (; i + 4 * lanes <= n; i += 4 * lanes) {
        a += Batch::load_unaligned(x + i);
        b += Batch::load_unaligned(x + i + lanes);
        c += Batch::load_unaligned(x + i + 2 * lanes);
        d += Batch::load_unaligned(x + i + 3 * lanes);
    }
    for (; i + lanes <= n; i += lanes) a += Batch::load_unaligned(x + i);
    float sum = xsimd::hadd((a + b) + (c + d));
    for (; i < n; ++i) sum += x[i];
    return sum;
}

float impl_dot(const float* x, const float* y, std::size_t n) {
    Batch a(0.f), b(0.f), c(0.f), d(0.f);
    std::size_t i = 0;
    for (; i + 4 * lanes <= n; i += 4 * lanes) {
        a = xsimd::fma(Batch::load_unaligned(x + i), Batch::load_unaligned(y + i), a);
        b = xsimd::fma(Batch::load_unaligned(x + i + lanes), Batch::load_unaligned(y + i + lanes), b);
        c = xsimd::fma(Batch::load_unaligned(x + i + 2 * lanes), Batch::load_unaligned(y + i + 2 * lanes), c);
        d = xsimd::fma(Batch::load_unaligned(x + i + 3 * lanes), Batch::load_unaligned(y + i + 3 * lanes), d);
    }
    for (; i + lanes <= n; i += lanes)
        a = xsimd::fma(Batch::load_unaligned(x + i), Batch::load_unaligned(y + i), a);
    float sum = xsimd::hadd((a + b) + (c + d));
    for (; i < n; ++i) sum += x[i] * y[i];
    return sum;
}

float impl_exp_shifted(const float* x, float shift, float* y, std::size_t n) {
    const Batch s(shift);
    Batch a(0.f), b(0.f);
    std::size_t i = 0;
    for (; i + 2 * lanes <= n; i += 2 * lanes) {
        const Batch e0 = xsimd::exp(Batch::load_unaligned(x + i) - s);
        const Batch e1 = xsimd::exp(Batch::load_unaligned(x + i + lanes) - s);
        e0.store_unaligned(y + i);
        e1.store_unaligned(y + i + lanes);
        a += e0;
        b += e1;
    }
    float sum = xsimd::hadd(a + b);
    for (; i < n; ++i) {
        y[i] = std::exp(x[i] - shift);
        sum += y[i];
    }
    return sum;
}

void impl_scale(float* y, float factor, std::size_t n) {
    const Batch f(factor);
    std::size_t i = 0;
    for (; i + lanes <= n; i += lanes) (Batch::load_unaligned(y + i) * f).store_unaligned(y + i);
    for (; i < n; ++i) y[i] *= factor;
}

void impl_axpy(float a, const float* x, float* y, std::size_t n) {
    const Batch f(a);
    std::size_t i = 0;
    for (; i + lanes <= n; i += lanes) {
        xsimd::fma(f, Batch::load_unaligned(x + i), Batch::load_unaligned(y + i)).store_unaligned(y + i);
    }
    for (; i < n; ++i) y[i] += a * x[i];
}

float impl_squared_deviation(const float* x, float mean, std::size_t n) {
    const Batch m(mean);
    Batch a(0.f), b(0.f);
    std::size_t i = 0;
    for (; i + 2 * lanes <= n; i += 2 * lanes) {
        const Batch d0 = Batch::load_unaligned(x + i) - m;
        const Batch d1 = Batch::load_unaligned(x + i + lanes) - m;
        a = xsimd::fma(d0, d0, a);
        b = xsimd::fma(d1, d1, b);
    }
    float sum = xsimd::hadd(a + b);
    for (; i < n; ++i) sum += (x[i] - mean) * (x[i] - mean);
    return sum;
}

void impl_normalize(const float* x, float mean, float rstd, const float* gamma, const float* beta, float* y,
                    std::size_t n) {
    const Batch m(mean), s(rstd);
    std::size_t i = 0;
    for (; i + lanes <= n; i += lanes) {
        Batch v = (Batch::load_unaligned(x + i) - m) * s * Batch::load_unaligned(gamma + i);
        if (beta != nullptr) v += Batch::load_unaligned(beta + i);
        v.store_unaligned(y + i);
    }
    for (; i < n; ++i) y[i] = (x[i] - mean) * rstd * gamma[i] + (beta != nullptr ? beta[i] : 0.f);
}

void impl_softmax_backward(const float* y, const float* dy, float dot, float* dx, std::size_t n) {
    const Batch d(dot);
    std::size_t i = 0;
    for (; i + lanes <= n; i += lanes) {
        const Batch g = Batch::load_unaligned(dy + i) - d;
        xsimd::fma(Batch::load_unaligned(y + i), g, Batch::load_unaligned(dx + i)).store_unaligned(dx + i);
    }
    for (; i < n; ++i) dx[i] += y[i] * (dy[i] - dot);
}

constexpr RowFunctions row_functions_here{
    lanes,
    impl_max,
    impl_sum,
    impl_dot,
    impl_exp_shifted,
    impl_scale,
    impl_axpy,
    impl_squared_deviation,
    impl_normalize,
    impl_softmax_backward,
};

}  // namespace
}  // namespace tapevm::nn::detail
