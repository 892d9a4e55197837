// The cross-backend conformance suite: one set of tests, written once against
// tapevm::Evaluator and compiled into one executable per backend. A backend is one file,
// backend_<name>.cpp, defining backend_under_test(): how to make its evaluator for a tape and
// how closely it must follow the reference VM (the oracle) in each precision.
//
// Reading order: backend.hpp (this), op_cases.hpp (every op, its accuracy class and its
// inputs), judge.hpp (what "matches the reference" means), modes.hpp (every mode of one
// evaluation), consistency.hpp (modes against each other), then the suites test_*.cpp and
// main.cpp (skips, exit codes).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "tapevm/evaluator.hpp"
#include "tapevm/op.hpp"
#include "tapevm/tape.hpp"

namespace tapevm::conformance {

/// A bound on the error of a derivative (or of a whole tape's result) against the reference:
/// |got - expected| <= relative * |expected| + absolute. Zero and zero: exact.
struct ErrorBound {
    double relative = 0.0;
    double absolute = 0.0;
};

/// How closely a backend follows the reference VM in one precision. Values of single ops are
/// measured in ulps of that precision against the reference VM's double result rounded to it
/// (the correctly rounded result, up to the reference's own error in double); derivatives and
/// whole tapes by an ErrorBound against the reference in double or, for float, against the
/// reference VM run in float (whichever is closer: both are correct evaluations of the same
/// formulas).
struct Tolerances {
    /// Values of the ops exact in IEEE arithmetic: Add Sub Mul Div Rem Max Min Neg Recip Sqrt
    /// Abs Signum Floor Ceil Round Trunc Fract, comparisons, Select, Fma.
    double arithmetic_ulp = 0.0;
    /// Values of the other ops: Powf Atan2 Hypot Cbrt Powi Exp ... Atanh.
    double transcendental_ulp = 0.0;
    /// Per-op exceptions to the two bounds above (documented where they are set).
    std::map<Op, double> value_ulp;
    /// Derivatives of single ops in every mode (gradient, jacobian, jvp, vjp, hvp).
    ErrorBound derivatives;
    std::map<Op, ErrorBound> derivative_overrides;
    /// Whole tapes (examples, random trees, batches): values and derivatives.
    ErrorBound tapes;
    /// Ops whose zero results may have either sign (all others: the reference's sign).
    std::set<Op> unsigned_zeros;
    /// The backend may flush subnormal numbers to zero (a GPU whose float controls cannot
    /// preserve them: set from the device's properties, never assumed). A result then also
    /// matches the reference evaluated with every subnormal input, parameter and seed
    /// replaced by a zero of its sign, and a subnormal expected result also matches that
    /// zero (modes.hpp). false: subnormals are numbers like any other.
    bool subnormals_may_flush = false;

    double value_ulp_for(Op op) const;
    ErrorBound derivative_bound_for(Op op) const;
};

struct BackendUnderTest {
    std::string name;
    /// An evaluator of `tape`. May throw DeviceUnavailable (the executable then exits 77).
    std::function<std::unique_ptr<Evaluator>(const Tape&)> make;
    Tolerances f64, f32;
    /// false: every double request must throw Unsupported (tested), and the suite's double
    /// cases are skipped, saying so.
    bool has_f64 = true;
    /// Why this backend cannot run on this machine (an ISA the CPU lacks, no device), or
    /// nothing. The executable then prints the reason and exits 77 (Meson's "skipped").
    std::function<std::optional<std::string>()> unavailable;
    /// Problems noticed during the run that are not results (validation-layer messages):
    /// called after the tests; any message fails the run.
    std::function<std::vector<std::string>()> problems_after_run;
};

/// Defined in backend_<name>.cpp: the backend this executable tests.
BackendUnderTest backend_under_test();

/// backend_under_test(), made once (main.cpp).
const BackendUnderTest& backend();

/// The backend's evaluator for `tape`.
std::unique_ptr<Evaluator> make_evaluator(const Tape& tape);

/// The tolerances for Real (double: f64, float: f32).
template <class Real> const Tolerances& tolerances() {
    if constexpr (sizeof(Real) == sizeof(double)) {
        return backend().f64;
    } else {
        return backend().f32;
    }
}

}  // namespace tapevm::conformance
