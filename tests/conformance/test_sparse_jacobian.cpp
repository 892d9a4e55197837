// Sparse Jacobians (tapevm/sparse.hpp) on the backend: the compressed evaluation (one jvp per
// colour) gives the same bits as the backend's own dense forward-mode Jacobian on every
// nonzero, agrees with the reference VM, and the pattern misses no entry that is nonzero
// there; shared and per-point parameters; the shape errors.
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
#include "tapevm/reference.hpp"
#include "tapevm/sparse.hpp"
#include "tapevm/var.hpp"

namespace tapevm::conformance {
namespace {

Tape bratu(std::size_t n) { return examples::bratu_tape(n); }

// Outputs through ops whose partials vanish (a comparison, Select's condition, floor) and a
// product that ties inputs 0 and 4; input 5 reaches nothing.
Tape mixed() {
    return record(6, [](std::span<const Var> x) {
        const Var chosen = select(x[2] > x[3], x[1] * x[1], sin(x[0]));
        return std::vector<Var>{chosen, x[0] * x[4] + floor(x[3]), hypot(x[2], x[3])};
    });
}

template <class Real>
void check_sparse(const std::string& what, const Tape& tape, std::size_t points, bool params_per_point,
                  std::size_t expected_colours, unsigned seed) {
    const std::size_t n = tape.input_count(), m = tape.output_count(), q = tape.param_count();
    const std::vector<double> inputs = test::random_values<double>(points * n, -1, 1, seed);
    const std::vector<double> params =
        test::random_values<double>((params_per_point ? points : 1) * q, 0.5, 2, seed + 1);
    const std::vector<Real> inputs_real(inputs.begin(), inputs.end()),
        params_real(params.begin(), params.end());
    const Batch<Real> batch{points, inputs_real, params_real};
    Failures failures(backend().name + " " + precision_name<Real>() + " sparse Jacobian of " + what);
    try {
        const SparseJacobianPlan plan = plan_sparse_jacobian(tape);
        if (expected_colours > 0 && plan.colouring.colours != expected_colours)
            failures.add("colours " + std::to_string(plan.colouring.colours) + ", expected " +
                         std::to_string(expected_colours));
        const auto evaluator = make_evaluator(tape);
        const Evaluation<Real> sparse = sparse_jacobian(*evaluator, batch, plan);
        const std::size_t nnz = plan.pattern.nonzeros();
        // Prepared once, evaluated twice: the same bits as sparse_jacobian.
        const PreparedSparseJacobian prepared(tape, plan);
        for (int call = 0; call < 2; ++call) {
            std::vector<Real> again(points * nnz);
            const Report report = prepared.evaluate(*evaluator, batch, std::span<Real>(again));
            if (report.diverged != sparse.report.diverged) failures.add("prepared: another report");
            for (std::size_t k = 0; k < again.size(); ++k) {
                if (std::bit_cast<std::uint64_t>(static_cast<double>(again[k])) !=
                    std::bit_cast<std::uint64_t>(static_cast<double>(sparse.values[k])))
                    failures.add("prepared: value " + std::to_string(k) + " " + show(again[k]) +
                                 ", sparse_jacobian " + show(sparse.values[k]));
            }
        }
        std::vector<Real> dense(points * m * n);
        evaluator->jacobian(batch, std::span<Real>(dense), JacobianMode::forward);
        const reference::Vm oracle(tape);
        // The reference in double at the points the backend sees (rounded to Real).
        const std::vector<double> seen_inputs(inputs_real.begin(), inputs_real.end());
        const std::vector<double> seen_params(params_real.begin(), params_real.end());
        const Evaluation<double> want = oracle.jacobian(Batch<double>{points, seen_inputs, seen_params});
        // In float, the reference VM run in float matches too (judge.hpp).
        const Evaluation<Real> want_real = oracle.jacobian(batch);
        const ErrorBound bound = tolerances<Real>().tapes;
        for (std::size_t p = 0; p < points; ++p) {
            for (std::size_t row = 0; row < m; ++row) {
                for (std::size_t col = 0; col < n; ++col) {
                    const std::string where = "point " + std::to_string(p) + " entry (" +
                                              std::to_string(row) + ", " + std::to_string(col) + "): ";
                    const std::size_t at = (p * m + row) * n + col;
                    if (!plan.pattern.contains(row, col)) {
                        if (want.values[at] != 0.0)
                            failures.add(where + "missing from the pattern, reference " +
                                         show(want.values[at]));
                    }
                }
                for (std::size_t k = plan.pattern.row_starts[row]; k < plan.pattern.row_starts[row + 1];
                     ++k) {
                    const std::size_t col = plan.pattern.columns[k];
                    const std::size_t at = (p * m + row) * n + col;
                    const Real value = sparse.values[p * nnz + k];
                    const std::string where = "point " + std::to_string(p) + " entry (" +
                                              std::to_string(row) + ", " + std::to_string(col) + "): ";
                    if (std::bit_cast<std::uint64_t>(static_cast<double>(value)) !=
                        std::bit_cast<std::uint64_t>(static_cast<double>(dense[at])))
                        failures.add(where + show(value) + ", the dense forward Jacobian " + show(dense[at]));
                    if (!within(static_cast<double>(value), want.values[at], bound) &&
                        !within(static_cast<double>(value), static_cast<double>(want_real.values[at]), bound))
                        failures.add(where + show(value) + ", reference " + show(want.values[at]));
                }
            }
        }
    } catch (const Error& error) {
        failures.add(std::string("threw: ") + error.what());
    }
}

#if TAPEVM_HAVE_COLPACK
TEST_CASE_TEMPLATE("sparse Jacobians: compressed jvps equal the dense forward Jacobian on the nonzeros", Real,
                   double, float) {
    // Tridiagonal: three colours whatever n.
    check_sparse<Real>("Bratu (40 unknowns, shared lambda)", bratu(40), 5, false, 3, 21);
    check_sparse<Real>("Bratu (12 unknowns, lambda per point)", bratu(12), 7, true, 3, 22);
    check_sparse<Real>("a tape through comparisons, select and floor", mixed(), 9, false, 0, 23);
}

TEST_CASE_TEMPLATE("sparse Jacobians: wrong sizes and foreign plans are errors", Real, double, float) {
    const Tape tape = bratu(6);
    const auto evaluator = make_evaluator(tape);
    const SparseJacobianPlan plan = plan_sparse_jacobian(tape);
    REQUIRE(plan.pattern.nonzeros() == 6 + 2 * 5);
    const std::vector<Real> inputs(2 * 6, Real(0.25)), params(1, Real(1));
    const Batch<Real> batch{2, inputs, params};
    std::vector<Real> values(2 * plan.pattern.nonzeros());
    CHECK_NOTHROW(sparse_jacobian(*evaluator, batch, plan, std::span<Real>(values)));
    std::vector<Real> short_values(values.size() - 1);
    CHECK_THROWS_AS(sparse_jacobian(*evaluator, batch, plan, std::span<Real>(short_values)), ShapeError);
    // Another tape's plan: other rows and columns.
    CHECK_THROWS_AS(
        sparse_jacobian(*evaluator, batch, plan_sparse_jacobian(bratu(5)), std::span<Real>(values)),
        ShapeError);
    // A colouring that puts two columns of one row together, or misses a column.
    SparseJacobianPlan bad = plan;
    bad.colouring.colour[1] = bad.colouring.colour[0];
    CHECK_THROWS_AS(sparse_jacobian(*evaluator, batch, bad, std::span<Real>(values)), Error);
    bad = plan;
    bad.colouring.colour.pop_back();
    CHECK_THROWS_AS(sparse_jacobian(*evaluator, batch, bad, std::span<Real>(values)), Error);
    // A batch of no points is empty, not an error.
    CHECK(sparse_jacobian(*evaluator, Batch<Real>{0, {}, params}, plan).values.empty());
    // Prepared: the same checks, once at construction and per call.
    const PreparedSparseJacobian prepared(tape, plan);
    CHECK_NOTHROW(prepared.evaluate(*evaluator, batch, std::span<Real>(values)));
    CHECK_THROWS_AS(prepared.evaluate(*evaluator, batch, std::span<Real>(short_values)), ShapeError);
    CHECK_THROWS_AS(PreparedSparseJacobian(tape, plan_sparse_jacobian(bratu(5))), ShapeError);
    bad = plan;
    bad.colouring.colour[1] = bad.colouring.colour[0];
    CHECK_THROWS_AS(PreparedSparseJacobian(tape, bad), Error);
    const auto other = make_evaluator(bratu(5));
    const std::vector<Real> other_inputs(2 * 5, Real(0.25));
    CHECK_THROWS_AS(prepared.evaluate(*other, Batch<Real>{2, other_inputs, params}, std::span<Real>(values)),
                    ShapeError);
}
#else
TEST_CASE("sparse Jacobians: without ColPack, colouring throws Unsupported") {
    CHECK_THROWS_AS(plan_sparse_jacobian(bratu(6)), Unsupported);
}
#endif

}  // namespace
}  // namespace tapevm::conformance
