// One evaluation as the kernels see it: what to compute for which points, where the seeds
// come from and where the results go. Built by vm.cpp from an Evaluator call whose shapes
// EvaluatorBase has already checked, so the kernels index the spans without checks.
#pragma once

#include <cstddef>
#include <cstdint>

#include "plan.hpp"
#include "point_program.hpp"
#include "program.hpp"
#include "tapevm/batch.hpp"
#include "tensor_bindings.hpp"

namespace tapevm::cpu::detail {

enum class Mode : std::uint8_t {
    forward,  // values -> results [points][m]
    reverse,  // adjoints with `rows` seeds -> results [points][rows][n]
    tangent,  // tangents in `rows` directions -> results [points][m][rows]
    hvp,      // dual values and adjoints -> results [points][n]
};

template <class Real> struct Request {
    Mode mode = Mode::forward;
    const Batch<Real>* batch = nullptr;
    /// Adjoint rows (reverse: 1 or m) or tangent directions (tangent: 1 or n); 1 otherwise.
    std::size_t rows = 1;
    /// reverse: cotangents [points][m] (rows == 1), or null for unit seeds (row r seeds
    /// output r with 1). tangent: directions [points][n] (rows == 1), or null for unit
    /// directions (direction j is input j). hvp: cotangents [points][m].
    const Real* seeds = nullptr;
    /// hvp: directions [points][n].
    const Real* directions = nullptr;
    Real* results = nullptr;
    /// True when params hold one set per point.
    bool params_per_point = false;
    /// Write results with non-temporal stores (set by the Vm for result arrays larger than
    /// the caches keep).
    bool stream_results = false;
    /// Tensor bindings (tensor_bindings.hpp; float only, forward and reverse with one row) instead
    /// of the batch's rows: inputs [n], seeds [m] (reverse), results [m] (forward: the
    /// outputs) or [n] (reverse: the input adjoints; data null: not written). The batch then
    /// gives only the element count and the shared params.
    bool tensors = false;
    const TensorBinding* tensor_inputs = nullptr;
    const TensorBinding* tensor_seeds = nullptr;
    const TensorBinding* tensor_results = nullptr;
    /// Inputs [shared_from, n) shared by every point (Evaluator's shared-input hooks, forward
    /// and reverse with one row): batch.inputs holds [points][shared_from] and `shared` the rest
    /// once, filled into every lane; reverse: results [points][shared_from], and the shared
    /// inputs' adjoints of each block summed over its lanes (detail::tree_sum, in f64) into
    /// group_sums[block][n - shared_from]. The blocks' lanes are then a power of two, which
    /// the Vm reports (the groups of SharedSums).
    bool has_shared = false;
    std::size_t shared_from = 0;
    const Real* shared = nullptr;
    double* group_sums = nullptr;
};

/// Inputs per point in the batch's rows.
template <class Real> std::size_t gathered_inputs(const Plan& plan, const Request<Real>& request) {
    return request.has_shared ? request.shared_from : plan.inputs;
}

/// Reals of results per point.
template <class Real> std::size_t result_columns(const Plan& plan, const Request<Real>& request) {
    switch (request.mode) {
        case Mode::forward: return plan.outputs;
        case Mode::tangent: return std::size_t{plan.outputs} * request.rows;
        case Mode::reverse: return request.rows * gathered_inputs(plan, request);
        case Mode::hvp: return plan.inputs;
    }
    return 0;
}

/// Streamed results of a block not yet written: staging[next, end) goes to destination[next,
/// end), whole vectors at vector-aligned addresses of destination (background.hpp).
template <class Real> struct PendingResults {
    Real* destination = nullptr;
    const Real* staging = nullptr;
    std::size_t next = 0;
    std::size_t end = 0;
};

/// A participant's state across the blocks it evaluates in one call.
template <class Real> struct BlockState {
    Real* scratch = nullptr;  // aligned to 64 bytes, scratch_reals() values
    std::size_t lanes = 0;    // lanes per block (a multiple of the SIMD width)
    bool prefilled = false;   // Const (and shared Param) slots hold this call's values already
    Program<Real> program;    // entries allocated by the caller (program_entries())
    /// The block this participant evaluates next (count 0: none), whose inputs and results
    /// the kernels prefetch while they evaluate this one.
    std::size_t next_first = 0;
    std::size_t next_count = 0;
    /// With Request::stream_results: result_columns() x lanes reals and 64 more (scatter's
    /// spill past the last row), aligned to 64 bytes,
    /// where a block's results wait (in the caller's layout) while the next block writes them
    /// out; `pending` is what is left of that (null and empty otherwise).
    Real* staging = nullptr;
    PendingResults<Real> pending;
    /// `program` is decoded over this scratch already (a workspace kept from an earlier call
    /// of the same mode, rows and lanes): only the Const and Param rows are filled again.
    bool programs_built = false;
};

/// Reals of scratch one block of `lanes` lanes needs for `mode` with `rows` rows: value
/// rows (Plan::value_rows; hvp: dual values, a row per slot), then adjoint rows or tangent
/// directions, then (reverse) a row of zeros per adjoint row.
inline std::size_t scratch_reals(const Plan& plan, Mode mode, std::size_t rows, std::size_t lanes) {
    const std::size_t slots = plan.slots;
    const std::size_t values = plan.value_rows;
    switch (mode) {
        case Mode::forward: return values * lanes;
        case Mode::hvp: return 4 * slots * lanes;
        case Mode::tangent: return (values + rows * slots) * lanes;
        case Mode::reverse: return (values + rows * (plan.adjoint_rows + 1)) * lanes;
    }
    return 0;
}

/// Entries of a participant's programs for `mode`: the value sweep, then the adjoint sweep.
inline std::size_t program_entries(const Plan& plan, Mode mode) {
    return plan.compute_slots.size() + (mode == Mode::reverse ? plan.reverse_steps.size() : 0);
}

/// The kernels of one instruction set for one precision.
template <class Real> struct KernelSet {
    std::size_t width = 0;  // lanes per SIMD vector
    /// Evaluates points [first, first + count), count <= state.lanes.
    void (*run_block)(const Tape& tape, const Plan& plan, const Request<Real>& request,
                      BlockState<Real>& state, std::size_t first, std::size_t count) = nullptr;
    /// After a participant's last block: writes its pending results and orders its
    /// non-temporal stores before the participant reports that it is done.
    void (*finish)(BlockState<Real>& state) = nullptr;
    /// Evaluator::jvps at one point for one part of the tape (point_program.hpp), the
    /// directions in the lanes instead of points: each value once, in one lane of broadcast
    /// vectors (so bit for bit those of run_block), and per tangent step its tangents in every
    /// direction, ceil(count / width) vectors. directions [count][n]; writes the part's
    /// outputs of results [count][m]; scratch of point_directions_reals(). Returns false when
    /// one of the part's guards fails.
    bool (*point_directions)(const Tape& tape, const PointPart& part, const Real* inputs, const Real* params,
                             const Real* directions, std::size_t count, Real* results,
                             Real* scratch) = nullptr;
};

/// Reals of scratch KernelSet::point_directions needs for `part`: a value per row, then per
/// row the tangents rounded up to whole vectors of `width`.
inline std::size_t point_directions_reals(const PointPart& part, std::size_t count, std::size_t width) {
    const std::size_t rows = (part.rows + width - 1) / width * width;
    return rows + std::size_t{part.rows} * ((count + width - 1) / width * width);
}

template <class Real> KernelSet<Real> kernels_sse2();
template <class Real> KernelSet<Real> kernels_avx2();
template <class Real> KernelSet<Real> kernels_avx512();

}  // namespace tapevm::cpu::detail
