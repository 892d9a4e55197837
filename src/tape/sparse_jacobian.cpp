// Compressed Jacobian evaluation: one jvp per colour, all colours of a point in one call of
// Evaluator::jvps (tapevm/sparse.hpp).
#include <algorithm>
#include <string>
#include <type_traits>
#include <vector>

#include "tapevm/error.hpp"
#include "tapevm/sparse.hpp"

namespace tapevm {

namespace {

// About this many results in one call of jvps.
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

// The seed of each colour: the sum of its columns' unit vectors, [colours][n].
template <class Real> std::vector<Real> colour_seeds(const SparseJacobianPlan& plan) {
    const std::size_t n = plan.pattern.cols;
    std::vector<Real> seeds(plan.colouring.colours * n, Real(0));
    for (std::size_t j = 0; j < n; ++j) seeds[plan.colouring.colour[j] * n + j] = Real(1);
    return seeds;
}

// The Jacobian from each point's compressed Jacobian [colours][m] (Evaluator::jvps), a chunk
// of points at a time, its buffer kept by the calling thread.
template <class Real>
Report compressed_jacobian(const Evaluator& evaluator, const Batch<Real>& batch,
                           const SparseJacobianPlan& plan, std::span<const Real> seeds,
                           std::span<Real> values) {
    const SparsityPattern& pattern = plan.pattern;
    const std::size_t nnz = pattern.nonzeros();
    const std::size_t n = pattern.cols, m = pattern.rows, q = evaluator.tape().param_count();
    const std::size_t colours = plan.colouring.colours;
    Report report;
    if (batch.points == 0 || nnz == 0) {
        std::fill(values.begin(), values.end(), Real(0));
        return report;
    }
    const std::size_t chunk = std::max<std::size_t>(
        1, std::min(batch.points, expanded_values / std::max<std::size_t>(1, colours * m)));
    thread_local std::vector<Real> buffer;
    if (buffer.size() < chunk * colours * m) buffer.resize(chunk * colours * m);
    for (std::size_t first = 0; first < batch.points; first += chunk) {
        const std::size_t points = std::min(chunk, batch.points - first);
        const std::span<Real> results = std::span<Real>(buffer).first(points * colours * m);
        const Batch<Real> part{
            points, batch.inputs.subspan(first * n, points * n),
            batch.params_per_point(q) ? batch.params.subspan(first * q, points * q) : batch.params};
        const Report part_report = evaluator.jvps(part, seeds, colours, results);
        for (const std::size_t point : part_report.diverged) report.diverged.push_back(first + point);
        for (std::size_t p = 0; p < points; ++p) {
            Real* out = values.data() + (first + p) * nnz;
            for (std::size_t row = 0; row < m; ++row) {
                for (std::size_t k = pattern.row_starts[row]; k < pattern.row_starts[row + 1]; ++k)
                    out[k] = results[(p * colours + plan.colouring.colour[pattern.columns[k]]) * m + row];
            }
        }
    }
    return report;
}

}  // namespace

template <class Real>
Report sparse_jacobian(const Evaluator& evaluator, const Batch<Real>& batch, const SparseJacobianPlan& plan,
                       std::span<Real> values) {
    const Tape& tape = evaluator.tape();
    check_batch(tape, batch, "sparse_jacobian");
    check_plan(tape, plan);
    check_size("sparse_jacobian", "values", batch.points * plan.pattern.nonzeros(), values.size());
    const std::vector<Real> seeds = colour_seeds<Real>(plan);
    return compressed_jacobian(evaluator, batch, plan, std::span<const Real>(seeds), values);
}

PreparedSparseJacobian::PreparedSparseJacobian(const Tape& tape, SparseJacobianPlan plan)
    : plan_(std::move(plan)) {
    check_plan(tape, plan_);
    seeds_f64_ = colour_seeds<double>(plan_);
    seeds_f32_ = colour_seeds<float>(plan_);
}

template <class Real>
Report PreparedSparseJacobian::evaluate(const Evaluator& evaluator, const Batch<Real>& batch,
                                        std::span<Real> values) const {
    const Tape& tape = evaluator.tape();
    const std::string where = "PreparedSparseJacobian::evaluate";
    check_batch(tape, batch, where);
    check_size(where, "the evaluator's tape's outputs (the plan's rows)", plan_.pattern.rows,
               tape.output_count());
    check_size(where, "the evaluator's tape's inputs (the plan's columns)", plan_.pattern.cols,
               tape.input_count());
    check_size(where, "values", batch.points * plan_.pattern.nonzeros(), values.size());
    if constexpr (std::is_same_v<Real, double>) {
        return compressed_jacobian(evaluator, batch, plan_, std::span<const double>(seeds_f64_), values);
    } else {
        return compressed_jacobian(evaluator, batch, plan_, std::span<const float>(seeds_f32_), values);
    }
}

template Report PreparedSparseJacobian::evaluate<double>(const Evaluator&, const Batch<double>&,
                                                         std::span<double>) const;
template Report PreparedSparseJacobian::evaluate<float>(const Evaluator&, const Batch<float>&,
                                                        std::span<float>) const;

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
