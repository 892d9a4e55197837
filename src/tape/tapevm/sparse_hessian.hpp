// Sparse Hessians: the sparsity pattern of the Hessian of a weighted sum of a tape's outputs,
// a star colouring of its columns, and compressed evaluation on any evaluator with one
// Hessian-vector product per colour instead of one per input.
//
//   const tapevm::SparseHessianPlan plan = tapevm::plan_sparse_hessian(tape);  // once
//   const tapevm::Evaluation<double> h = tapevm::sparse_hessian(vm, batch, plan);
//   // h.values[p * plan.pattern.nonzeros() + k]: entry k of the CSR pattern at point p
//
// The pattern is structural and symmetric: the Hessian of sum_k w_k y_k is the sum, over the
// instructions whose result reaches an output, of their local second derivatives pulled back
// through their operands' Jacobians, so entry (i, j) can be nonzero only where some such
// instruction has operands u_k, u_l with inputs i in D(u_k) and j in D(u_l) and a second
// partial d2 f / du_k du_l that is not identically zero. The op table does not list second
// partials: an operand pair counts when operand k's partial is not identically zero and some
// partial of the op reads operand l (or the op's result) (OpInfo::zero_partials and
// partial_reads). So the pattern never misses an entry, and may hold spurious ones: x * y
// gives (x, x) and (y, y) besides (x, y); max and abs give their operands' pairs.
//
// Columns are star-coloured by ColPack (serial, smallest-last ordering): every entry (i, j)
// is read directly from the product with the seed of colour(j) in row i, or of colour(i) in
// row j, whichever colour appears once among that row's columns.
#pragma once

#include <span>

#include "tapevm/sparse.hpp"

namespace tapevm {

/// The structural pattern of the Hessian of any weighted sum of `tape`'s outputs:
/// input_count() rows and columns, symmetric, in CSR form (ascending columns).
SparsityPattern hessian_sparsity(const Tape& tape);

/// Star colouring of a symmetric pattern's columns by ColPack (serial, smallest-last).
/// Columns without entries take colour 0. Throws Unsupported without ColPack, ShapeError or
/// Error for a pattern that is not square or names a column out of range.
ColumnColouring star_colour_columns(const SparsityPattern& pattern);

/// True when every entry (i, j) of the symmetric `pattern` can be read directly: colour(j)
/// appears once among row i's columns, or colour(i) once among row j's; diagonal entries
/// need colour(i) once in row i. (And the colouring covers every column.)
bool is_direct_hessian_colouring(const SparsityPattern& pattern, const ColumnColouring& colouring);

/// What a tape's sparse Hessian needs, computed once per tape.
struct SparseHessianPlan {
    SparsityPattern pattern;
    ColumnColouring colouring;
};

/// hessian_sparsity() and star_colour_columns() of `tape`.
SparseHessianPlan plan_sparse_hessian(const Tape& tape);

/// The Hessian of sum_k cotangents[k] * output k at every point, in the plan's CSR order:
/// values [points][nonzeros]. cotangents [points][n_outputs]; a tape with one output may pass
/// an empty span, meaning 1. Evaluated as colouring.colours hvps per point, the colours as
/// extra points of the evaluator's batched hvp (in chunks of points, as sparse_jacobian).
/// Entries (i, j) and (j, i) are one value, read once. The report lists the points where a
/// guard failed. ShapeError when the plan does not fit the tape or a buffer has the wrong
/// size; Error for a colouring that does not allow direct recovery.
template <class Real>
Report sparse_hessian(const Evaluator& evaluator, const Batch<Real>& batch, std::span<const Real> cotangents,
                      const SparseHessianPlan& plan, std::span<Real> values);

/// The same with the values allocated here.
template <class Real>
Evaluation<Real> sparse_hessian(const Evaluator& evaluator, const Batch<Real>& batch,
                                const SparseHessianPlan& plan, std::span<const Real> cotangents = {});

}  // namespace tapevm
