// What "matches the reference" means, and how a mismatch is reported.
//
// Values of single ops: NaN matches NaN (any payload); an infinity matches only the same
// infinity; a zero matches a zero of the same sign unless the op is in
// Tolerances::unsigned_zeros; anything else matches within the op's ulp bound, counted in
// Real between the backend's value and the reference's double value rounded to Real.
//
// Derivatives and whole tapes: the same NaN and infinity rules (zeros of either sign are
// equal: the sign of a zero derivative is not part of the semantics), then an ErrorBound. For
// float, a result matches when it matches the double reference (rounded to float) or the
// reference VM run in float: the float reference evaluates the same formulas in float and is
// correct by definition, and where a formula cancels (tanh' = (1 - r)(1 + r) near r = 1,
// Rem's -trunc(a / b) at a quotient that rounds to an integer) only it shows what float
// arithmetic gives.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "backend.hpp"

namespace tapevm::conformance {

/// Units in the last place of Real between x and y (both finite; +0 and -0 are the same
/// point): the number of Real values from one to the other.
template <class Real> double ulp_distance(Real x, Real y);

/// x with its value and sign, shortest exact decimal ("-0", "nan", "1.5707963267948966").
std::string show(double x);

/// True when a value of `op` in Real matches the reference's double value.
template <class Real> bool value_matches(Real got, double expected, double ulps, bool signed_zero);

/// True when got is within `bound` of expected (NaN and infinity rules above).
bool within(double got, double expected, ErrorBound bound);

/// Collects the mismatches of one comparison and reports them to doctest: the first few
/// described in full, then their count, under a context line naming what was compared
/// (backend, precision, op or tape, mode).
class Failures {
public:
    explicit Failures(std::string context) : context_(std::move(context)) {}
    Failures(const Failures&) = delete;
    Failures& operator=(const Failures&) = delete;
    /// Reports to doctest: a failed check per described mismatch, and one check (an assertion
    /// even when it passes) that there were none.
    ~Failures();

    void add(const std::string& description);
    /// Printed once, after the mismatches, when there are any (a tape's listing).
    void note(std::string detail) { note_ = std::move(detail); }
    std::size_t count() const { return count_; }

private:
    std::string context_;
    std::size_t count_ = 0;
    std::vector<std::string> first_;
    std::string note_;
};

/// One point's inputs for a failure message: "(a, b)" or "(a, b; p0)".
using DescribePoint = std::function<std::string(std::size_t point)>;

/// Decides one result: the backend's, the reference's in double, the reference's in Real
/// (all three as doubles; the first and last convert back to Real exactly).
using ValueJudge = std::function<bool(double got, double expected, double expected_real)>;

/// Compares one mode's results, `per_point` values a point. `expected` is the reference in
/// double; `expected_real` the reference in Real (the same as `expected` for double).
/// `judge(got, expected, expected_real)` decides each value.
template <class Real>
void compare_results(Failures& failures, const std::string& mode, std::span<const Real> got,
                     std::span<const double> expected, std::span<const Real> expected_real,
                     std::size_t per_point, const DescribePoint& describe, const ValueJudge& judge);

/// Reports that two Reports differ (diverged points).
void compare_reports(Failures& failures, const std::string& mode, const std::vector<std::size_t>& got,
                     const std::vector<std::size_t>& expected);

/// "f64" or "f32".
template <class Real> const char* precision_name() { return sizeof(Real) == sizeof(double) ? "f64" : "f32"; }

}  // namespace tapevm::conformance
