// Compressed Jacobian evaluation: one jvp per colour, the colours as extra points of one
// batched call (tapevm/sparse.hpp).
#include <algorithm>
#include <string>
#include <vector>

#include "tapevm/error.hpp"
#include "tapevm/sparse.hpp"

namespace tapevm {

namespace {

// About this many values (inputs or outputs) in one expanded call.
constexpr std::size_t expanded_values = std::size_t{1} << 24;

void check_plan(const Tape& tape, const SparseJacobianPlan& plan) {
    const SparsityPattern& pattern = plan.pattern;
    if (pattern.rows != tape.output_count())
        throw ShapeError("sparse_jacobian", "plan.pattern.rows (the tape's outputs)", tape.output_count(),
                         pattern.rows);
    if (pattern.cols != tape.input_count())
        throw ShapeError("sparse_jacobian", "plan.pattern.cols (the tape's inputs)", tape.input_count(),
                         pattern.cols);
    if (pattern.row_starts.size() != pattern.rows + 1 || pattern.row_starts.back() != pattern.columns.size())
        throw ShapeError("sparse_jacobian", "plan.pattern.row_starts", pattern.rows + 1,
                         pattern.row_starts.size());
    for (const std::uint32_t col : pattern.columns) {
        if (col >= pattern.cols)
            throw Error("sparse_jacobian: the plan's pattern names column " + std::to_string(col) + " of " +
                        std::to_string(pattern.cols));
    }
    if (!is_distance2_colouring(pattern, plan.colouring))
        throw Error(
            "sparse_jacobian: the plan's colouring does not fit its pattern (a colour per column, "
            "no two columns of one row alike)");
}

}  // namespace

template <class Real>
Report sparse_jacobian(const Evaluator& evaluator, const Batch<Real>& batch, const SparseJacobianPlan& plan,
                       std::span<Real> values) {
    const Tape& tape = evaluator.tape();
    check_batch(tape, batch, "sparse_jacobian");
    check_plan(tape, plan);
    const SparsityPattern& pattern = plan.pattern;
    const std::size_t nnz = pattern.nonzeros();
    check_size("sparse_jacobian", "values", batch.points * nnz, values.size());
    const std::size_t n = tape.input_count(), m = tape.output_count(), q = tape.param_count();
    const std::size_t colours = plan.colouring.colours;
    Report report;
    if (batch.points == 0 || nnz == 0) {
        std::fill(values.begin(), values.end(), Real(0));
        return report;
    }
    // The seed of each colour: the sum of its columns' unit vectors.
    std::vector<Real> seeds(colours * n, Real(0));
    for (std::size_t j = 0; j < n; ++j) seeds[plan.colouring.colour[j] * n + j] = Real(1);
    // Where each nonzero is read: the output of the jvp of its column's colour.
    std::vector<std::uint32_t> nonzero_colour(nnz);
    for (std::size_t k = 0; k < nnz; ++k) nonzero_colour[k] = plan.colouring.colour[pattern.columns[k]];

    const bool per_point = batch.params_per_point(q);
    const std::size_t chunk = std::max<std::size_t>(
        1, std::min(batch.points, expanded_values / std::max<std::size_t>(1, colours * std::max(n, m))));
    std::vector<Real> inputs, params, tangents, results;
    for (std::size_t first = 0; first < batch.points; first += chunk) {
        const std::size_t points = std::min(chunk, batch.points - first);
        const std::size_t lanes = points * colours;
        inputs.resize(lanes * n);
        tangents.resize(lanes * n);
        results.resize(lanes * m);
        if (per_point) params.resize(lanes * q);
        for (std::size_t p = 0; p < points; ++p) {
            const auto x = batch.inputs.subspan((first + p) * n, n);
            for (std::size_t c = 0; c < colours; ++c) {
                const std::size_t lane = p * colours + c;
                std::copy(x.begin(), x.end(), inputs.begin() + static_cast<std::ptrdiff_t>(lane * n));
                std::copy(seeds.begin() + static_cast<std::ptrdiff_t>(c * n),
                          seeds.begin() + static_cast<std::ptrdiff_t>((c + 1) * n),
                          tangents.begin() + static_cast<std::ptrdiff_t>(lane * n));
                if (per_point) {
                    const auto own = batch.params_of(first + p, q);
                    std::copy(own.begin(), own.end(), params.begin() + static_cast<std::ptrdiff_t>(lane * q));
                }
            }
        }
        // One lane of shared params is ambiguous with per-point ones only when lanes == 1,
        // where both mean the same.
        const Batch<Real> expanded{lanes, inputs, per_point ? std::span<const Real>(params) : batch.params};
        const Report part =
            evaluator.jvp(expanded, std::span<const Real>(tangents), std::span<Real>(results));
        for (const std::size_t lane : part.diverged) report.diverged.push_back(first + lane / colours);
        for (std::size_t p = 0; p < points; ++p) {
            Real* out = values.data() + (first + p) * nnz;
            for (std::size_t row = 0; row < m; ++row) {
                for (std::size_t k = pattern.row_starts[row]; k < pattern.row_starts[row + 1]; ++k)
                    out[k] = results[(p * colours + nonzero_colour[k]) * m + row];
            }
        }
    }
    std::sort(report.diverged.begin(), report.diverged.end());
    report.diverged.erase(std::unique(report.diverged.begin(), report.diverged.end()), report.diverged.end());
    return report;
}

template <class Real>
Evaluation<Real> sparse_jacobian(const Evaluator& evaluator, const Batch<Real>& batch,
                                 const SparseJacobianPlan& plan) {
    Evaluation<Real> e{std::vector<Real>(batch.points * plan.pattern.nonzeros()), {}};
    e.report = sparse_jacobian(evaluator, batch, plan, std::span<Real>(e.values));
    return e;
}

template Report sparse_jacobian<double>(const Evaluator&, const Batch<double>&, const SparseJacobianPlan&,
                                        std::span<double>);
template Report sparse_jacobian<float>(const Evaluator&, const Batch<float>&, const SparseJacobianPlan&,
                                       std::span<float>);
template Evaluation<double> sparse_jacobian<double>(const Evaluator&, const Batch<double>&,
                                                    const SparseJacobianPlan&);
template Evaluation<float> sparse_jacobian<float>(const Evaluator&, const Batch<float>&,
                                                  const SparseJacobianPlan&);

}  // namespace tapevm
