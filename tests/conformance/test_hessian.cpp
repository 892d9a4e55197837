// Dense Hessians (tapevm/hessian.hpp) on the backend: against the reference VM's Hessians (in
// double, and in float against the reference run in float or double, whichever is closer),
// exactly symmetric, against central differences of the backend's own gradients (double),
// with cotangents on a two-output tape, and the shape errors.
#include <bit>
#include <cmath>
#include <cstdint>
#include <string>

#include <doctest/doctest.h>

#include "../random_values.hpp"
#include "backend.hpp"
#include "judge.hpp"
#include "modes.hpp"
#include "tapevm/error.hpp"
#include "tapevm/examples.hpp"
#include "tapevm/hessian.hpp"
#include "tapevm/reference.hpp"
#include "tapevm/var.hpp"
#include "test_util.hpp"

namespace tapevm::conformance {
namespace {

template <class Real> std::vector<Real> as(const std::vector<double>& values) {
    return std::vector<Real>(values.begin(), values.end());
}

// f(x, y, z) = (x^2 y + sin z, exp(x) z^3): two outputs with cross terms.
Tape two_outputs() {
    return record(3, [](std::span<const Var> v) {
        return std::vector<Var>{v[0] * v[0] * v[1] + sin(v[2]), exp(v[0]) * v[2] * v[2] * v[2]};
    });
}

template <class Real>
void check_hessian(const std::string& what, const Tape& tape, std::size_t points, double low, double high,
                   unsigned seed) {
    const std::size_t n = tape.input_count();
    const std::size_t m = tape.output_count();
    const std::vector<double> inputs = test::random_values<double>(points * n, low, high, seed);
    const std::vector<double> cotangents =
        m == 1 ? std::vector<double>{} : test::random_values<double>(points * m, -2, 2, seed + 1);
    const std::vector<Real> inputs_real = as<Real>(inputs);
    const std::vector<Real> cotangents_real = as<Real>(cotangents);
    const Batch<Real> batch{points, inputs_real, {}};

    Failures failures(backend().name + " " + precision_name<Real>() + " hessian of " + what);
    try {
        const auto evaluator = make_evaluator(tape);
        const Evaluation<Real> got = hessian(*evaluator, batch, std::span<const Real>(cotangents_real));
        const reference::Vm oracle(tape);
        const Evaluation<double> want_double =
            hessian(oracle, Batch<double>{points, inputs, {}}, std::span<const double>(cotangents));
        const Evaluation<Real> want_real = hessian(oracle, batch, std::span<const Real>(cotangents_real));
        const ErrorBound bound = tolerances<Real>().tapes;
        for (std::size_t p = 0; p < points; ++p) {
            for (std::size_t i = 0; i < n; ++i) {
                for (std::size_t j = 0; j < n; ++j) {
                    const std::size_t at = (p * n + i) * n + j;
                    const double value = got.values[at];
                    const std::string where = "point " + std::to_string(p) + " entry (" + std::to_string(i) +
                                              ", " + std::to_string(j) + "): ";
                    if (!within(value, want_double.values[at], bound) &&
                        !within(value, static_cast<double>(want_real.values[at]), bound)) {
                        failures.add(where + show(value) + ", reference " + show(want_double.values[at]));
                    }
                    const std::size_t mirror = (p * n + j) * n + i;
                    if (std::bit_cast<std::uint64_t>(static_cast<double>(value)) !=
                        std::bit_cast<std::uint64_t>(static_cast<double>(got.values[mirror]))) {
                        failures.add(where + "not symmetric: " + show(value) + " and " +
                                     show(got.values[mirror]));
                    }
                }
            }
        }
        if constexpr (sizeof(Real) == sizeof(double)) {
            // Column i against central differences of the backend's own gradients (or vjps).
            for (std::size_t i = 0; i < n; ++i) {
                std::vector<double> up = inputs, down = inputs, steps(points);
                for (std::size_t p = 0; p < points; ++p) {
                    const double x = inputs[p * n + i];
                    up[p * n + i] = x + 1e-6 * std::fmax(1.0, std::fabs(x));
                    down[p * n + i] = x - 1e-6 * std::fmax(1.0, std::fabs(x));
                    steps[p] = up[p * n + i] - down[p * n + i];
                }
                std::vector<double> ones(points, 1.0);
                const std::span<const double> w = m == 1 ? std::span<const double>(ones) : cotangents;
                const auto g_up = evaluator->vjp(Batch<double>{points, up, {}}, w).values;
                const auto g_down = evaluator->vjp(Batch<double>{points, down, {}}, w).values;
                for (std::size_t p = 0; p < points; ++p) {
                    for (std::size_t k = 0; k < n; ++k) {
                        const double difference = (g_up[p * n + k] - g_down[p * n + k]) / steps[p];
                        const double value = got.values[(p * n + k) * n + i];
                        if (!test::close(value, difference, 1e-5)) {
                            failures.add("point " + std::to_string(p) + " entry (" + std::to_string(k) +
                                         ", " + std::to_string(i) + "): " + show(value) +
                                         ", central difference of gradients " + show(difference));
                        }
                    }
                }
            }
        }
    } catch (const Error& error) {
        failures.add(std::string("threw: ") + error.what());
    }
}

TEST_CASE_TEMPLATE("dense Hessians against the reference VM, symmetric, and central differences", Real,
                   double, float) {
    check_hessian<Real>("rosenbrock16", examples::example_tape("rosenbrock16"), 9, -2, 2, 11);
    check_hessian<Real>("trig16", examples::example_tape("trig16"), 9, -3, 3, 12);
    check_hessian<Real>("a two-output tape with cotangents", two_outputs(), 13, -1.5, 1.5, 13);
}

TEST_CASE_TEMPLATE("dense Hessians: wrong sizes are ShapeErrors", Real, double, float) {
    const auto evaluator = make_evaluator(two_outputs());
    const std::vector<Real> inputs(2 * 3, Real(0.5)), cotangents(2 * 2, Real(1));
    const Batch<Real> batch{2, inputs, {}};
    std::vector<Real> results(2 * 9);
    CHECK_NOTHROW(hessian(*evaluator, batch, std::span<const Real>(cotangents), std::span<Real>(results)));
    std::vector<Real> short_results(2 * 9 - 1);
    CHECK_THROWS_AS(
        hessian(*evaluator, batch, std::span<const Real>(cotangents), std::span<Real>(short_results)),
        ShapeError);
    // Two outputs need cotangents: empty means 1 only for one output.
    CHECK_THROWS_AS(hessian(*evaluator, batch, std::span<const Real>(), std::span<Real>(results)),
                    ShapeError);
    const std::vector<Real> few(3, Real(1));
    CHECK_THROWS_AS(hessian(*evaluator, batch, std::span<const Real>(few), std::span<Real>(results)),
                    ShapeError);
}

}  // namespace
}  // namespace tapevm::conformance
