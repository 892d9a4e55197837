// The test cases of the math library, written once for double and float: each function of
// the GLSL policy against its std:: counterpart over special values and input ranges, with
// the largest ulp distance allowed (README.md in shaders/lib lists the measured ones).
#pragma once

#include <cmath>
#include <functional>
#include <random>
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
