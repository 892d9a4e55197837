// The math policy for plain scalars (double, float): the primitives the op table's formulas
// call as M::name(...). Other policies (dual numbers, SIMD batches, GLSL) offer the same names.
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

namespace tapevm::detail {

template <class T> struct ScalarMath {
    using Mask = bool;

    static T sqrt(T x) { return std::sqrt(x); }
    static T cbrt(T x) { return std::cbrt(x); }
    static T exp(T x) { return std::exp(x); }
    static T exp2(T x) { return std::exp2(x); }
    static T expm1(T x) { return std::expm1(x); }
    static T log(T x) { return std::log(x); }
    static T log2(T x) { return std::log2(x); }
    static T log10(T x) { return std::log10(x); }
    static T log1p(T x) { return std::log1p(x); }
    static T sin(T x) { return std::sin(x); }
    static T cos(T x) { return std::cos(x); }
    static T tan(T x) { return std::tan(x); }
    static T asin(T x) { return std::asin(x); }
    static T acos(T x) { return std::acos(x); }
    static T atan(T x) { return std::atan(x); }
    static T atan2(T y, T x) { return std::atan2(y, x); }
    static T sinh(T x) { return std::sinh(x); }
    static T cosh(T x) { return std::cosh(x); }
    static T tanh(T x) { return std::tanh(x); }
    static T asinh(T x) { return std::asinh(x); }
    static T acosh(T x) { return std::acosh(x); }
    static T atanh(T x) { return std::atanh(x); }
    static T erf(T x) { return std::erf(x); }
    static T erfc(T x) { return std::erfc(x); }
    /// log|Gamma(x)| (+inf at 0 and the negative integers); glibc's lgamma_r, which does not
    /// write the global signgam (std::lgamma does: a data race between VM threads).
    static T lgamma(T x) {
#if defined(__GLIBC__)
        int sign = 0;
        if constexpr (std::is_same_v<T, float>) {
            return ::lgammaf_r(x, &sign);
        } else {
            return ::lgamma_r(x, &sign);
        }
#else
        return std::lgamma(x);
#endif
    }
    static T copysign(T x, T s) { return std::copysign(x, s); }
    static T abs(T x) { return std::fabs(x); }
    /// -1, 0 or 1; keeps -0, +0 and NaN.
    static T sign(T x) { return x > T(0) ? T(1) : (x < T(0) ? T(-1) : x); }
    static T floor(T x) { return std::floor(x); }
    static T ceil(T x) { return std::ceil(x); }
    static T round(T x) { return std::round(x); }
    static T trunc(T x) { return std::trunc(x); }
    static T fmod(T x, T y) { return std::fmod(x, y); }
    static T pow(T x, T y) { return std::pow(x, y); }
    static T powi(T x, std::int32_t n) { return std::pow(x, static_cast<T>(n)); }
    static T hypot(T x, T y) { return std::hypot(x, y); }
    static T fma(T x, T y, T z) { return std::fma(x, y, z); }
    static Mask isnan(T x) { return std::isnan(x); }
    static Mask signbit(T x) { return std::signbit(x); }
    static T select(Mask m, T x, T y) { return m ? x : y; }
    static Mask mask_and(Mask x, Mask y) { return x && y; }
    static Mask mask_or(Mask x, Mask y) { return x || y; }
    static Mask mask_not(Mask x) { return !x; }

    static bool is_zero(T x) { return x == T(0); }
    static bool truth(T x) { return x != T(0); }
};

/// The accumulation rule every VM applies: partial * seed, exactly 0 when either factor is
/// exactly 0 (a zero partial absorbs an infinite or NaN seed and vice versa), so forward
/// and reverse mode agree. Policies whose Mask is not bool (SIMD batches) decide per lane.
template <class M, class T> T contribution(T partial, T seed) {
    if constexpr (std::is_same_v<typename M::Mask, bool>) {
        return (M::is_zero(partial) || M::is_zero(seed)) ? T(0) : partial * seed;
    } else {
        return M::select(M::mask_or(M::is_zero(partial), M::is_zero(seed)), T(0), partial * seed);
    }
}

}  // namespace tapevm::detail
