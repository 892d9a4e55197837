// Measuring the GLSL math library against std::: distances in units in the last place, input
// generators over whole domains and ranges, and the worst case found.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

namespace tapevm::gpu_math {

/// |a - b| in units of the last place of T, counted exactly between values of one sign
/// (+0 and -0 count as the same point).
template <class T> double ulps_between(T a, T b) {
    using Bits = std::conditional_t<sizeof(T) == 8, std::uint64_t, std::uint32_t>;
    constexpr Bits magnitude = std::numeric_limits<Bits>::max() >> 1;
    const Bits x = std::bit_cast<Bits>(a) & magnitude, y = std::bit_cast<Bits>(b) & magnitude;
    if (std::signbit(a) != std::signbit(b)) return static_cast<double>(x) + static_cast<double>(y);
    return static_cast<double>(x > y ? x - y : y - x);
}

/// Distance of `value` from `reference` in ulps; infinite when they disagree on NaN,
/// infinities or the sign of an exact zero (those must match exactly).
template <class T> double ulp_distance(T value, T reference) {
    constexpr double mismatch = std::numeric_limits<double>::infinity();
    if (std::isnan(reference) || std::isnan(value))
        return std::isnan(reference) && std::isnan(value) ? 0.0 : mismatch;
    if (std::isinf(reference) || std::isinf(value)) return value == reference ? 0.0 : mismatch;
    if (reference == T(0) && std::signbit(reference) != std::signbit(value) && value == T(0)) return mismatch;
    return ulps_between(value, reference);
}

/// Inputs: `count` values uniform in [low, high], or (when `bits`) uniform over bit patterns,
/// which covers every binade of the whole domain; `positive` drops the sign.
struct Range {
    double low = 0;
    double high = 0;
    bool bits = false;
    bool positive = false;
    int count = 100000;
};
inline Range bits(int count = 100000) { return {0, 0, true, false, count}; }
inline Range positive_bits(int count = 100000) { return {0, 0, true, true, count}; }
inline Range range(double low, double high, int count = 100000) { return {low, high, false, false, count}; }

template <class T> std::vector<T> generate(const Range& r, std::mt19937_64& random) {
    using Bits = std::conditional_t<sizeof(T) == 8, std::uint64_t, std::uint32_t>;
    std::vector<T> values;
    values.reserve(static_cast<std::size_t>(r.count));
    std::uniform_real_distribution<double> uniform(r.low, r.high);
    for (int i = 0; i < r.count; ++i) {
        T x;
        if (r.bits) {
            x = std::bit_cast<T>(static_cast<Bits>(random()));
            if (r.positive) x = std::fabs(x);
        } else {
            x = static_cast<T>(uniform(random));
        }
        values.push_back(x);
    }
    return values;
}

/// Signed zeros, subnormals, limits, infinities, NaN and a few landmarks, both signs.
template <class T> std::vector<T> special_values() {
    using L = std::numeric_limits<T>;
    const T landmarks[] = {T(0),
                           L::denorm_min(),
                           L::min() / T(2),
                           L::min(),
                           L::epsilon(),
                           T(0.5),
                           T(1) - L::epsilon() / T(2),
                           T(1),
                           T(1) + L::epsilon(),
                           T(1.5),
                           T(2),
                           T(3),
                           T(0.7853981633974483),
                           T(1.5707963267948966),
                           T(3.141592653589793),
                           T(10),
                           T(22),
                           T(88.5),
                           T(89),
                           T(100),
                           T(127),
                           T(128),
                           T(709.5),
                           T(710),
                           T(745),
                           T(1e10),
                           T(1e22),
                           L::max() / T(2),
                           L::max(),
                           L::infinity(),
                           L::quiet_NaN()};
    std::vector<T> values;
    for (T x : landmarks) {
        values.push_back(x);
        values.push_back(-x);
    }
    return values;
}

/// The largest distance seen and where.
struct Worst {
    double ulps = 0;
    std::string where;
    template <class T> void see(double distance, T x, T y, T value, T reference) {
        if (!(distance <= ulps)) {
            ulps = distance;
            std::ostringstream text;
            text.precision(std::numeric_limits<T>::max_digits10);
            text << "(" << x << ", " << y << ") gives " << value << ", std:: " << reference;
            where = text.str();
        }
    }
};

}  // namespace tapevm::gpu_math
