// Sparse Jacobians: the sparsity pattern of a tape's Jacobian, a colouring of its columns,
// and compressed evaluation on any evaluator (reference, CPU VM, GPU interpreter or compiled
// kernels) with one Jacobian-vector product per colour instead of one per input.
//
//   const tapevm::SparseJacobianPlan plan = tapevm::plan_sparse_jacobian(tape);  // once
//   const tapevm::Evaluation<double> j = tapevm::sparse_jacobian(vm, batch, plan);
//   // j.values[p * plan.pattern.nonzeros() + k]: entry k of the CSR pattern at point p
//
// The pattern is structural: output i depends on input j when a path of operands leads from
// Input j to output i, leaving out operands whose partial is identically zero (comparisons,
// step functions, Select's condition: OpInfo::zero_partials). It never misses an entry that
// is nonzero at some point; it may hold entries that are zero everywhere (x - x, or a
// product with a zero constant), which the evaluation returns as zeros.
//
// Columns are coloured by ColPack (partial distance-2 colouring of the bipartite graph,
// smallest-last ordering): no row has two columns of one colour, so the jvp with the sum of
// one colour's unit vectors gives each of that colour's entries alone: the other columns of
// the colour reach the row through no operand whose partial is not identically zero, so the
// entry has the same bits as the jvp with that column's unit vector wherever the tangents
// stay finite. The colours run as extra points of one batched jvp call.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "tapevm/evaluator.hpp"

namespace tapevm {

/// A sparsity pattern in CSR form: row i holds columns
/// columns[row_starts[i]] .. columns[row_starts[i + 1] - 1], ascending.
struct SparsityPattern {
    std::size_t rows = 0;
    std::size_t cols = 0;
    std::vector<std::size_t> row_starts{0};  // rows + 1 entries
    std::vector<std::uint32_t> columns;      // the column of each nonzero

    std::size_t nonzeros() const { return columns.size(); }
    /// True when (row, col) is in the pattern.
    bool contains(std::size_t row, std::size_t col) const;
    friend bool operator==(const SparsityPattern&, const SparsityPattern&) = default;
};

/// The structural pattern of the Jacobian of `tape`: output_count() rows, input_count()
/// columns. Cost: one pass over the tape merging sorted index sets (each slot's set is freed
/// after its last use), so memory is the live sets', time the sum of their sizes.
SparsityPattern jacobian_sparsity(const Tape& tape);

/// A colouring of a pattern's columns: colour[j] in 0 .. colours - 1.
struct ColumnColouring {
    std::size_t colours = 0;
    std::vector<std::uint32_t> colour;
};

/// Partial distance-2 colouring of `pattern`'s columns by ColPack (smallest-last ordering,
/// the serial greedy colouring: deterministic): no row holds two columns of one colour. Columns without entries take colour 0. Throws
/// Unsupported when tapevm was built without ColPack (Debian: libcolpack-dev).
ColumnColouring colour_columns(const SparsityPattern& pattern);

/// True when no row of `pattern` holds two columns of one colour of `colouring` (and the
/// colouring covers every column with colours below colouring.colours).
bool is_distance2_colouring(const SparsityPattern& pattern, const ColumnColouring& colouring);

/// What a tape's sparse Jacobian needs, computed once per tape.
struct SparseJacobianPlan {
    SparsityPattern pattern;
    ColumnColouring colouring;
};

/// jacobian_sparsity() and colour_columns() of `tape`.
SparseJacobianPlan plan_sparse_jacobian(const Tape& tape);

/// The Jacobian's entries at every point in the plan's CSR order: values [points][nonzeros].
/// Evaluated as colouring.colours jvps per point, the colours as extra points of the
/// evaluator's batched jvp (in chunks of points that bound the expanded batch to about 2^24
/// values). The report lists the points where a guard failed. ShapeError when the plan does
/// not fit the tape (rows, columns, a colour per column) or `values` has the wrong size.
template <class Real>
Report sparse_jacobian(const Evaluator& evaluator, const Batch<Real>& batch, const SparseJacobianPlan& plan,
                       std::span<Real> values);

/// The same with the values allocated here.
template <class Real>
Evaluation<Real> sparse_jacobian(const Evaluator& evaluator, const Batch<Real>& batch,
                                 const SparseJacobianPlan& plan);

/// A sparse Jacobian set up once for repeated calls (a Newton or Gauss-Newton loop): the plan
/// checked once, the seed matrix built once, the result buffers kept per calling thread, so a
/// call does only the jvps and the gather into CSR order (sparse_jacobian() redoes that set-up
/// on every call: about 2 ms of serial work at 10^5 unknowns). The same values, bit for bit.
/// Const functions may be called from several threads at once.
class PreparedSparseJacobian {
public:
    /// Checks `plan` against `tape` (ShapeError or Error as sparse_jacobian does) and keeps it.
    PreparedSparseJacobian(const Tape& tape, SparseJacobianPlan plan);

    const SparseJacobianPlan& plan() const { return plan_; }

    /// sparse_jacobian(evaluator, batch, plan(), values) for an evaluator of a tape with the
    /// plan's inputs and outputs (ShapeError otherwise, and on a wrong size).
    template <class Real>
    Report evaluate(const Evaluator& evaluator, const Batch<Real>& batch, std::span<Real> values) const;

private:
    SparseJacobianPlan plan_;
    std::vector<double> seeds_f64_;
    std::vector<float> seeds_f32_;
};

}  // namespace tapevm
