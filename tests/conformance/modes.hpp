// Every mode of one evaluation: a batch and its seeds in, the results of forward, gradient,
// jacobian in forward and in reverse mode, jvp, vjp and hvp out; the same on the reference VM
// in double and in Real; and the comparison of the two, mode by mode.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "judge.hpp"
#include "tapevm/evaluator.hpp"
#include "tapevm/tape.hpp"

namespace tapevm::conformance {

/// A batch held in vectors (Batch only views them).
template <class Real> struct PointSet {
    std::size_t points = 0;
    std::vector<Real> inputs;  // [points][n_inputs]
    std::vector<Real> params;  // [points][n_params] or [n_params]
    Batch<Real> batch() const { return Batch<Real>{points, inputs, params}; }
};

/// The seeds of jvp, vjp and hvp for a batch.
template <class Real> struct Seeds {
    std::vector<Real> tangents;    // [points][n_inputs]     jvp
    std::vector<Real> cotangents;  // [points][n_outputs]    vjp, hvp
    std::vector<Real> directions;  // [points][n_inputs]     hvp
};

/// Seeds from a small set of exact values (1, -0.5, 2, 0.75, -3, and 0 to exercise the
/// zero-absorbing rule), varied over points and coordinates by `salt`.
template <class Real>
Seeds<Real> make_seeds(std::size_t points, std::size_t n_inputs, std::size_t n_outputs, std::size_t salt = 0);

/// The results of every mode. gradient is empty for tapes with several outputs.
template <class Real> struct Results {
    Evaluation<Real> forward, gradient, jacobian_forward, jacobian_reverse, jvp, vjp, hvp;
};

/// Every mode of `evaluator` on `points` with `seeds`.
template <class Real>
Results<Real> evaluate_all(const Evaluator& evaluator, const PointSet<Real>& points,
                           const Seeds<Real>& seeds);

template <class To, class From> std::vector<To> convert(const std::vector<From>& values) {
    return std::vector<To>(values.begin(), values.end());
}
template <class To, class From> PointSet<To> convert(const PointSet<From>& set) {
    return PointSet<To>{set.points, convert<To>(set.inputs), convert<To>(set.params)};
}
template <class To, class From> Seeds<To> convert(const Seeds<From>& seeds) {
    return Seeds<To>{convert<To>(seeds.tangents), convert<To>(seeds.cotangents),
                     convert<To>(seeds.directions)};
}

/// What the backend computed, and the reference VM in double and in Real, for one batch.
template <class Real> struct Comparison {
    Results<Real> got;
    Results<double> reference;
    Results<Real> reference_real;
    /// Where the backend may flush subnormals (Tolerances::subnormals_may_flush) and the
    /// batch or its seeds hold some: the reference on the batch and seeds with every
    /// subnormal flushed to a zero of its sign.
    bool has_flushed = false;
    Results<double> flushed;
    Results<Real> flushed_real;
};

/// Runs every mode on `evaluator` and on the reference VM (in double on the same points
/// converted to double, and in Real; also on flushed inputs, see Comparison).
template <class Real>
Comparison<Real> run_all(const Evaluator& evaluator, const PointSet<Real>& points, const Seeds<Real>& seeds);

/// Compares every mode of `c`: forward with `value_judge`, the derivative modes with
/// `derivative_judge`, and every mode's diverged points. Where the backend may flush
/// subnormals, a result the judge rejects is judged again against the reference with its
/// subnormal results flushed, and against the flushed-input reference (Comparison).
template <class Real>
void compare_all(Failures& failures, const Comparison<Real>& c, const Tape& tape,
                 const DescribePoint& describe, const ValueJudge& value_judge,
                 const ValueJudge& derivative_judge);

/// A derivative judge from a bound: matches the double reference (rounded to Real) or the
/// reference in Real. Against the reference in Real the bound widens by 4 times that
/// reference's own distance from the double one: where a tape is ill-conditioned in float
/// (BA's hvp loses 3 digits), two correct float evaluations differ by about as much as
/// either differs from the double result.
template <class Real> ValueJudge derivative_judge(ErrorBound bound) {
    return [bound](double got, double expected, double expected_real) {
        if (within(got, static_cast<double>(static_cast<Real>(expected)), bound)) return true;
        ErrorBound widened = bound;
        if (std::isfinite(expected) && std::isfinite(expected_real)) {
            widened.absolute += 4 * std::fabs(expected_real - expected);
        }
        return within(got, expected_real, widened);
    };
}

/// "(1.5, -0)" for point p of the set, with "; params" when it has parameters.
template <class Real>
DescribePoint describe_points(const PointSet<Real>& set, std::size_t n_inputs, std::size_t n_params);

}  // namespace tapevm::conformance
