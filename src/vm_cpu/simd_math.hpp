// The math policy for SIMD batches (xsimd::batch<Real, Arch>): the names of
// detail/math_scalar.hpp, so the op table's formulas (Formula<Op>) run one vector of lanes at
// a time. Include only from a translation unit compiled for Arch (kernel_<isa>.cpp).
//
// Where xsimd's functions differ from the C library that the reference VM calls (checked for
// NaN, +-inf, +-0, subnormals and domain edges), the lanes concerned are recomputed with the
// C library (`redo`): a select costs nothing when no lane needs it, and a lane that does
// pays one scalar call. The functions whose xsimd version is not trusted at all (fmod, pow,
// hypot, general powi, fma without FMA hardware) run per lane. Accuracy bounds:
// src/vm_cpu/README.md.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>

#include <immintrin.h>
#include <xsimd/xsimd.hpp>

#include "detail/math_scalar.hpp"
#include "detail/op_formulas.hpp"

namespace tapevm::cpu::detail {

template <class Arch, class Real> struct SimdMath {
    using T = xsimd::batch<Real, Arch>;
    using Mask = xsimd::batch_bool<Real, Arch>;
    static constexpr std::size_t width = T::size;

    /// f(x) per lane (the C library's function), for every lane.
    template <class F> static T per_lane(T x, F f) {
        alignas(Arch::alignment()) Real lanes[width];
        x.store_aligned(lanes);
        for (std::size_t l = 0; l < width; ++l) lanes[l] = f(lanes[l]);
        return T::load_aligned(lanes);
    }
    template <class F> static T per_lane(T x, T y, F f) {
        alignas(Arch::alignment()) Real xs[width];
        alignas(Arch::alignment()) Real ys[width];
        x.store_aligned(xs);
        y.store_aligned(ys);
        for (std::size_t l = 0; l < width; ++l) xs[l] = f(xs[l], ys[l]);
        return T::load_aligned(xs);
    }
    /// r, with the lanes in `redo_mask` replaced by f(x) per lane.
    template <class F> static T redo(T r, Mask redo_mask, T x, F f) {
        if (!xsimd::any(redo_mask)) return r;
        return xsimd::select(redo_mask, per_lane(x, f), r);
    }
    template <class F> static T redo(T r, Mask redo_mask, T x, T y, F f) {
        if (!xsimd::any(redo_mask)) return r;
        return xsimd::select(redo_mask, per_lane(x, y, f), r);
    }
    /// Lanes where |x| is not below `bound` (NaN lanes excluded: xsimd propagates them).
    static Mask outside(T x, double bound) { return xsimd::abs(x) >= T(static_cast<Real>(bound)); }
    /// Positive or negative subnormals (not zero).
    static Mask subnormal(T x) {
        return (xsimd::abs(x) < T(std::numeric_limits<Real>::min())) & (x != T(Real(0)));
    }
    static constexpr bool is_double = std::is_same_v<Real, double>;

    static T sqrt(T x) { return xsimd::sqrt(x); }
    static T cbrt(T x) {
        return redo(xsimd::cbrt(x), subnormal(x), x, [](Real v) { return std::cbrt(v); });
    }
    // exp, exp2, expm1: xsimd overflows early (float) and flushes subnormal results; lanes
    // near either end of the range go to the C library.
    static T exp(T x) {
        return redo(xsimd::exp(x), outside(x, is_double ? 708.0 : 87.0), x,
                    [](Real v) { return std::exp(v); });
    }
    static T exp2(T x) {
        return redo(xsimd::exp2(x), outside(x, is_double ? 1020.0 : 125.0), x,
                    [](Real v) { return std::exp2(v); });
    }
    static T expm1(T x) {
        // xsimd gives +0 for -0.
        const T r = xsimd::select(x == T(Real(0)), x, xsimd::expm1(x));
        return redo(r, x >= T(Real(is_double ? 708.0 : 87.0)), x, [](Real v) { return std::expm1(v); });
    }
    // log*: xsimd is wrong for subnormal arguments.
    static T log(T x) {
        return redo(xsimd::log(x), subnormal(x), x, [](Real v) { return std::log(v); });
    }
    static T log2(T x) {
        return redo(xsimd::log2(x), subnormal(x), x, [](Real v) { return std::log2(v); });
    }
    static T log10(T x) {
        return redo(xsimd::log10(x), subnormal(x), x, [](Real v) { return std::log10(v); });
    }
    static T log1p(T x) {
        // xsimd gives +0 for -0.
        return xsimd::select(x == T(Real(0)), x, xsimd::log1p(x));
    }
    // sin, cos, tan: xsimd picks its argument reduction by the largest lane of the vector, so
    // a large, infinite or NaN lane would change its neighbours' results (by an ulp). Lanes
    // beyond 20 pi (and NaN) are computed as 0 and then redone with the C library, so every
    // vector xsimd sees stays on its small-argument reductions.
    // xsimd's reduction (x - n pi/2 with pi/2 in three parts) keeps an absolute error of
    // about 2^-100 n, which is many ulp of a result near 0 (sin and tan at k pi, cos at
    // (k + 1/2) pi: 10 ulp at sin(-3 pi), 25,000 at cos(29 pi / 2) in double) or huge (tan at
    // (k + 1/2) pi). Reduced lanes (|x| > pi/4) whose result is below 2^-30 in magnitude, or
    // above 2^30 for tan, are redone with the C library: measured against glibc over
    // [-20 pi, 20 pi] (2,000 ulps either side of every k pi/2, and random points), xsimd is
    // within 1 ulp (double) down to 2^-44 and within 2 elsewhere, so the op stays within
    // 2 ulp. (tests/conformance/backend_cpu.cpp checks k pi and (k + 1/2) pi up to k = 2^20.)
    static Mask trig_outside(T x) { return ~(xsimd::abs(x) <= xsimd::constants::twentypi<T>()); }
    template <class Xsimd, class Std> static T trig(T x, Xsimd xf, Std sf, bool huge_too = false) {
        const Mask big = trig_outside(x);
        const T r = xsimd::any(big) ? xf(xsimd::select(big, T(Real(0)), x)) : xf(x);
        const T ar = xsimd::abs(r);
        Mask near_pole_or_zero = ar < T(Real(0x1p-30));
        if (huge_too) near_pole_or_zero = near_pole_or_zero | (ar > T(Real(0x1p30)));
        const Mask redo_mask = big | (near_pole_or_zero & (xsimd::abs(x) > T(Real(0.78))));
        return redo(r, redo_mask, x, sf);
    }
    static T sin(T x) {
        return trig(
            x, [](T v) { return xsimd::sin(v); }, [](Real v) { return std::sin(v); });
    }
    static T cos(T x) {
        return trig(
            x, [](T v) { return xsimd::cos(v); }, [](Real v) { return std::cos(v); });
    }
    static T tan(T x) {
        return trig(
            x, [](T v) { return xsimd::tan(v); }, [](Real v) { return std::tan(v); }, true);
    }
    static T asin(T x) { return xsimd::asin(x); }
    static T acos(T x) { return xsimd::acos(x); }
    static T atan(T x) { return xsimd::atan(x); }
    static T atan2(T y, T x) {
        // xsimd gives NaN for two zeros and mishandles infinities: those lanes use the C library.
        const Mask special = ((y == T(Real(0))) & (x == T(Real(0)))) | xsimd::isinf(x) | xsimd::isinf(y);
        return redo(xsimd::atan2(y, x), special, y, x, [](Real a, Real b) { return std::atan2(a, b); });
    }
    static T sinh(T x) { return xsimd::sinh(x); }
    static T cosh(T x) { return xsimd::cosh(x); }
    static T tanh(T x) { return xsimd::tanh(x); }
    static T asinh(T x) { return xsimd::asinh(x); }
    static T acosh(T x) {
        // xsimd gives -inf or 0 instead of NaN below 1.
        return xsimd::select(x < T(Real(1)), T(std::numeric_limits<Real>::quiet_NaN()), xsimd::acosh(x));
    }
    static T atanh(T x) { return xsimd::atanh(x); }
    // erf, erfc, lgamma: the C library per lane (the reference VM's values exactly). xsimd 8.1
    // has vector versions, not adopted yet: a test run of them against the C library over
    // random and special arguments did not finish (hang or pathological slowness on some
    // argument), see src/vm_cpu/README.md.
    static T erf(T x) {
        return per_lane(x, [](Real v) { return tapevm::detail::ScalarMath<Real>::erf(v); });
    }
    static T erfc(T x) {
        return per_lane(x, [](Real v) { return tapevm::detail::ScalarMath<Real>::erfc(v); });
    }
    static T lgamma(T x) {
        return per_lane(x, [](Real v) { return tapevm::detail::ScalarMath<Real>::lgamma(v); });
    }
    static T copysign(T x, T s) { return xsimd::copysign(x, s); }
    static T abs(T x) { return xsimd::abs(x); }
    /// -1, 0 or 1; keeps -0, +0 and NaN.
    static T sign(T x) {
        return xsimd::select(x > T(Real(0)), T(Real(1)), xsimd::select(x < T(Real(0)), T(Real(-1)), x));
    }
    // Rounding keeps the argument's sign (xsimd's SSE2 versions give +0 for -0 and for
    // ceil/trunc/round of small negatives); a nonzero result has that sign anyway.
    static T floor(T x) { return xsimd::copysign(xsimd::floor(x), x); }
    static T ceil(T x) { return xsimd::copysign(xsimd::ceil(x), x); }
    static T round(T x) { return xsimd::copysign(xsimd::round(x), x); }
    static T trunc(T x) { return xsimd::copysign(xsimd::trunc(x), x); }
    static T fmod(T x, T y) {
        return per_lane(x, y, [](Real a, Real b) { return std::fmod(a, b); });
    }
    static T pow(T x, T y) {
        return per_lane(x, y, [](Real a, Real b) { return std::pow(a, b); });
    }
    /// x^n: exact shortcuts for the exponents -1..2 (each correctly rounded, as pow is),
    /// the C library's pow per lane otherwise.
    static T powi(T x, std::int32_t n) {
        switch (n) {
            case 0: return T(Real(1));
            case 1: return x;
            case 2: return x * x;
            case -1: return T(Real(1)) / x;
            default: {
                const Real exponent = static_cast<Real>(n);
                return per_lane(x, [exponent](Real v) { return std::pow(v, exponent); });
            }
        }
    }
    static T hypot(T x, T y) {
        return per_lane(x, y, [](Real a, Real b) { return std::hypot(a, b); });
    }
    static T fma(T x, T y, T z) {
        if constexpr (std::is_base_of_v<xsimd::avx512f, Arch>) {
            if constexpr (is_double) {
                return T(_mm512_fmadd_pd(x, y, z));
            } else {
                return T(_mm512_fmadd_ps(x, y, z));
            }
        } else if constexpr (std::is_base_of_v<xsimd::fma3<xsimd::avx2>, Arch>) {
            return xsimd::fma(x, y, z);
        } else {
            alignas(Arch::alignment()) Real xs[width];
            alignas(Arch::alignment()) Real ys[width];
            alignas(Arch::alignment()) Real zs[width];
            x.store_aligned(xs);
            y.store_aligned(ys);
            z.store_aligned(zs);
            for (std::size_t l = 0; l < width; ++l) xs[l] = std::fma(xs[l], ys[l], zs[l]);
            return T::load_aligned(xs);
        }
    }
    // xsimd 8.1's != is ordered on AVX and AVX-512 (false where a lane is NaN), unlike C++'s:
    // inequality here is the negation of ==, which is right on every instruction set.
    static Mask isnan(T x) { return ~(x == x); }
    static Mask not_equal(T x, T y) { return ~(x == y); }
    /// -x with the sign of zero flipped too (xsimd's AVX-512 minus is 0 - x).
    static T neg(T x) { return x ^ T(Real(-0.0)); }
    static Mask signbit(T x) { return xsimd::copysign(T(Real(1)), x) < T(Real(0)); }
    static T select(Mask m, T x, T y) { return xsimd::select(m, x, y); }
    static Mask mask_and(Mask x, Mask y) { return x & y; }
    static Mask mask_or(Mask x, Mask y) { return x | y; }
    static Mask mask_not(Mask x) { return ~x; }

    static Mask is_zero(T x) { return x == T(Real(0)); }
    static Mask truth(T x) { return ~(x == T(Real(0))); }
};

/// Formula<op> for plain SIMD batches, except the ops whose formulas apply a raw operator that
/// xsimd 8.1 gets wrong (!= with NaN, unary minus of +0): those use the policy's functions.
template <Op op> struct SimdFormula : tapevm::detail::Formula<op> {};
template <> struct SimdFormula<Op::Neg> : tapevm::detail::Formula<Op::Neg> {
    template <class M, class T> static T value(T a) { return M::neg(a); }
};
template <> struct SimdFormula<Op::Ne> : tapevm::detail::Formula<Op::Ne> {
    template <class M, class T> static T value(T a, T b) { return M::select(M::not_equal(a, b), T(1), T(0)); }
};
template <> struct SimdFormula<Op::Select> : tapevm::detail::Formula<Op::Select> {
    template <class M, class T> static T value(T a, T b, T c) { return M::select(M::truth(a), b, c); }
    template <class M, class T> static void partials(T a, T, T, T, T (&d)[3]) {
        const auto taken = M::truth(a);
        d[0] = T(0);
        d[1] = M::select(taken, T(1), T(0));
        d[2] = M::select(taken, T(0), T(1));
    }
};

}  // namespace tapevm::cpu::detail
