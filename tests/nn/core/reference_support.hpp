// Helpers for the reference device's tests: f64 tensors from host values, deterministic
// random values, tolerant comparisons and central finite differences of a scalar loss.
#pragma once

#include <cmath>
#include <cstddef>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "tapevm/nn/device.hpp"
#include "tapevm/nn/tensor.hpp"

namespace tapevm::nn::test {

inline Device reference() { return Device::reference(); }

/// `n` values uniform in [low, high) from a fixed seed.
inline std::vector<double> random_values(std::size_t n, std::uint64_t seed, double low = -1,
                                         double high = 1) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> uniform(low, high);
    std::vector<double> values(n);
    for (double& value : values) value = uniform(rng);
    return values;
}

inline Tensor tensor(const Shape& shape, const std::vector<double>& values) {
    return reference().upload(shape, std::span<const double>(values), DType::f64);
}

inline Tensor random_tensor(const Shape& shape, std::uint64_t seed) {
    return tensor(shape, random_values(element_count(shape), seed));
}

inline Tensor id_tensor(const Shape& shape, const std::vector<std::int32_t>& values) {
    return reference().upload(shape, std::span<const std::int32_t>(values));
}

/// Checks every value of `actual` against `expected` within `tolerance` relative to
/// max(1, |expected|).
inline void check_close(const std::vector<double>& actual, const std::vector<double>& expected,
                        double tolerance, const std::string& what) {
    REQUIRE(actual.size() == expected.size());
    for (std::size_t i = 0; i < actual.size(); ++i) {
        const double scale = std::fmax(1.0, std::fabs(expected[i]));
        if (!(std::fabs(actual[i] - expected[i]) <= tolerance * scale)) {
            FAIL_CHECK(what << "[" << i << "]: got " << actual[i] << ", expected " << expected[i]);
        }
    }
}

/// The gradient of `loss` with respect to the host values `x` by central differences (step
/// 1e-6): `loss` reads x (it uploads it itself) and returns a scalar.
inline std::vector<double> numeric_gradient(std::vector<double>& x, const std::function<double()>& loss,
                                            double step = 1e-6) {
    std::vector<double> gradient(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) {
        const double saved = x[i];
        x[i] = saved + step;
        const double up = loss();
        x[i] = saved - step;
        const double down = loss();
        x[i] = saved;
        gradient[i] = (up - down) / (2 * step);
    }
    return gradient;
}

/// sum_i weights[i] * values[i].
inline double weighted_sum(const std::vector<double>& values, const std::vector<double>& weights) {
    double sum = 0;
    for (std::size_t i = 0; i < values.size(); ++i) sum += values[i] * weights[i];
    return sum;
}

}  // namespace tapevm::nn::test
