// Evaluator::jvps (several Jacobian-vector products per point in shared directions) on the
// backend: result c of each point has the bits of the backend's own jvp in direction c, on
// one point (where the CPU VM puts the directions in its SIMD lanes), on a few and on many
// points (jvp over points x directions), with 1 to 17 directions (within, at and past a SIMD
// vector), guards and per-point parameters; the shape errors.
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
#include "tapevm/var.hpp"

namespace tapevm::conformance {
namespace {

// 3 inputs, 1 param, 3 outputs through transcendental ops, a comparison (partials 0), select,
// an output that is an input, and a guard recorded at x0 < x1.
Tape guarded() {
    const std::vector<double> x = {0.25, 0.5, 0.75};
    const std::vector<double> p = {1.5};
    return record(std::span<const double>(x), std::span<const double>(p),
                  [](std::span<const Var> x, std::span<const Var> p) {
                      const Var y0 = exp(x[0] * p[0]) * sin(x[1]) + log1p(x[2] * x[2]);
                      const Var y1 = select(x[2] > x[0], atan2(x[1], x[2]), x[0] / (1.0 + x[1] * x[1]));
                      if (x[0] < x[1]) return std::vector<Var>{y0, y1, x[2]};
                      return std::vector<Var>{y0, y1 - x[0], x[2]};
                  });
}

template <class Real> bool same_bits(Real a, Real b) {
    return std::bit_cast<std::uint64_t>(static_cast<double>(a)) ==
           std::bit_cast<std::uint64_t>(static_cast<double>(b));
}

template <class Real>
void check_jvps(const std::string& what, const Tape& tape, std::size_t points, std::size_t count,
                bool params_per_point, unsigned seed) {
    const std::size_t n = tape.input_count(), m = tape.output_count(), q = tape.param_count();
    const std::vector<Real> inputs = test::random_values<Real>(points * n, -1, 1, seed);
    const std::vector<Real> params =
        test::random_values<Real>((params_per_point ? points : 1) * q, 0.5, 2, seed + 1);
    // Unit, compressed (sums of units) and dense random directions.
    std::vector<Real> directions = test::random_values<Real>(count * n, -2, 2, seed + 2);
    for (std::size_t j = 0; j < n && count > 1; ++j) {
        directions[j] = Real(j == 0 ? 1 : 0);
        directions[n + j] = Real(j % 2 == 1 ? 1 : 0);
    }
    const Batch<Real> batch{points, inputs, params};
    Failures failures(backend().name + " " + precision_name<Real>() + " jvps of " + what + ", " +
                      std::to_string(points) + " points, " + std::to_string(count) + " directions");
    try {
        const auto evaluator = make_evaluator(tape);
        const Evaluation<Real> got = evaluator->jvps(batch, std::span<const Real>(directions), count);
        // The backend's jvp, one direction at a time for every point.
        std::vector<Real> tangents(points * n), results(points * m);
        Report jvp_report;
        for (std::size_t c = 0; c < count; ++c) {
            for (std::size_t p = 0; p < points; ++p)
                std::copy_n(directions.begin() + static_cast<std::ptrdiff_t>(c * n), n,
                            tangents.begin() + static_cast<std::ptrdiff_t>(p * n));
            jvp_report = evaluator->jvp(batch, std::span<const Real>(tangents), std::span<Real>(results));
            for (std::size_t p = 0; p < points; ++p) {
                for (std::size_t k = 0; k < m; ++k) {
                    const Real want = results[p * m + k];
                    const Real value = got.values[(p * count + c) * m + k];
                    if (!same_bits(value, want))
                        failures.add("point " + std::to_string(p) + " direction " + std::to_string(c) +
                                     " output " + std::to_string(k) + ": " + show(value) + ", jvp " +
                                     show(want));
                }
            }
        }
        if (count > 0 && got.report.diverged != jvp_report.diverged)
            failures.add("diverged " + std::to_string(got.report.diverged.size()) + " points, jvp " +
                         std::to_string(jvp_report.diverged.size()));
    } catch (const Error& error) {
        failures.add(std::string("threw: ") + error.what());
    }
}

TEST_CASE_TEMPLATE("jvps: each direction has the bits of jvp, on one, a few and many points", Real, double,
                   float) {
    for (const std::size_t count : {1, 2, 3, 4, 7, 8, 9, 16, 17}) {
        check_jvps<Real>("a guarded tape", guarded(), 1, count, false, 40 + static_cast<unsigned>(count));
        check_jvps<Real>("a guarded tape", guarded(), 3, count, true, 60 + static_cast<unsigned>(count));
    }
    check_jvps<Real>("a guarded tape", guarded(), 300, 5, true, 80);
    check_jvps<Real>("the Bratu residual (30 unknowns)", examples::bratu_tape(30), 1, 3, false, 81);
    check_jvps<Real>("the Bratu residual (30 unknowns)", examples::bratu_tape(30), 2, 3, true, 82);
    check_jvps<Real>("a guarded tape", guarded(), 0, 3, false, 83);
    check_jvps<Real>("a guarded tape", guarded(), 4, 0, false, 84);
}

TEST_CASE_TEMPLATE("jvps: wrong sizes are ShapeErrors", Real, double, float) {
    const Tape tape = guarded();
    const auto evaluator = make_evaluator(tape);
    const std::vector<Real> inputs(2 * 3, Real(0.25)), params(1, Real(1)), directions(2 * 3, Real(1));
    const Batch<Real> batch{2, inputs, params};
    std::vector<Real> results(2 * 2 * 3);
    CHECK_NOTHROW(evaluator->jvps(batch, std::span<const Real>(directions), 2, std::span<Real>(results)));
    std::vector<Real> short_results(results.size() - 1);
    CHECK_THROWS_AS(
        evaluator->jvps(batch, std::span<const Real>(directions), 2, std::span<Real>(short_results)),
        ShapeError);
    CHECK_THROWS_AS(evaluator->jvps(batch, std::span<const Real>(directions), 3, std::span<Real>(results)),
                    ShapeError);
    const std::vector<Real> short_inputs(5, Real(0.25));
    CHECK_THROWS_AS(evaluator->jvps(Batch<Real>{2, short_inputs, params}, std::span<const Real>(directions),
                                    2, std::span<Real>(results)),
                    ShapeError);
}

}  // namespace
}  // namespace tapevm::conformance
