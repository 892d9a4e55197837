// The reference VM: a scalar interpreter that evaluates a tape one point at a time, in
// double (the oracle every other backend is tested against) or float. Straightforward by
// design: values, then tangents or adjoints, with the op table's formulas and nothing else.
#pragma once

#include <span>
#include <string>

#include "tapevm/batch.hpp"
#include "tapevm/evaluator.hpp"
#include "tapevm/tape.hpp"

namespace tapevm::reference {

/// Evaluates one tape over batches of points (layouts in batch.hpp, operations in
/// evaluator.hpp). Holds its own copy of the tape; const member functions may run from
/// several threads at once.
class Vm final : public EvaluatorBase<Vm> {
public:
    explicit Vm(Tape tape);

    const Tape& tape() const override { return tape_; }
    std::string name() const override;

private:
    friend class EvaluatorBase<Vm>;

    template <class Real> Report forward_impl(const Batch<Real>& batch, std::span<Real> outputs) const;
    template <class Real> Report gradient_impl(const Batch<Real>& batch, std::span<Real> gradients) const;
    template <class Real>
    Report jacobian_impl(const Batch<Real>& batch, std::span<Real> jacobians, JacobianMode mode) const;
    template <class Real>
    Report jvp_impl(const Batch<Real>& batch, std::span<const Real> tangents, std::span<Real> results) const;
    template <class Real>
    Report vjp_impl(const Batch<Real>& batch, std::span<const Real> cotangents,
                    std::span<Real> results) const;
    template <class Real>
    Report hvp_impl(const Batch<Real>& batch, std::span<const Real> cotangents,
                    std::span<const Real> directions, std::span<Real> results) const;
    /// jvps: each point's values once, then a tangent sweep per direction.
    template <class Real>
    Report jvps_impl(const Batch<Real>& batch, std::span<const Real> directions, std::size_t count,
                     std::span<Real> results) const;

    Tape tape_;
};

}  // namespace tapevm::reference
