// Helpers for the GPU suites: a Vm with validation on, the reference results of every mode,
// and comparisons that name the mode, precision and point of the first difference.
#pragma once

#include <array>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include <doctest/doctest.h>

#include "../random_values.hpp"
#include "tapevm/gpu.hpp"
#include "tapevm/reference.hpp"

namespace tapevm::test {

/// Fails the current test on any validation-layer message since the last check.
inline void check_validation_clean() {
    for (const auto& message : gpu::validation_messages()) FAIL_CHECK(message);
}

/// True when the Khronos validation layer is installed on this machine (Debian's path).
inline bool validation_layer_installed() {
    return std::filesystem::exists("/usr/share/vulkan/explicit_layer.d/VkLayer_khronos_validation.json");
}

/// The engine the GPU tests run: TAPEVM_TEST_GPU_ENGINE=compiled runs the same suites on the
/// tape compiler's kernels (meson tests gpu_modes_compiled, conformance_gpu_compiled).
inline gpu::Engine test_engine() {
    const char* engine = std::getenv("TAPEVM_TEST_GPU_ENGINE");
    return engine != nullptr && std::string_view(engine) == "compiled" ? gpu::Engine::compiled
                                                                       : gpu::Engine::interpreter;
}

inline gpu::Options test_options(std::size_t chunk_points = 0) {
    gpu::Options options;
    options.chunk_points = chunk_points;
    options.validation = true;
    options.engine = test_engine();
    return options;
}

/// Sets an environment variable for the scope, restoring the previous value.
class ScopedEnv {
public:
    ScopedEnv(const char* name, const char* value) : name_(name) {
        const char* old = std::getenv(name);
        had_ = old != nullptr;
        if (had_) old_ = old;
        if (value != nullptr) {
            setenv(name, value, 1);
        } else {
            unsetenv(name);
        }
    }
    ~ScopedEnv() {
        if (had_) {
            setenv(name_, old_.c_str(), 1);
        } else {
            unsetenv(name_);
        }
    }

private:
    const char* name_;
    bool had_ = false;
    std::string old_;
};

/// `points` rows of `center`, each value scaled by a factor in [1 - spread, 1 + spread].
template <class Real, std::size_t N>
std::vector<Real> perturbed_rows(const std::array<double, N>& center, std::size_t points, double spread,
                                 unsigned seed) {
    std::mt19937_64 engine(seed);
    std::uniform_real_distribution<double> factor(1 - spread, 1 + spread);
    std::vector<Real> values(points * N);
    for (std::size_t i = 0; i < values.size(); ++i)
        values[i] = static_cast<Real>(center[i % N] * factor(engine));
    return values;
}

/// Relative tolerance for comparing GPU and reference results: exact formulas are the same,
/// the math library differs by a few ulp and the summation order is the same.
template <class Real> double tolerance() { return sizeof(Real) == 8 ? 1e-11 : 2e-4; }

/// The same for the bundle-adjustment tape in float: its residual cancels a projection of
/// ~1e3 against the feature, amplifying a few ulp of the device's division and math library
/// (NVIDIA divides within 2.5 ulp) to ~1e-3 relative, as on the CPU (tests/cpu: 3e-3).
constexpr double ba_float_tolerance = 3e-3;

/// Compares `actual` with `expected` element by element; reports the first mismatch.
template <class Real>
void check_close(const std::vector<Real>& actual, const std::vector<Real>& expected, const std::string& what,
                 std::size_t per_point = 1, double relative = tolerance<Real>()) {
    REQUIRE(actual.size() == expected.size());
    for (std::size_t i = 0; i < actual.size(); ++i) {
        const double a = actual[i];
        const double e = expected[i];
        const bool ok =
            (std::isnan(a) && std::isnan(e)) || a == e ||
            (std::isfinite(a) && std::isfinite(e) &&
             std::fabs(a - e) <= relative * std::fmax(1.0, std::fmax(std::fabs(a), std::fabs(e))));
        if (!ok) {
            FAIL_CHECK(what << ": value " << i << " (point " << i / std::max<std::size_t>(per_point, 1)
                            << "): gpu " << a << ", reference " << e);
            return;
        }
    }
}

}  // namespace tapevm::test
