// Every op of the op table as a conformance case: its accuracy class (which ulp bound its
// values get), the domain its random and finite-difference inputs are drawn from, and the
// inputs themselves: a grid of edge cases per precision plus seeded random points.
//
// op_cases lists every op in op-number order; a static_assert fails the build when an op is
// added to op_table.py without a row here, so no op can be forgotten.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tapevm/op.hpp"

namespace tapevm::conformance {

enum class Accuracy {
    leaf,            // Input, Const, Param: no formula (tested through whole tapes)
    exact,           // correctly rounded in IEEE arithmetic (Tolerances::arithmetic_ulp)
    transcendental,  // library functions (Tolerances::transcendental_ulp)
};

/// Where an op's derivative is smooth and its random inputs are interesting.
enum class Domain {
    any,              // (-3, 3) and every magnitude
    positive,         // first operand in (0, 5): Ln, Log2, Log10, Sqrt, Powf's base
    unit,             // first operand in (-1, 1): Asin, Acos, Atanh
    at_least_one,     // first operand in (1, 6): Acosh
    above_minus_one,  // first operand in (-1, 4): Ln1p
    moderate,         // first operand in (-1.4, 1.4): Tan (away from its poles)
    // Lgamma, Digamma: random points (and finite differences) in (0, 5) and positive magnitudes
    // only. On the negative axis the libraries' error is absolute next to the functions' zeros
    // (lgamma(-2.457...) = 0), so relative (ulp) bounds hold only away from them: the negative
    // axis is covered by the edge points (Lgamma's without those within 0.5 of a zero) and by
    // tests/gpu_math's absolute bound.
    gamma,
};

struct OpCase {
    Op op;
    Accuracy accuracy;
    Domain domain;
};

// clang-format off
inline constexpr std::array<OpCase, op_count> op_cases = {{
    {Op::Input, Accuracy::leaf, Domain::any},
    {Op::Const, Accuracy::leaf, Domain::any},
    {Op::Add, Accuracy::exact, Domain::any},
    {Op::Sub, Accuracy::exact, Domain::any},
    {Op::Mul, Accuracy::exact, Domain::any},
    {Op::Div, Accuracy::exact, Domain::any},
    {Op::Rem, Accuracy::exact, Domain::any},
    {Op::Powf, Accuracy::transcendental, Domain::positive},
    {Op::Atan2, Accuracy::transcendental, Domain::any},
    {Op::Hypot, Accuracy::transcendental, Domain::any},
    {Op::Max, Accuracy::exact, Domain::any},
    {Op::Min, Accuracy::exact, Domain::any},
    {Op::Neg, Accuracy::exact, Domain::any},
    {Op::Recip, Accuracy::exact, Domain::any},
    {Op::Sqrt, Accuracy::exact, Domain::positive},
    {Op::Cbrt, Accuracy::transcendental, Domain::any},
    {Op::Powi, Accuracy::transcendental, Domain::any},
    {Op::Exp, Accuracy::transcendental, Domain::any},
    {Op::Exp2, Accuracy::transcendental, Domain::any},
    {Op::Expm1, Accuracy::transcendental, Domain::any},
    {Op::Ln, Accuracy::transcendental, Domain::positive},
    {Op::Log2, Accuracy::transcendental, Domain::positive},
    {Op::Log10, Accuracy::transcendental, Domain::positive},
    {Op::Ln1p, Accuracy::transcendental, Domain::above_minus_one},
    {Op::Sin, Accuracy::transcendental, Domain::any},
    {Op::Cos, Accuracy::transcendental, Domain::any},
    {Op::Tan, Accuracy::transcendental, Domain::moderate},
    {Op::Asin, Accuracy::transcendental, Domain::unit},
    {Op::Acos, Accuracy::transcendental, Domain::unit},
    {Op::Atan, Accuracy::transcendental, Domain::any},
    {Op::Sinh, Accuracy::transcendental, Domain::any},
    {Op::Cosh, Accuracy::transcendental, Domain::any},
    {Op::Tanh, Accuracy::transcendental, Domain::any},
    {Op::Asinh, Accuracy::transcendental, Domain::any},
    {Op::Acosh, Accuracy::transcendental, Domain::at_least_one},
    {Op::Atanh, Accuracy::transcendental, Domain::unit},
    {Op::Abs, Accuracy::exact, Domain::any},
    {Op::Signum, Accuracy::exact, Domain::any},
    {Op::Floor, Accuracy::exact, Domain::any},
    {Op::Ceil, Accuracy::exact, Domain::any},
    {Op::Round, Accuracy::exact, Domain::any},
    {Op::Trunc, Accuracy::exact, Domain::any},
    {Op::Fract, Accuracy::exact, Domain::any},
    {Op::Lt, Accuracy::exact, Domain::any},
    {Op::Le, Accuracy::exact, Domain::any},
    {Op::Gt, Accuracy::exact, Domain::any},
    {Op::Ge, Accuracy::exact, Domain::any},
    {Op::Eq, Accuracy::exact, Domain::any},
    {Op::Ne, Accuracy::exact, Domain::any},
    {Op::Select, Accuracy::exact, Domain::any},
    {Op::Fma, Accuracy::exact, Domain::any},
    {Op::Param, Accuracy::leaf, Domain::any},
    {Op::Erf, Accuracy::transcendental, Domain::any},
    {Op::Erfc, Accuracy::transcendental, Domain::any},
    {Op::Lgamma, Accuracy::transcendental, Domain::gamma},
    {Op::Digamma, Accuracy::transcendental, Domain::gamma},
    {Op::Copysign, Accuracy::exact, Domain::any},
    {Op::LogSumExp, Accuracy::transcendental, Domain::any},
}};
// clang-format on

constexpr bool op_cases_in_op_order() {
    for (std::uint32_t number = 0; number < op_count; ++number) {
        if (static_cast<std::uint32_t>(op_cases[number].op) != number) return false;
    }
    return true;
}
static_assert(op_cases_in_op_order(), "op_cases must list every op of op_table.py, in op-number order");
static_assert(op_cases.size() == op_count, "an op was added to op_table.py: give it a row in op_cases");

inline const OpCase& op_case(Op op) { return op_cases[static_cast<std::uint32_t>(op)]; }

/// The exponents Powi is tested with (one tape each).
inline constexpr std::array<std::int32_t, 11> powi_exponents = {-3, -2, -1, 0, 1, 2, 3, 4, 5, 13, -8};

/// An op as a test case: the op and, for Powi, its exponent. "Sin", "Powi(-3)".
struct OpUnderTest {
    Op op;
    std::int32_t exponent = 0;
    std::string name() const;
};

/// Every op with a formula (leaves excluded), Powi once per exponent.
std::vector<OpUnderTest> ops_under_test();

/// Edge-case points for `op` in precision Real, `arity(op)` values per point (row-major):
/// signed zeros, +-1, infinities, NaN, subnormals, the extremes, huge and tiny values, the
/// domain boundaries of asin/acos/atanh/acosh/log/log1p/sqrt (and the values next to them),
/// overflow thresholds of exp, half-integers for rounding, Max/Min ties, pow with negative,
/// zero and infinite bases and integer, non-integer and infinite exponents, Fma's exactness.
/// Binary ops get a cross product of a smaller set plus targeted pairs, ternary ops a cross
/// product of a smaller set still. The special functions (Erf, Erfc, Lgamma, Digamma) also get
/// their piece boundaries, tails and underflow thresholds, the zeros of digamma and lgamma on
/// the positive axis and lgamma's overflow; LogSumExp gets huge differences and infinities.
template <class Real> std::vector<Real> edge_points(Op op);

/// `points` seeded random points for `op`: each operand from a mix of (-3, 3), every
/// magnitude (1e-30 .. 1e30, random sign) and the op's domain.
template <class Real> std::vector<Real> random_points(Op op, std::size_t points, std::uint64_t seed);

/// `points` seeded random points inside the op's domain, away from its boundaries, kinks and
/// jumps (for finite differences): (-3, 3) or the Domain's interval.
std::vector<double> interior_points(Op op, std::size_t points, std::uint64_t seed);

}  // namespace tapevm::conformance
