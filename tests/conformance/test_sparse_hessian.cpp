// Sparse Hessians (tapevm/sparse_hessian.hpp) on the backend: one hvp per colour gives the
// Hessian's entries within the reference's bounds (the reference VM's dense Hessian, in double
// and, for float, run in float), exactly symmetric, zero nowhere the reference is nonzero
// outside the pattern; with cotangents on a two-output tape and per-point parameters; the shape
// errors.
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
#include "tapevm/sparse_hessian.hpp"
#include "tapevm/var.hpp"

namespace tapevm::conformance {
namespace {

// Two outputs over six inputs in a chain: a banded Hessian of the weighted sum.
Tape chain() {
    return record(6, [](std::span<const Var> x) {
        Var first = 0.0, second = 0.0;
        for (int i = 0; i + 1 < 6; ++i) {
            first = first + sin(x[i] * x[i + 1]);
            second = second + exp(0.3 * x[i]) * x[i + 1];
        }
        return std::vector<Var>{first, second};
    });
}

template <class Real>
void check_sparse(const std::string& what, const Tape& tape, std::size_t points, bool params_per_point,
                  unsigned seed) {
    const std::size_t n = tape.input_count(), m = tape.output_count(), q = tape.param_count();
    const std::vector<double> inputs = test::random_values<double>(points * n, -1, 1, seed);
    const std::vector<double> params =
        test::random_values<double>((params_per_point ? points : 1) * q, 0.5, 2, seed + 1);
    const std::vector<double> weights =
        m == 1 ? std::vector<double>{} : test::random_values<double>(points * m, -2, 2, seed + 2);
    const std::vector<Real> inputs_real(inputs.begin(), inputs.end()),
        params_real(params.begin(), params.end()), weights_real(weights.begin(), weights.end());
    const Batch<Real> batch{points, inputs_real, params_real};
    Failures failures(backend().name + " " + precision_name<Real>() + " sparse Hessian of " + what);
    try {
        const SparseHessianPlan plan = plan_sparse_hessian(tape);
        const auto evaluator = make_evaluator(tape);
        const Evaluation<Real> sparse =
            sparse_hessian(*evaluator, batch, plan, std::span<const Real>(weights_real));
        const reference::Vm oracle(tape);
        const std::vector<double> seen_inputs(inputs_real.begin(), inputs_real.end());
        const std::vector<double> seen_params(params_real.begin(), params_real.end());
        const std::vector<double> seen_weights(weights_real.begin(), weights_real.end());
        const Evaluation<double> want = hessian(oracle, Batch<double>{points, seen_inputs, seen_params},
                                                std::span<const double>(seen_weights));
        // In float, the reference VM's own sparse Hessian in float matches too: the same hvps
        // with the same seeds, evaluated in float (judge.hpp).
        const Evaluation<Real> want_real =
            sparse_hessian(oracle, batch, plan, std::span<const Real>(weights_real));
        const ErrorBound bound = tolerances<Real>().tapes;
        const std::size_t nnz = plan.pattern.nonzeros();
        for (std::size_t p = 0; p < points; ++p) {
            for (std::size_t i = 0; i < n; ++i) {
                for (std::size_t j = 0; j < n; ++j) {
                    const std::size_t at = (p * n + i) * n + j;
                    if (!plan.pattern.contains(i, j) && want.values[at] != 0.0)
                        failures.add("point " + std::to_string(p) + " entry (" + std::to_string(i) + ", " +
                                     std::to_string(j) + ") missing from the pattern, reference " +
                                     show(want.values[at]));
                }
                for (std::size_t k = plan.pattern.row_starts[i]; k < plan.pattern.row_starts[i + 1]; ++k) {
                    const std::size_t j = plan.pattern.columns[k];
                    const std::size_t at = (p * n + i) * n + j;
                    const Real value = sparse.values[p * nnz + k];
                    const std::string where = "point " + std::to_string(p) + " entry (" + std::to_string(i) +
                                              ", " + std::to_string(j) + "): ";
                    if (!within(static_cast<double>(value), want.values[at], bound) &&
                        !within(static_cast<double>(value),
                                static_cast<double>(want_real.values[p * nnz + k]), bound))
                        failures.add(where + show(value) + ", reference " + show(want.values[at]));
                    // (j, i): the same bits.
                    std::size_t mirror = plan.pattern.row_starts[j];
                    while (plan.pattern.columns[mirror] != i) ++mirror;
                    if (std::bit_cast<std::uint64_t>(static_cast<double>(value)) !=
                        std::bit_cast<std::uint64_t>(static_cast<double>(sparse.values[p * nnz + mirror])))
                        failures.add(where + "not symmetric");
                }
            }
        }
    } catch (const Error& error) {
        failures.add(std::string("threw: ") + error.what());
    }
}

#if TAPEVM_HAVE_COLPACK
TEST_CASE_TEMPLATE("sparse Hessians: one hvp per colour against the reference VM's dense Hessians", Real,
                   double, float) {
    check_sparse<Real>("rosenbrock16", examples::example_tape("rosenbrock16"), 5, false, 31);
    check_sparse<Real>("a two-output chain with cotangents", chain(), 7, false, 32);
    check_sparse<Real>("Bratu (10 residuals, weighted; lambda per point)", examples::bratu_tape(10), 4, true,
                       33);
}

TEST_CASE_TEMPLATE("sparse Hessians: wrong sizes, foreign plans and bad colourings are errors", Real, double,
                   float) {
    const Tape tape = chain();
    const auto evaluator = make_evaluator(tape);
    const SparseHessianPlan plan = plan_sparse_hessian(tape);
    const std::vector<Real> inputs(2 * 6, Real(0.25)), weights(2 * 2, Real(1));
    const Batch<Real> batch{2, inputs, {}};
    std::vector<Real> values(2 * plan.pattern.nonzeros());
    CHECK_NOTHROW(
        sparse_hessian(*evaluator, batch, std::span<const Real>(weights), plan, std::span<Real>(values)));
    std::vector<Real> short_values(values.size() - 1);
    CHECK_THROWS_AS(sparse_hessian(*evaluator, batch, std::span<const Real>(weights), plan,
                                   std::span<Real>(short_values)),
                    ShapeError);
    // Two outputs need cotangents (empty means 1 only for one output), one per output and point.
    CHECK_THROWS_AS(sparse_hessian(*evaluator, batch, std::span<const Real>(), plan, std::span<Real>(values)),
                    ShapeError);
    CHECK_THROWS_AS(sparse_hessian(*evaluator, batch, std::span<const Real>(weights).first(3), plan,
                                   std::span<Real>(values)),
                    ShapeError);
    CHECK_THROWS_AS(sparse_hessian(*evaluator, batch, plan_sparse_hessian(examples::bratu_tape(4)),
                                   std::span<const Real>(weights)),
                    ShapeError);
    SparseHessianPlan bad = plan;
    std::fill(bad.colouring.colour.begin(), bad.colouring.colour.end(), 0u);
    CHECK_THROWS_AS(sparse_hessian(*evaluator, batch, bad, std::span<const Real>(weights)), Error);
}
#endif

}  // namespace
}  // namespace tapevm::conformance
