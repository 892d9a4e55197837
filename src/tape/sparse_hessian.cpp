// Compressed Hessian evaluation from a star colouring: one hvp per colour, the colours as
// extra points of one batched call, entries read directly (tapevm/sparse_hessian.hpp).
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "detail/expand_lanes.hpp"
#include "tapevm/error.hpp"
#include "tapevm/sparse_hessian.hpp"

namespace tapevm {

namespace {

// About this many values (inputs or outputs) in one expanded call.
constexpr std::size_t expanded_values = std::size_t{1} << 24;

// Where each nonzero k = (i, j) is read: row `from[k]` of the product with colour `colour[k]`'s
// seed. None when the colouring does not allow direct recovery of every entry.
struct Recovery {
    std::vector<std::uint32_t> row;
    std::vector<std::uint32_t> colour;
};

std::optional<Recovery> direct_recovery(const SparsityPattern& pattern, const ColumnColouring& colouring) {
    if (pattern.rows != pattern.cols || colouring.colour.size() != pattern.cols) return std::nullopt;
    for (const std::uint32_t c : colouring.colour)
        if (c >= colouring.colours) return std::nullopt;
    // once[k]: the colour of entry k's column appears once among its row's columns.
    std::vector<bool> once(pattern.nonzeros(), false);
    std::vector<std::uint32_t> count(colouring.colours, 0);
    for (std::size_t i = 0; i < pattern.rows; ++i) {
        const std::size_t first = pattern.row_starts[i], last = pattern.row_starts[i + 1];
        for (std::size_t k = first; k < last; ++k) ++count[colouring.colour[pattern.columns[k]]];
        for (std::size_t k = first; k < last; ++k) once[k] = count[colouring.colour[pattern.columns[k]]] == 1;
        for (std::size_t k = first; k < last; ++k) count[colouring.colour[pattern.columns[k]]] = 0;
    }
    Recovery recovery;
    recovery.row.resize(pattern.nonzeros());
    recovery.colour.resize(pattern.nonzeros());
    // The position of entry (j, i) in row j; none when the pattern is not symmetric there.
    const auto mirror = [&](std::uint32_t i, std::uint32_t j) -> std::optional<std::size_t> {
        const auto first = pattern.columns.begin() + static_cast<std::ptrdiff_t>(pattern.row_starts[j]);
        const auto last = pattern.columns.begin() + static_cast<std::ptrdiff_t>(pattern.row_starts[j + 1]);
        const auto at = std::lower_bound(first, last, i);
        if (at == last || *at != i) return std::nullopt;
        return static_cast<std::size_t>(at - pattern.columns.begin());
    };
    for (std::size_t i = 0; i < pattern.rows; ++i) {
        for (std::size_t k = pattern.row_starts[i]; k < pattern.row_starts[i + 1]; ++k) {
            const std::uint32_t j = pattern.columns[k];
            if (j < i) {  // below the diagonal: the same value as (j, i), read once
                const auto upper = mirror(static_cast<std::uint32_t>(i), j);
                if (!upper) return std::nullopt;
                recovery.row[k] = recovery.row[*upper];
                recovery.colour[k] = recovery.colour[*upper];
                continue;
            }
            if (once[k]) {
                recovery.row[k] = static_cast<std::uint32_t>(i);
                recovery.colour[k] = colouring.colour[j];
                continue;
            }
            // Entry (j, i) of row j, where column i's colour must appear once.
            const auto lower = j == i ? std::nullopt : mirror(static_cast<std::uint32_t>(i), j);
            if (!lower || !once[*lower]) return std::nullopt;
            recovery.row[k] = j;
            recovery.colour[k] = colouring.colour[i];
        }
    }
    return recovery;
}

void check_plan(const Tape& tape, const SparseHessianPlan& plan) {
    const SparsityPattern& pattern = plan.pattern;
    const std::size_t n = tape.input_count();
    if (pattern.rows != n)
        throw ShapeError("sparse_hessian", "plan.pattern.rows (the tape's inputs)", n, pattern.rows);
    if (pattern.cols != n)
        throw ShapeError("sparse_hessian", "plan.pattern.cols (the tape's inputs)", n, pattern.cols);
    if (pattern.row_starts.size() != pattern.rows + 1 || pattern.row_starts.back() != pattern.columns.size())
        throw ShapeError("sparse_hessian", "plan.pattern.row_starts", pattern.rows + 1,
                         pattern.row_starts.size());
    for (const std::uint32_t col : pattern.columns) {
        if (col >= pattern.cols)
            throw Error("sparse_hessian: the plan's pattern names column " + std::to_string(col) + " of " +
                        std::to_string(pattern.cols));
    }
}

}  // namespace

bool is_direct_hessian_colouring(const SparsityPattern& pattern, const ColumnColouring& colouring) {
    return direct_recovery(pattern, colouring).has_value();
}

SparseHessianPlan plan_sparse_hessian(const Tape& tape) {
    SparseHessianPlan plan;
    plan.pattern = hessian_sparsity(tape);
    plan.colouring = star_colour_columns(plan.pattern);
    return plan;
}

template <class Real>
Report sparse_hessian(const Evaluator& evaluator, const Batch<Real>& batch, std::span<const Real> cotangents,
                      const SparseHessianPlan& plan, std::span<Real> values) {
    const Tape& tape = evaluator.tape();
    check_batch(tape, batch, "sparse_hessian");
    check_plan(tape, plan);
    const std::size_t n = tape.input_count(), m = tape.output_count(), q = tape.param_count();
    const std::size_t nnz = plan.pattern.nonzeros();
    check_size("sparse_hessian", "values", batch.points * nnz, values.size());
    if (cotangents.empty() && m != 1)
        throw ShapeError("sparse_hessian", "cotangents (empty means 1, for a tape with one output)",
                         batch.points * m, 0);
    if (!cotangents.empty()) check_size("sparse_hessian", "cotangents", batch.points * m, cotangents.size());
    const std::optional<Recovery> recovery = direct_recovery(plan.pattern, plan.colouring);
    if (!recovery)
        throw Error(
            "sparse_hessian: the plan's colouring does not allow reading every entry directly (a star "
            "colouring of the pattern, a colour per column)");
    Report report;
    if (batch.points == 0 || nnz == 0) {
        std::fill(values.begin(), values.end(), Real(0));
        return report;
    }
    const std::size_t colours = plan.colouring.colours;
    std::vector<Real> seeds(colours * n, Real(0));
    for (std::size_t j = 0; j < n; ++j) seeds[plan.colouring.colour[j] * n + j] = Real(1);

    const std::size_t chunk = std::max<std::size_t>(
        1, std::min(batch.points, expanded_values / std::max<std::size_t>(1, colours * std::max(n, m))));
    std::vector<Real> inputs, params, weights, directions, results;
    for (std::size_t first = 0; first < batch.points; first += chunk) {
        const std::size_t points = std::min(chunk, batch.points - first);
        const std::size_t lanes = points * colours;
        const Batch<Real> expanded = detail::expand_lanes(
            batch, n, q, first, points, colours, std::span<const Real>(seeds), inputs, params, directions);
        weights.resize(lanes * m);
        results.resize(lanes * n);
        for (std::size_t lane = 0; lane < lanes; ++lane) {
            for (std::size_t k = 0; k < m; ++k)
                weights[lane * m + k] =
                    cotangents.empty() ? Real(1) : cotangents[(first + lane / colours) * m + k];
        }
        const Report part = evaluator.hvp(expanded, std::span<const Real>(weights),
                                          std::span<const Real>(directions), std::span<Real>(results));
        for (const std::size_t lane : part.diverged) report.diverged.push_back(first + lane / colours);
        for (std::size_t p = 0; p < points; ++p) {
            Real* out = values.data() + (first + p) * nnz;
            for (std::size_t k = 0; k < nnz; ++k)
                out[k] = results[(p * colours + recovery->colour[k]) * n + recovery->row[k]];
        }
    }
    std::sort(report.diverged.begin(), report.diverged.end());
    report.diverged.erase(std::unique(report.diverged.begin(), report.diverged.end()), report.diverged.end());
    return report;
}

template <class Real>
Evaluation<Real> sparse_hessian(const Evaluator& evaluator, const Batch<Real>& batch,
                                const SparseHessianPlan& plan, std::span<const Real> cotangents) {
    Evaluation<Real> e{std::vector<Real>(batch.points * plan.pattern.nonzeros()), {}};
    e.report = sparse_hessian(evaluator, batch, cotangents, plan, std::span<Real>(e.values));
    return e;
}

template Report sparse_hessian<double>(const Evaluator&, const Batch<double>&, std::span<const double>,
                                       const SparseHessianPlan&, std::span<double>);
template Report sparse_hessian<float>(const Evaluator&, const Batch<float>&, std::span<const float>,
                                      const SparseHessianPlan&, std::span<float>);
template Evaluation<double> sparse_hessian<double>(const Evaluator&, const Batch<double>&,
                                                   const SparseHessianPlan&, std::span<const double>);
template Evaluation<float> sparse_hessian<float>(const Evaluator&, const Batch<float>&,
                                                 const SparseHessianPlan&, std::span<const float>);

}  // namespace tapevm
