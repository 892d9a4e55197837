// ADBench's bundle adjustment, whole, as its benchmark defines it: the objective (every
// observation's reprojection error and weight error) computed by the native C++ template, and
// the sparse Jacobian (README of ../shared/adbench) computed by a tapevm backend.
//
// Reading order: adbench_reader.hpp (the instance files and the problem), this file (the
// pieces that are timed and the checks), adbench_backend.hpp (who evaluates the blocks),
// adbench_run.hpp (the measurement behind `tapevm adbench ba`).
//
// The sparse Jacobian, CSR: 3p rows, 11n + 3m + p columns, 31p nonzeros. Rows 2k and 2k + 1
// are observation k's reprojection error, 15 nonzeros each in the order camera (11 columns
// from 11c), point (3 from 11n + 3j), weight (column 11n + 3m + k); row 2p + k is its weight
// error, one nonzero (-2w) at column 11n + 3m + k. The reprojection rows' values are exactly
// the batched [p][2][15] Jacobian layout, so the backend writes them in place.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "adbench_backend.hpp"
#include "adbench_reader.hpp"
#include "native_simd.hpp"
#include "worker_pool.hpp"

namespace tapevm::bench::adbench {

template <class Real> struct SparseJacobian {
    std::size_t rows = 0, columns = 0;
    std::vector<std::int32_t> row_starts;      // [rows + 1]
    std::vector<std::int32_t> column_indices;  // [nonzeros]
    std::vector<Real> values;                  // [nonzeros]
};

/// The objective's outputs: reprojection errors [p][2], weight errors [p].
template <class Real> struct Objective { std::vector<Real> reprojection_errors, weight_errors; };

/// Buffers of the Jacobian pipeline, allocated once (prepare_jacobian) so that timed runs
/// only compute: the backend's inputs [p][15], and in float the params [p][2] and weights
/// (in double the problem's own features and weights are the batches' params and inputs).
template <class Real> struct JacobianWork {
    std::vector<Real> inputs, params, weights;
    SparseJacobian<Real> jacobian;
};

/// Seconds spent in each part of compute_jacobian() (see there).
struct JacobianPhases {
    double inputs = 0, blocks = 0, structure = 0;
    double total() const { return inputs + blocks + structure; }
};

template <class Real> Objective<Real> prepare_objective(const BaProblem& problem);
template <class Real> JacobianWork<Real> prepare_jacobian(const BaProblem& problem);

/// The objective with `kernel` (native-simd's or native-scalar's primal of the ba workload)
/// on `pool`'s threads: observations gathered in chunks into the template's 15 inputs and 2
/// params, reprojection errors from the kernel, weight errors from examples::ba_weight_error.
template <class Real>
void compute_objective(const BaProblem& problem, NativeKernel<Real> kernel, WorkerPool& pool,
                       Objective<Real>& objective);

/// The sparse Jacobian. One pass on `pool`: each thread writes its share's rows of the CSR
/// structure, assembles its share's backend inputs and, when the backend allows
/// (BlockJacobians::weight_in_parts), evaluates its share's weight rows; then the
/// reprojection blocks of all observations in one batched call (into work.jacobian.values),
/// and the weight rows in one call where the pass did not. Phases: the pass's parts as its
/// threads spent them on average, the weight rows counted with the blocks.
template <class Real>
JacobianPhases compute_jacobian(const BaProblem& problem, const BlockJacobians& blocks, WorkerPool& pool,
                                JacobianWork<Real>& work);

/// The CSR structure of observations [first, last) into `jacobian` (sized as prepare_jacobian
/// sizes it): the row starts and column indices of their rows, and row_starts[3p] when last
/// is p. Safe from several threads at once for disjoint ranges.
template <class Real>
void write_structure(const BaProblem& problem, std::size_t first, std::size_t last,
                     SparseJacobian<Real>& jacobian);

/// "" when `jacobian`'s shape, row starts and column indices are exactly those above for
/// `problem`, else what the first difference is.
template <class Real>
std::string check_structure(const BaProblem& problem, const SparseJacobian<Real>& jacobian);

/// The sample check: at `observations`, the reference VM in double (at the inputs rounded to
/// Real) against the Jacobian's values in the CSR and the objective's outputs, with
/// bench::max_error; returns the larger of the two errors.
template <class Real>
double sample_error(const BaProblem& problem, const SparseJacobian<Real>& jacobian,
                    const Objective<Real>& objective, std::span<const std::size_t> observations);

/// Bytes the objective and the Jacobian pipeline need for `observations` (an estimate).
std::size_t bytes_needed(std::size_t observations, std::size_t sizeof_real);

}  // namespace tapevm::bench::adbench
