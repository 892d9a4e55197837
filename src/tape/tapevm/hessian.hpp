// Dense per-point Hessians on any evaluator (reference, CPU VM, GPU interpreter or compiled
// kernels), from its Hessian-vector products.
//
//   const tapevm::Evaluation<double> h = tapevm::hessian(vm, batch);  // one-output tape
//   // h.values[(p * n + i) * n + j] = d^2 f / dx_i dx_j at point p
//
// Cost: n_inputs hvp calls over the whole batch (direction e_i at every point in call i), so
// n_inputs forward-over-reverse sweeps per point; a single sweep of vector tangents is the
// faster form still to come (issue 22 item 2).
#pragma once

#include <span>

#include "tapevm/evaluator.hpp"

namespace tapevm {

/// The Hessian of sum_k cotangents[k] * output k at every point: results
/// [points][n_inputs][n_inputs], row-major per point. Column i is the backend's hvp with
/// direction e_i; the result is made exactly symmetric by averaging entries (i, j) and
/// (j, i) (the two differ only by rounding in the sweeps). cotangents [points][n_outputs];
/// a tape with one output may pass an empty span, meaning 1 (the Hessian of f). The report
/// lists the points where a guard failed in any of the calls. ShapeError on wrong sizes.
template <class Real>
Report hessian(const Evaluator& evaluator, const Batch<Real>& batch, std::span<const Real> cotangents,
               std::span<Real> results);

/// The same with the result allocated here.
template <class Real>
Evaluation<Real> hessian(const Evaluator& evaluator, const Batch<Real>& batch,
                         std::span<const Real> cotangents = {});

}  // namespace tapevm
