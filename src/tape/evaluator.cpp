#include "tapevm/evaluator.hpp"

#include <algorithm>
#include <vector>

#include "detail/expand_lanes.hpp"
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

}  // namespace

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
