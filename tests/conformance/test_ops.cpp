// Every op, every mode, in double and float, against the reference VM: a tape of the single op
// evaluated on the op's edge-case grid and on seeded random points (op_cases.hpp). Values
// within the op's ulp bound of the reference's double result rounded to the precision,
// derivatives within the backend's ErrorBound (judge.hpp), diverged points equal.
#include <string>

#include <doctest/doctest.h>

#include "backend.hpp"
#include "judge.hpp"
#include "modes.hpp"
#include "op_cases.hpp"
#include "tapevm/error.hpp"
#include "test_util.hpp"

namespace tapevm::conformance {
namespace {

constexpr std::size_t random_points_per_op = 256;

/// The edge cases of `op` followed by its random points.
template <class Real> PointSet<Real> op_points(const OpUnderTest& o) {
    PointSet<Real> set;
    set.inputs = edge_points<Real>(o.op);
    const std::uint64_t seed =
        1000 + static_cast<std::uint64_t>(o.op) * 31 + static_cast<std::uint64_t>(o.exponent + 8);
    const auto random = random_points<Real>(o.op, random_points_per_op, seed);
    set.inputs.insert(set.inputs.end(), random.begin(), random.end());
    set.points = set.inputs.size() / arity(o.op);
    return set;
}

template <class Real> void check_op(const OpUnderTest& o) {
    const Tolerances& tolerances = conformance::tolerances<Real>();
    const Tape tape = test::single_op_tape(o.op, o.exponent);
    const PointSet<Real> set = op_points<Real>(o);
    const Seeds<Real> seeds = make_seeds<Real>(set.points, arity(o.op), 1, static_cast<std::size_t>(o.op));
    Failures failures(backend().name + " " + precision_name<Real>() + " " + o.name());
    try {
        const auto evaluator = make_evaluator(tape);
        const Comparison<Real> c = run_all(*evaluator, set, seeds);
        const double ulps = tolerances.value_ulp_for(o.op);
        const bool signed_zero = tolerances.unsigned_zeros.count(o.op) == 0;
        const ValueJudge values = [ulps, signed_zero](double got, double expected, double) {
            return value_matches<Real>(static_cast<Real>(got), expected, ulps, signed_zero);
        };
        compare_all(failures, c, tape, describe_points(set, arity(o.op), 0), values,
                    derivative_judge<Real>(tolerances.derivative_bound_for(o.op)));
    } catch (const Error& error) {
        failures.add(std::string("threw: ") + error.what());
    }
}

TEST_CASE_TEMPLATE("every op on edge cases and random points, every mode, against the reference VM", Real,
                   double, float) {
    const auto ops = ops_under_test();
    // Every op with a formula is here (op_cases.hpp's static_assert covers every op number).
    std::size_t formula_ops = 0;
    for (const OpCase& c : op_cases) formula_ops += c.accuracy == Accuracy::leaf ? 0 : 1;
    CHECK(ops.size() == formula_ops - 1 + powi_exponents.size());
    for (const OpUnderTest& o : ops) check_op<Real>(o);
}

// Input, Param and Const have no formula: a tape that outputs them directly (and one product,
// so a parameter and a constant meet a derivative), with parameters per point and shared.
TEST_CASE_TEMPLATE("leaves: inputs, parameters and constants", Real, double, float) {
    TapeParts parts;
    parts.inputs = 2;
    parts.params = 2;
    parts.constants = {0.5, -0.0, std::numeric_limits<double>::infinity(),
                       std::numeric_limits<double>::quiet_NaN(), 1e300};
    parts.instructions = {
        {Op::Input, 0, 0, 0}, {Op::Input, 1, 0, 0}, {Op::Param, 0, 0, 0}, {Op::Param, 1, 0, 0}};
    for (std::uint32_t k = 0; k < 5; ++k) parts.instructions.push_back({Op::Const, k, 0, 0});
    parts.instructions.push_back({Op::Mul, 1, 2, 0});  // x1 * p0
    parts.instructions.push_back({Op::Mul, 0, 4, 0});  // x0 * 0.5
    parts.outputs = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 1};
    const Tape tape(parts);
    const auto evaluator = make_evaluator(tape);
    for (const bool per_point : {true, false}) {
        PointSet<Real> set;
        set.points = 5;
        set.inputs = {Real(1),
                      Real(-2),
                      Real(0),
                      Real(-0.0),
                      Real(3.5),
                      Real(1e30),
                      std::numeric_limits<Real>::infinity(),
                      std::numeric_limits<Real>::quiet_NaN(),
                      Real(0.25),
                      Real(-7)};
        set.params = per_point ? std::vector<Real>{Real(2), Real(-1), Real(0), Real(4),   Real(-0.0),
                                                   Real(1), Real(8),  Real(2), Real(0.5), Real(0.5)}
                               : std::vector<Real>{Real(3), Real(-0.5)};
        Failures failures(backend().name + " " + precision_name<Real>() + " leaves, params " +
                          (per_point ? "per point" : "shared"));
        const Comparison<Real> c = run_all(*evaluator, set, make_seeds<Real>(5, 2, tape.output_count()));
        const ValueJudge exact = [](double got, double expected, double) {
            return value_matches<Real>(static_cast<Real>(got), expected, 0.0, true);
        };
        compare_all(failures, c, tape, describe_points(set, 2, 2), exact,
                    derivative_judge<Real>(tolerances<Real>().tapes));
    }
}

}  // namespace
}  // namespace tapevm::conformance
