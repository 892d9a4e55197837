// The backend's derivatives against its own values, independently of the reference VM:
// gradients against central differences of its forward values, hvp against central
// differences of its gradients (every op, at interior points of its domain, double), and
// forward mode against reverse mode (consistency.hpp, also run on every whole tape).
#include <cmath>
#include <string>

#include <doctest/doctest.h>

#include "backend.hpp"
#include "consistency.hpp"
#include "judge.hpp"
#include "modes.hpp"
#include "op_cases.hpp"
#include "tapevm/error.hpp"
#include "test_util.hpp"

namespace tapevm::conformance {
namespace {

constexpr std::size_t points_per_op = 24;
constexpr double step = 1e-6;
// Central differences in double with a relative step of 1e-6: truncation ~1e-12 f''',
// rounding ~1e-10 |f| / |f'|; 1e-6 relative to max(1, |value|) leaves room for both.
constexpr double gradient_tolerance = 1e-6;
constexpr double hessian_tolerance = 1e-5;

/// The points x +- h e_i for every point and coordinate: [point][coordinate][+, -][n].
std::vector<double> perturbed(const std::vector<double>& x, std::size_t n, std::vector<double>& steps) {
    const std::size_t points = x.size() / n;
    std::vector<double> out;
    steps.assign(points * n, 0.0);
    for (std::size_t p = 0; p < points; ++p) {
        for (std::size_t i = 0; i < n; ++i) {
            const double xi = x[p * n + i];
            const double up = xi + step * std::fmax(1.0, std::fabs(xi));
            const double down = xi - step * std::fmax(1.0, std::fabs(xi));
            steps[p * n + i] = up - down;  // the step actually taken, exactly
            for (const double moved : {up, down}) {
                for (std::size_t k = 0; k < n; ++k) out.push_back(k == i ? moved : x[p * n + k]);
            }
        }
    }
    return out;
}

void check_against_differences(const OpUnderTest& o) {
    const Tape tape = test::single_op_tape(o.op, o.exponent);
    const std::size_t n = arity(o.op);
    const auto evaluator = make_evaluator(tape);
    PointSet<double> base;
    base.inputs = interior_points(
        o.op, points_per_op,
        7000 + static_cast<std::uint64_t>(o.op) * 13 + static_cast<std::uint64_t>(o.exponent + 8));
    base.points = points_per_op;
    std::vector<double> steps;
    PointSet<double> moved;
    moved.inputs = perturbed(base.inputs, n, steps);
    moved.points = moved.inputs.size() / n;

    const auto values = evaluator->forward(moved.batch()).values;            // [p][i][+-]
    const auto gradients = evaluator->gradient(base.batch()).values;         // [p][n]
    const auto moved_gradients = evaluator->gradient(moved.batch()).values;  // [p][i][+-][n]
    // hvp with cotangent 1 along each e_i: [p][i] points, results [n] each.
    PointSet<double> repeated;
    std::vector<double> cotangents, directions;
    for (std::size_t p = 0; p < points_per_op; ++p) {
        for (std::size_t i = 0; i < n; ++i) {
            for (std::size_t k = 0; k < n; ++k) {
                repeated.inputs.push_back(base.inputs[p * n + k]);
                directions.push_back(k == i ? 1.0 : 0.0);
            }
            cotangents.push_back(1.0);
        }
    }
    repeated.points = points_per_op * n;
    const auto hvps =
        evaluator
            ->hvp(repeated.batch(), std::span<const double>(cotangents), std::span<const double>(directions))
            .values;

    Failures failures(backend().name + " f64 " + o.name() + " against central differences");
    const DescribePoint describe = describe_points(base, n, 0);
    for (std::size_t p = 0; p < points_per_op; ++p) {
        for (std::size_t i = 0; i < n; ++i) {
            const std::size_t pi = p * n + i;
            const double difference = (values[2 * pi] - values[2 * pi + 1]) / steps[pi];
            if (!test::close(gradients[pi], difference, gradient_tolerance)) {
                failures.add("gradient at point " + std::to_string(p) + " " + describe(p) + ", d/dx" +
                             std::to_string(i) + ": " + show(gradients[pi]) + ", central difference " +
                             show(difference));
            }
            for (std::size_t k = 0; k < n; ++k) {
                // d/dx_i of gradient_k: the Hessian's entry (k, i), column i of H e_i.
                const double second =
                    (moved_gradients[(2 * pi) * n + k] - moved_gradients[(2 * pi + 1) * n + k]) / steps[pi];
                const double hvp = hvps[pi * n + k];
                if (!test::close(hvp, second, hessian_tolerance)) {
                    failures.add("hvp at point " + std::to_string(p) + " " + describe(p) + ", direction e" +
                                 std::to_string(i) + ", element " + std::to_string(k) + ": " + show(hvp) +
                                 ", central difference of gradients " + show(second));
                }
            }
        }
    }
}

// Double only (float's rounding swamps a central difference); named <double> so that main()
// leaves it out, saying so, for a backend without float64.
TEST_CASE_TEMPLATE("every op: gradient and hvp against central differences of the backend's own results",
                   Real, double) {
    for (const OpUnderTest& o : ops_under_test()) {
        try {
            check_against_differences(o);
        } catch (const Error& error) {
            FAIL_CHECK(backend().name << " " << o.name() << " threw: " << error.what());
        }
    }
}

TEST_CASE_TEMPLATE("every op: forward mode agrees with reverse mode on the backend", Real, double, float) {
    for (const OpUnderTest& o : ops_under_test()) {
        const Tape tape = test::single_op_tape(o.op, o.exponent);
        PointSet<Real> set;
        set.inputs = random_points<Real>(o.op, 64, 9000 + static_cast<std::uint64_t>(o.op));
        set.points = 64;
        Failures failures(backend().name + " " + precision_name<Real>() + " " + o.name() +
                          " forward vs reverse");
        try {
            const auto evaluator = make_evaluator(tape);
            const Seeds<Real> seeds = make_seeds<Real>(set.points, arity(o.op), 1, 3);
            check_consistency(failures, evaluate_all(*evaluator, set, seeds), tape, seeds);
        } catch (const Error& error) {
            failures.add(std::string("threw: ") + error.what());
        }
    }
}

}  // namespace
}  // namespace tapevm::conformance
