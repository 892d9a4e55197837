// xsimd loops over one row, in the build's default instruction set. Sums keep four batch
// accumulators (lane j of accumulator a sums elements a * lanes + j mod 4 * lanes), folded
// in a fixed order: the same row gives the same bits on every call.
#include <cmath>
#include <limits>

#include "cpu/parallel.hpp"

namespace tapevm::nn::detail {

namespace {

constexpr std::size_t unroll = 4;

float fold(FloatBatch a, FloatBatch b, FloatBatch c, FloatBatch d) { return xsimd::hadd((a + b) + (c + d)); }

}  // namespace

float row_max(const float* x, std::size_t n) {
    float best = -std::numeric_limits<float>::infinity();
    std::size_t i = 0;
    if (n >= float_lanes) {
        FloatBatch m(best);
        for (; i + float_lanes <= n; i += float_lanes) m = xsimd::max(m, xsimd::load_unaligned(x + i));
        alignas(64) float lanes[float_lanes];
        m.store_aligned(lanes);
        for (float lane : lanes) best = std::max(best, lane);
    }
    for (; i < n; ++i) best = std::max(best, x[i]);
    return best;
}

float row_sum(const float* x, std::size_t n) {
    FloatBatch a(0.f), b(0.f), c(0.f), d(0.f);
    std::size_t i = 0;
    for (; i + unroll * float_lanes <= n; i += unroll * float_lanes) {
        a += xsimd::load_unaligned(x + i);
        b += xsimd::load_unaligned(x + i + float_lanes);
        c += xsimd::load_unaligned(x + i + 2 * float_lanes);
        d += xsimd::load_unaligned(x + i + 3 * float_lanes);
    }
    for (; i + float_lanes <= n; i += float_lanes) a += xsimd::load_unaligned(x + i);
    float sum = fold(a, b, c, d);
    for (; i < n; ++i) sum += x[i];
    return sum;
}

float row_dot(const float* x, const float* y, std::size_t n) {
    FloatBatch a(0.f), b(0.f), c(0.f), d(0.f);
    std::size_t i = 0;
    for (; i + unroll * float_lanes <= n; i += unroll * float_lanes) {
        a += xsimd::load_unaligned(x + i) * xsimd::load_unaligned(y + i);
        b += xsimd::load_unaligned(x + i + float_lanes) * xsimd::load_unaligned(y + i + float_lanes);
        c += xsimd::load_unaligned(x + i + 2 * float_lanes) * xsimd::load_unaligned(y + i + 2 * float_lanes);
        d += xsimd::load_unaligned(x + i + 3 * float_lanes) * xsimd::load_unaligned(y + i + 3 * float_lanes);
    }
    for (; i + float_lanes <= n; i += float_lanes) a += xsimd::load_unaligned(x + i) * xsimd::load_unaligned(y + i);
    float sum = fold(a, b, c, d);
    for (; i < n; ++i) sum += x[i] * y[i];
    return sum;
}

float row_exp_shifted(const float* x, float shift, float* y, std::size_t n) {
    const FloatBatch s(shift);
    FloatBatch a(0.f), b(0.f);
    std::size_t i = 0;
    for (; i + 2 * float_lanes <= n; i += 2 * float_lanes) {
        const FloatBatch e0 = xsimd::exp(xsimd::load_unaligned(x + i) - s);
        const FloatBatch e1 = xsimd::exp(xsimd::load_unaligned(x + i + float_lanes) - s);
        e0.store_unaligned(y + i);
        e1.store_unaligned(y + i + float_lanes);
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

void row_scale(float* y, float factor, std::size_t n) {
    const FloatBatch f(factor);
    std::size_t i = 0;
    for (; i + float_lanes <= n; i += float_lanes) (xsimd::load_unaligned(y + i) * f).store_unaligned(y + i);
    for (; i < n; ++i) y[i] *= factor;
}

void row_axpy(float a, const float* x, float* y, std::size_t n) {
    const FloatBatch f(a);
    std::size_t i = 0;
    for (; i + float_lanes <= n; i += float_lanes) {
        (xsimd::load_unaligned(y + i) + f * xsimd::load_unaligned(x + i)).store_unaligned(y + i);
    }
    for (; i < n; ++i) y[i] += a * x[i];
}

}  // namespace tapevm::nn::detail
