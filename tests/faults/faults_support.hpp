// The workload of the fault suites: one small tape, every mode of gpu::Vm on 100 points in
// chunks of 64 (two chunks: both chunk slots, the overlap of staging and compute), and the
// reference VM's results of each mode.
#pragma once

#include <cmath>
#include <span>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "tapevm/gpu.hpp"
#include "tapevm/reference.hpp"
#include "tapevm/var.hpp"

namespace tapevm::test {

enum class Mode { forward, gradient, jacobian, jvp, vjp, hvp, resident };
inline constexpr Mode all_modes[] = {Mode::forward, Mode::gradient, Mode::jacobian, Mode::jvp,
                                     Mode::vjp,     Mode::hvp,      Mode::resident};

inline std::string mode_name(Mode mode) {
    switch (mode) {
        case Mode::forward: return "forward";
        case Mode::gradient: return "gradient";
        case Mode::jacobian: return "jacobian";
        case Mode::jvp: return "jvp";
        case Mode::vjp: return "vjp";
        case Mode::hvp: return "hvp";
        case Mode::resident: return "resident forward (upload, allocate, download)";
    }
    return "?";
}

inline constexpr std::size_t fault_test_points = 100;

/// f(x, y, z) = sin(x) y + exp(x z) / (1 + y^2): transcendental, every input active.
inline Tape fault_test_tape() {
    return record(
        3, [](std::span<const Var> x) { return sin(x[0]) * x[1] + exp(x[0] * x[2]) / (1.0 + x[1] * x[1]); });
}

inline gpu::Options fault_test_options() {
    gpu::Options options;
    options.chunk_points = 64;
    options.validation = true;
    return options;
}

/// Values per point of `count` per point, deterministic, in [-1, 1).
inline std::vector<float> fault_test_values(std::size_t per_point, unsigned salt) {
    std::vector<float> values(fault_test_points * per_point);
    for (std::size_t i = 0; i < values.size(); ++i)
        values[i] = static_cast<float>(std::fmod((i + 1) * 0.6180339887 * (salt + 1), 2.0) - 1.0);
    return values;
}

/// Runs `mode` on `evaluator` (a gpu::Vm or the reference VM; resident: gpu::Vm only).
template <class Evaluator> std::vector<float> run_mode(const Evaluator& evaluator, Mode mode) {
    const std::vector<float> inputs = fault_test_values(3, 0);
    const std::vector<float> tangents = fault_test_values(3, 1);
    const std::vector<float> cotangents = fault_test_values(1, 2);
    const Batch<float> batch{fault_test_points, inputs, {}};
    switch (mode) {
        case Mode::forward: return evaluator.forward(batch).values;
        case Mode::gradient: return evaluator.gradient(batch).values;
        case Mode::jacobian: return evaluator.jacobian(batch).values;
        case Mode::jvp: return evaluator.jvp(batch, std::span<const float>(tangents)).values;
        case Mode::vjp: return evaluator.vjp(batch, std::span<const float>(cotangents)).values;
        case Mode::hvp:
            return evaluator.hvp(batch, std::span<const float>(cotangents), std::span<const float>(tangents))
                .values;
        case Mode::resident:
            if constexpr (std::is_same_v<Evaluator, gpu::Vm>) {
                const auto x = evaluator.template upload<float>(inputs);
                auto y = evaluator.template allocate<float>(fault_test_points);
                evaluator.forward(fault_test_points, x, nullptr, y);
                std::vector<float> out(fault_test_points);
                evaluator.download(y, std::span<float>(out));
                return out;
            } else {
                return evaluator.forward(batch).values;
            }
    }
    return {};
}

/// The reference VM's results of `mode`, in float.
inline std::vector<float> reference_mode(Mode mode) {
    const reference::Vm vm(fault_test_tape());
    return run_mode(vm, mode);
}

/// Element by element within float's tolerance for these formulas (a few ulp of the device's
/// math library), naming the first mismatch.
inline void check_close(const std::vector<float>& actual, const std::vector<float>& expected,
                        const std::string& what) {
    REQUIRE_MESSAGE(actual.size() == expected.size(), what);
    for (std::size_t i = 0; i < actual.size(); ++i) {
        const double a = actual[i], e = expected[i];
        if (!(std::fabs(a - e) <= 2e-4 * std::fmax(1.0, std::fabs(e)))) {
            FAIL_CHECK(what << ": value " << i << ": " << a << ", expected " << e);
            return;
        }
    }
}

}  // namespace tapevm::test
