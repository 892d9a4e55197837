#include "tapevm/evaluator.hpp"

#include <algorithm>
#include <vector>

#include "detail/expand_lanes.hpp"
#include "detail/pairwise_sum.hpp"
#include "tapevm/error.hpp"

namespace tapevm {

bool jacobian_uses_forward_mode(const Tape& tape, JacobianMode mode) {
    if (mode == JacobianMode::automatic) return tape.input_count() < tape.output_count();
    return mode == JacobianMode::forward;
}

template <class Real>
void check_forward(const Tape& tape, const Batch<Real>& batch, std::span<const Real> outputs) {
    check_batch(tape, batch, "forward");
    check_size("forward", "outputs", batch.points * tape.output_count(), outputs.size());
}

template <class Real>
void check_gradient(const Tape& tape, const Batch<Real>& batch, std::span<const Real> gradients) {
    if (tape.output_count() != 1) {
        throw Unsupported("gradient: the tape has " + std::to_string(tape.output_count()) +
                          " outputs; gradient needs exactly 1 (use vjp or jacobian)");
    }
    check_batch(tape, batch, "gradient");
    check_size("gradient", "gradients", batch.points * tape.input_count(), gradients.size());
}

template <class Real>
void check_jacobian(const Tape& tape, const Batch<Real>& batch, std::span<const Real> jacobians) {
    check_batch(tape, batch, "jacobian");
    check_size("jacobian", "jacobians", batch.points * std::size_t{tape.output_count()} * tape.input_count(),
               jacobians.size());
}

template <class Real>
void check_jvp(const Tape& tape, const Batch<Real>& batch, std::span<const Real> tangents,
               std::span<const Real> results) {
    check_batch(tape, batch, "jvp");
    check_size("jvp", "tangents", batch.points * tape.input_count(), tangents.size());
    check_size("jvp", "results", batch.points * tape.output_count(), results.size());
}

template <class Real>
void check_jvps(const Tape& tape, const Batch<Real>& batch, std::span<const Real> directions,
                std::size_t count, std::span<const Real> results) {
    check_batch(tape, batch, "jvps");
    check_size("jvps", "directions", count * tape.input_count(), directions.size());
    check_size("jvps", "results", batch.points * count * tape.output_count(), results.size());
}

template <class Real>
void check_vjp(const Tape& tape, const Batch<Real>& batch, std::span<const Real> cotangents,
               std::span<const Real> results) {
    check_batch(tape, batch, "vjp");
    check_size("vjp", "cotangents", batch.points * tape.output_count(), cotangents.size());
    check_size("vjp", "results", batch.points * tape.input_count(), results.size());
}

template <class Real>
void check_hvp(const Tape& tape, const Batch<Real>& batch, std::span<const Real> cotangents,
               std::span<const Real> directions, std::span<const Real> results) {
    check_batch(tape, batch, "hvp");
    check_size("hvp", "cotangents", batch.points * tape.output_count(), cotangents.size());
    check_size("hvp", "directions", batch.points * tape.input_count(), directions.size());
    check_size("hvp", "results", batch.points * tape.input_count(), results.size());
}

#define TAPEVM_INSTANTIATE(Real)                                                                            \
    template void check_forward(const Tape&, const Batch<Real>&, std::span<const Real>);                    \
    template void check_gradient(const Tape&, const Batch<Real>&, std::span<const Real>);                   \
    template void check_jacobian(const Tape&, const Batch<Real>&, std::span<const Real>);                   \
    template void check_jvp(const Tape&, const Batch<Real>&, std::span<const Real>, std::span<const Real>); \
    template void check_jvps(const Tape&, const Batch<Real>&, std::span<const Real>, std::size_t,           \
                             std::span<const Real>);                                                        \
    template void check_vjp(const Tape&, const Batch<Real>&, std::span<const Real>, std::span<const Real>); \
    template void check_hvp(const Tape&, const Batch<Real>&, std::span<const Real>, std::span<const Real>,  \
                            std::span<const Real>);
TAPEVM_INSTANTIATE(double)
TAPEVM_INSTANTIATE(float)
#undef TAPEVM_INSTANTIATE

namespace {

// About this many values (inputs or outputs) in one expanded call of jvps_by_jvp.
constexpr std::size_t expanded_values = std::size_t{1} << 24;

// Evaluator::evaluate_jvps: the points x directions as the lanes of jvp calls, point p's
// direction c in lane p * count + c, so the lanes' results are already in jvps's layout.
template <class Real>
Report jvps_by_jvp(const Evaluator& evaluator, const Batch<Real>& batch, std::span<const Real> directions,
                   std::size_t count, std::span<Real> results) {
    const Tape& tape = evaluator.tape();
    const std::size_t n = tape.input_count(), m = tape.output_count(), q = tape.param_count();
    Report report;
    if (batch.points == 0 || count == 0) return report;
    const std::size_t chunk = std::max<std::size_t>(
        1, std::min(batch.points, expanded_values / std::max<std::size_t>(1, count * std::max(n, m))));
    std::vector<Real> inputs, params, tangents;
    for (std::size_t first = 0; first < batch.points; first += chunk) {
        const std::size_t points = std::min(chunk, batch.points - first);
        const std::size_t lanes = points * count;
        const Batch<Real> expanded =
            detail::expand_lanes(batch, n, q, first, points, count, directions, inputs, params, tangents);
        const Report part = evaluator.jvp(expanded, std::span<const Real>(tangents),
                                          results.subspan(first * count * m, lanes * m));
        for (const std::size_t lane : part.diverged) report.diverged.push_back(first + lane / count);
    }
    report.diverged.erase(std::unique(report.diverged.begin(), report.diverged.end()), report.diverged.end());
    return report;
}

// The rows of a shared-inputs batch: each point's own inputs, then the shared ones.
template <class Real>
std::vector<Real> whole_rows(const Batch<Real>& batch, std::size_t from, std::span<const Real> shared) {
    const std::size_t n = from + shared.size();
    std::vector<Real> rows(batch.points * n);
    for (std::size_t p = 0; p < batch.points; ++p) {
        std::copy_n(batch.inputs.data() + p * from, from, rows.data() + p * n);
        std::copy(shared.begin(), shared.end(), rows.data() + p * n + from);
    }
    return rows;
}

template <class Real>
Report forward_shared_by_rows(const Evaluator& evaluator, const Batch<Real>& batch, std::size_t from,
                              std::span<const Real> shared, std::span<Real> outputs) {
    const std::vector<Real> rows = whole_rows(batch, from, shared);
    return evaluator.forward(Batch<Real>{batch.points, rows, batch.params}, outputs);
}

// Points of a sub-batch: whole rows of about this many values at a time, so the sums come in
// groups of that many points (a power of two) and the memory stays bounded.
constexpr std::size_t shared_rows_values = std::size_t{1} << 21;

template <class Real>
Report vjp_shared_by_rows(const Evaluator& evaluator, const Batch<Real>& batch, std::size_t from,
                          std::span<const Real> shared, std::span<const Real> cotangents,
                          std::span<Real> point_results, SharedSums& sums) {
    const std::size_t n = from + shared.size(), d = shared.size(), m = evaluator.tape().output_count();
    std::size_t group = 1;
    while (group * 2 * (n + 1) <= shared_rows_values && group * 2 <= batch.points && group * 2 <= sums.group)
        group *= 2;
    sums.group = group;
    const std::size_t groups = (batch.points + group - 1) / group;
    sums.sums.assign(groups * d, 0.0);
    Report report;
    std::vector<Real> results(group * n), column(group);
    for (std::size_t g = 0; g < groups; ++g) {
        const std::size_t first = g * group, count = std::min(group, batch.points - first);
        const Batch<Real> part{count, batch.inputs.subspan(first * from, count * from), batch.params};
        const std::vector<Real> rows = whole_rows(part, from, shared);
        const Report part_report =
            evaluator.vjp(Batch<Real>{count, rows, batch.params}, cotangents.subspan(first * m, count * m),
                          std::span<Real>(results).first(count * n));
        for (const std::size_t point : part_report.diverged) report.diverged.push_back(first + point);
        for (std::size_t p = 0; p < count; ++p)
            std::copy_n(results.data() + p * n, from, point_results.data() + (first + p) * from);
        for (std::size_t j = 0; j < d; ++j) {
            for (std::size_t p = 0; p < count; ++p) column[p] = results[p * n + from + j];
            sums.sums[g * d + j] = detail::tree_sum(column.data(), count);
        }
    }
    return report;
}

}  // namespace

Report Evaluator::evaluate_forward_shared(const Batch<double>& batch, std::size_t from,
                                          std::span<const double> shared, std::span<double> outputs) const {
    return forward_shared_by_rows(*this, batch, from, shared, outputs);
}
Report Evaluator::evaluate_forward_shared(const Batch<float>& batch, std::size_t from,
                                          std::span<const float> shared, std::span<float> outputs) const {
    return forward_shared_by_rows(*this, batch, from, shared, outputs);
}
Report Evaluator::evaluate_vjp_shared(const Batch<double>& batch, std::size_t from,
                                      std::span<const double> shared, std::span<const double> cotangents,
                                      std::span<double> point_results, SharedSums& sums) const {
    return vjp_shared_by_rows(*this, batch, from, shared, cotangents, point_results, sums);
}
Report Evaluator::evaluate_vjp_shared(const Batch<float>& batch, std::size_t from,
                                      std::span<const float> shared, std::span<const float> cotangents,
                                      std::span<float> point_results, SharedSums& sums) const {
    return vjp_shared_by_rows(*this, batch, from, shared, cotangents, point_results, sums);
}

Report Evaluator::jvps(const Batch<double>& batch, std::span<const double> directions, std::size_t count,
                       std::span<double> results) const {
    check_jvps<double>(tape(), batch, directions, count, results);
    return evaluate_jvps(batch, directions, count, results);
}

Report Evaluator::jvps(const Batch<float>& batch, std::span<const float> directions, std::size_t count,
                       std::span<float> results) const {
    check_jvps<float>(tape(), batch, directions, count, results);
    return evaluate_jvps(batch, directions, count, results);
}

Report Evaluator::evaluate_jvps(const Batch<double>& batch, std::span<const double> directions,
                                std::size_t count, std::span<double> results) const {
    return jvps_by_jvp(*this, batch, directions, count, results);
}

Report Evaluator::evaluate_jvps(const Batch<float>& batch, std::span<const float> directions,
                                std::size_t count, std::span<float> results) const {
    return jvps_by_jvp(*this, batch, directions, count, results);
}

}  // namespace tapevm
