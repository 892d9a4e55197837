// The test cases of the math library, written once for double and float: each function of
// the GLSL policy against its std:: counterpart over special values and input ranges, with
// the largest ulp distance allowed (README.md in shaders/lib lists the measured ones).
#pragma once

#include <cmath>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "ulp.hpp"

namespace tapevm::gpu_math {

template <class T> struct Unary {
    const char* name;
    T (*ours)(T);
    T (*reference)(T);
    double bound;
    std::vector<Range> ranges;
};

template <class T> struct Binary {
    const char* name;
    T (*ours)(T, T);
    T (*reference)(T, T);
    double bound;
    std::vector<Range> ranges;  // each range feeds both operands independently
};

/// Checks one unary function: special values, then every range.
template <class T> void check(const Unary<T>& f) {
    std::mt19937_64 random(12345);
    Worst worst;
    auto one = [&](T x) {
        const T value = f.ours(x), reference = f.reference(x);
        worst.see(ulp_distance(value, reference), x, T(0), value, reference);
    };
    for (T x : special_values<T>()) one(x);
    for (const Range& r : f.ranges)
        for (T x : generate<T>(r, random)) one(x);
    MESSAGE(std::string(f.name) << ": max " << worst.ulps << " ulp at " << worst.where);
    CHECK_MESSAGE(worst.ulps <= f.bound,
                  std::string(f.name) << ": " << worst.ulps << " ulp > " << f.bound << " at " << worst.where);
}

/// Checks one binary function on every pair of special values, then on every range.
template <class T> void check(const Binary<T>& f) {
    std::mt19937_64 random(54321);
    Worst worst;
    auto one = [&](T x, T y) {
        const T value = f.ours(x, y), reference = f.reference(x, y);
        worst.see(ulp_distance(value, reference), x, y, value, reference);
    };
    const std::vector<T> specials = special_values<T>();
    for (T x : specials)
        for (T y : specials) one(x, y);
    for (const Range& r : f.ranges) {
        const std::vector<T> xs = generate<T>(r, random), ys = generate<T>(r, random);
        for (std::size_t i = 0; i < xs.size(); ++i) one(xs[i], ys[i]);
    }
    MESSAGE(std::string(f.name) << ": max " << worst.ulps << " ulp at " << worst.where);
    CHECK_MESSAGE(worst.ulps <= f.bound,
                  std::string(f.name) << ": " << worst.ulps << " ulp > " << f.bound << " at " << worst.where);
}

}  // namespace tapevm::gpu_math

namespace tapevm::gpu_math {

/// The library's software fma against std::fma: every triple of special values, random
/// triples over the whole range, and products cancelled by z = -(x y) rounded (where an
/// unfused x * y + z is 100% wrong). Faithful rounding (<= 1 ulp) is the bound.
template <class T, class F> void check_fma(F fma_under_test) {
    std::mt19937_64 random(777);
    double worst = 0;
    std::string where;
    const auto one = [&](T x, T y, T z) {
        const T got = fma_under_test(x, y, z), want = std::fma(x, y, z);
        const double d = ulp_distance(got, want);
        if (d > worst) {
            worst = d;
            std::ostringstream text;
            text << std::hexfloat << x << ", " << y << ", " << z << " gives " << got << ", std:: " << want;
            where = text.str();
        }
    };
    const std::vector<T> specials = special_values<T>();
    for (T x : specials)
        for (T y : specials)
            for (T z : specials) one(x, y, z);
    std::uniform_real_distribution<T> unit(T(1), T(2));
    std::uniform_int_distribution<int> exponent(-60, 60);
    std::uniform_int_distribution<int> sign(0, 1);
    const auto draw = [&] {
        return std::ldexp(unit(random), exponent(random)) * (sign(random) ? T(1) : T(-1));
    };
    for (int i = 0; i < 100000; ++i) {
        const T x = draw(), y = draw();
        one(x, y, draw());
        one(x, y, -(x * y));
        one(x, y, -(x * y) * (T(1) + std::numeric_limits<T>::epsilon()));
    }
    MESSAGE("fma: max " << worst << " ulp at (" << where << ")");
    CHECK(worst <= 1);
}

}  // namespace tapevm::gpu_math

namespace tapevm::gpu_math {

/// tv_sincos(x) gives exactly (tv_sin(x), tv_cos(x)), bit for bit (the tape compiler relies
/// on it): special values, every binade, and the large-argument reduction.
template <class T, class SinCos, class F> void check_sincos(SinCos sincos, F sin, F cos) {
    std::mt19937_64 random(99);
    std::vector<T> xs = special_values<T>();
    for (const Range& r : {bits(200000), range(-10, 10), range(-1e7, 1e7)}) {
        const std::vector<T> more = generate<T>(r, random);
        xs.insert(xs.end(), more.begin(), more.end());
    }
    std::size_t mismatches = 0;
    for (const T x : xs) {
        T s = 0, c = 0;
        sincos(x, s, c);
        const T s_ref = sin(x), c_ref = cos(x);
        using Bits = std::conditional_t<sizeof(T) == 8, std::uint64_t, std::uint32_t>;
        const auto identical = [](T a, T b) {
            return std::isnan(a) ? std::isnan(b) : std::bit_cast<Bits>(a) == std::bit_cast<Bits>(b);
        };
        const bool same = identical(s, s_ref) && identical(c, c_ref);
        if (!same && mismatches++ == 0)
            FAIL_CHECK("sincos(" << x << ") = (" << s << ", " << c << "), sin and cos give (" << s_ref << ", "
                                 << c_ref << ")");
    }
    CHECK(mismatches == 0);
}

/// lgamma for x < 0 (20000 non-integer draws from [-12, 0)) against std::lgamma in double: the
/// worst error, relative above 1 and absolute below, where lgamma's zeros make relative error
/// meaningless. Checked below `bound`.
template <class T, class F> void check_negative_lgamma(F lgamma, double bound) {
    std::mt19937_64 random(3);
    std::uniform_real_distribution<T> negative(-12, 0);
    double worst = 0;
    for (int i = 0; i < 20000; ++i) {
        const T x = negative(random);
        if (x == std::round(x)) continue;
        const double want = std::lgamma(static_cast<double>(x));
        const double error =
            std::fabs(static_cast<double>(lgamma(x)) - want) / std::fmax(1.0, std::fabs(want));
        worst = std::fmax(worst, error);
    }
    MESSAGE("lgamma(x < 0): max error " << worst << " (relative above 1, absolute below)");
    CHECK(worst < bound);
}

}  // namespace tapevm::gpu_math
