// The reference VM: a scalar interpreter that evaluates a tape one point at a time, in
// double (the oracle every other backend is tested against) or float. Straightforward by
// design: values, then tangents or adjoints, with the op table's formulas and nothing else.
#pragma once

#include <span>

#include "tapevm/batch.hpp"
#include "tapevm/tape.hpp"

namespace tapevm::reference {

/// Evaluates one tape over batches of points (layouts in batch.hpp). Holds its own copy of
/// the tape; const member functions may run from several threads at once.
class Vm {
public:
    explicit Vm(Tape tape);

    const Tape& tape() const { return tape_; }

    /// outputs [points][n_outputs]
    template <class Real> Report forward(const Batch<Real>& batch, std::span<Real> outputs) const;

    /// gradients [points][n_inputs]; the tape must have exactly one output (else
    /// Unsupported: use vjp or jacobian).
    template <class Real> Report gradient(const Batch<Real>& batch, std::span<Real> gradients) const;

    /// jacobians [points][n_outputs][n_inputs]
    template <class Real>
    Report jacobian(const Batch<Real>& batch, std::span<Real> jacobians,
                    JacobianMode mode = JacobianMode::automatic) const;

    /// Jacobian-vector products: tangents [points][n_inputs] -> results [points][n_outputs]
    template <class Real>
    Report jvp(const Batch<Real>& batch, std::span<const Real> tangents, std::span<Real> results) const;

    /// Vector-Jacobian products: cotangents [points][n_outputs] -> results [points][n_inputs]
    template <class Real>
    Report vjp(const Batch<Real>& batch, std::span<const Real> cotangents, std::span<Real> results) const;

    /// Hessian-vector products (forward over reverse): results [points][n_inputs] =
    /// sum_k cotangents[k] * Hessian(output k) * directions.
    template <class Real>
    Report hvp(const Batch<Real>& batch, std::span<const Real> cotangents, std::span<const Real> directions,
               std::span<Real> results) const;

private:
    Tape tape_;
};

}  // namespace tapevm::reference
