// Forward mode against reverse mode on the backend itself, without the reference: the
// Jacobian in forward mode equals the one in reverse mode, the gradient its row, jvp J t and
// vjp c J (where the Jacobian and the product are finite; the zero-absorbing rule makes
// NaN and infinite partials compose differently in a product than inside the tape).
#pragma once

#include "judge.hpp"
#include "modes.hpp"

namespace tapevm::conformance {

/// How far the modes may drift apart: they sum the same terms in other orders (forward
/// mode along each input, reverse mode along each output), so on a tape with cancellation the
/// difference is a few roundings of the largest intermediate term, not of the result.
template <class Real> ErrorBound consistency_bound() {
    return sizeof(Real) == sizeof(double) ? ErrorBound{1e-9, 1e-9} : ErrorBound{2e-3, 2e-3};
}

/// Checks the modes in `got` against each other (`seeds` are those `got` was computed with).
template <class Real>
void check_consistency(Failures& failures, const Results<Real>& got, const Tape& tape,
                       const Seeds<Real>& seeds);

}  // namespace tapevm::conformance
