#include "tapevm/reference.hpp"

#include <algorithm>
#include <vector>

#include "detail/dual.hpp"
#include "detail/sweeps.hpp"
#include "tapevm/error.hpp"

namespace tapevm::reference {
namespace {

using detail::Dual;
using detail::DualMath;
using detail::ScalarMath;
using detail::Sweeps;

bool use_forward_mode(const Tape& tape, JacobianMode mode) {
    if (mode == JacobianMode::automatic) return tape.input_count() < tape.output_count();
    return mode == JacobianMode::forward;
}

// Reverse sweep at one point with output k seeded by seed(k); writes the n input adjoints to
// `results`. `work` holds one adjoint per slot.
template <class Real, class Seed>
void reverse_point(const Tape& tape, std::span<const Real> values, Seed seed, std::span<Real> work,
                   Real* results) {
    std::fill(work.begin(), work.end(), Real(0));
    for (std::size_t k = 0; k < tape.output_count(); ++k) work[tape.outputs()[k]] += seed(k);
    Sweeps<ScalarMath<Real>, Real>::reverse(tape, values, work);
    std::copy_n(work.begin(), tape.input_count(), results);
}

// Runs `body(point, values)` for every point with the point's values computed.
template <class Real, class Body>
Report for_each_point(const Tape& tape, const Batch<Real>& batch, Body body) {
    Report report;
    std::vector<Real> values(tape.slot_count());
    const std::size_t n = tape.input_count();
    for (std::size_t point = 0; point < batch.points; ++point) {
        const bool holds = Sweeps<ScalarMath<Real>, Real>::evaluate(
            tape, batch.inputs.subspan(point * n, n), batch.params_of(point, tape.param_count()), values);
        if (!holds) report.diverged.push_back(point);
        body(point, std::span<const Real>(values));
    }
    return report;
}

}  // namespace

Vm::Vm(Tape tape) : tape_(std::move(tape)) {}

template <class Real> Report Vm::forward(const Batch<Real>& batch, std::span<Real> outputs) const {
    check_batch(tape_, batch, "forward");
    const std::size_t m = tape_.output_count();
    check_size("forward", "outputs", batch.points * m, outputs.size());
    return for_each_point(tape_, batch, [&](std::size_t point, std::span<const Real> values) {
        for (std::size_t k = 0; k < m; ++k) outputs[point * m + k] = values[tape_.outputs()[k]];
    });
}

template <class Real> Report Vm::gradient(const Batch<Real>& batch, std::span<Real> gradients) const {
    if (tape_.output_count() != 1) {
        throw Unsupported("gradient: the tape has " + std::to_string(tape_.output_count()) +
                          " outputs; gradient needs exactly 1 (use vjp or jacobian)");
    }
    check_batch(tape_, batch, "gradient");
    const std::size_t n = tape_.input_count();
    check_size("gradient", "gradients", batch.points * n, gradients.size());
    std::vector<Real> work(tape_.slot_count());
    return for_each_point(tape_, batch, [&](std::size_t point, std::span<const Real> values) {
        reverse_point<Real>(
            tape_, values, [](std::size_t) { return Real(1); }, work, gradients.data() + point * n);
    });
}

template <class Real>
Report Vm::jacobian(const Batch<Real>& batch, std::span<Real> jacobians, JacobianMode mode) const {
    check_batch(tape_, batch, "jacobian");
    const std::size_t n = tape_.input_count();
    const std::size_t m = tape_.output_count();
    check_size("jacobian", "jacobians", batch.points * m * n, jacobians.size());
    using S = Sweeps<ScalarMath<Real>, Real>;
    std::vector<Real> work(tape_.slot_count());
    std::vector<Real> direction(n);
    const bool forward_mode = use_forward_mode(tape_, mode);
    return for_each_point(tape_, batch, [&](std::size_t point, std::span<const Real> values) {
        Real* jac = jacobians.data() + point * m * n;
        if (forward_mode) {
            for (std::size_t i = 0; i < n; ++i) {
                std::fill(direction.begin(), direction.end(), Real(0));
                direction[i] = 1;
                S::tangent(tape_, values, direction, work);
                for (std::size_t k = 0; k < m; ++k) jac[k * n + i] = work[tape_.outputs()[k]];
            }
        } else {
            for (std::size_t row = 0; row < m; ++row) {
                const auto seed = [row](std::size_t k) { return Real(k == row ? 1 : 0); };
                reverse_point<Real>(tape_, values, seed, work, jac + row * n);
            }
        }
    });
}

template <class Real>
Report Vm::jvp(const Batch<Real>& batch, std::span<const Real> tangents, std::span<Real> results) const {
    check_batch(tape_, batch, "jvp");
    const std::size_t n = tape_.input_count();
    const std::size_t m = tape_.output_count();
    check_size("jvp", "tangents", batch.points * n, tangents.size());
    check_size("jvp", "results", batch.points * m, results.size());
    std::vector<Real> work(tape_.slot_count());
    return for_each_point(tape_, batch, [&](std::size_t point, std::span<const Real> values) {
        Sweeps<ScalarMath<Real>, Real>::tangent(tape_, values, tangents.subspan(point * n, n), work);
        for (std::size_t k = 0; k < m; ++k) results[point * m + k] = work[tape_.outputs()[k]];
    });
}

template <class Real>
Report Vm::vjp(const Batch<Real>& batch, std::span<const Real> cotangents, std::span<Real> results) const {
    check_batch(tape_, batch, "vjp");
    const std::size_t n = tape_.input_count();
    const std::size_t m = tape_.output_count();
    check_size("vjp", "cotangents", batch.points * m, cotangents.size());
    check_size("vjp", "results", batch.points * n, results.size());
    std::vector<Real> work(tape_.slot_count());
    return for_each_point(tape_, batch, [&](std::size_t point, std::span<const Real> values) {
        const auto seed = [&](std::size_t k) { return cotangents[point * m + k]; };
        reverse_point<Real>(tape_, values, seed, work, results.data() + point * n);
    });
}

template <class Real>
Report Vm::hvp(const Batch<Real>& batch, std::span<const Real> cotangents, std::span<const Real> directions,
               std::span<Real> results) const {
    check_batch(tape_, batch, "hvp");
    const std::size_t n = tape_.input_count();
    const std::size_t m = tape_.output_count();
    check_size("hvp", "cotangents", batch.points * m, cotangents.size());
    check_size("hvp", "directions", batch.points * n, directions.size());
    check_size("hvp", "results", batch.points * n, results.size());
    using D = Dual<Real>;
    using S = Sweeps<DualMath<Real>, D>;
    std::vector<D> inputs(n);
    std::vector<D> params(tape_.param_count());
    std::vector<D> values(tape_.slot_count());
    std::vector<D> adjoints(tape_.slot_count());
    Report report;
    for (std::size_t point = 0; point < batch.points; ++point) {
        for (std::size_t i = 0; i < n; ++i)
            inputs[i] = D(batch.inputs[point * n + i], directions[point * n + i]);
        const auto point_params = batch.params_of(point, tape_.param_count());
        for (std::size_t j = 0; j < params.size(); ++j) params[j] = D(point_params[j]);
        if (!S::evaluate(tape_, inputs, params, values)) report.diverged.push_back(point);
        std::fill(adjoints.begin(), adjoints.end(), D());
        for (std::size_t k = 0; k < m; ++k) adjoints[tape_.outputs()[k]] += D(cotangents[point * m + k]);
        S::reverse(tape_, values, adjoints);
        for (std::size_t i = 0; i < n; ++i) results[point * n + i] = adjoints[i].tangent;
    }
    return report;
}

#define TAPEVM_INSTANTIATE(Real)                                                               \
    template Report Vm::forward(const Batch<Real>&, std::span<Real>) const;                    \
    template Report Vm::gradient(const Batch<Real>&, std::span<Real>) const;                   \
    template Report Vm::jacobian(const Batch<Real>&, std::span<Real>, JacobianMode) const;     \
    template Report Vm::jvp(const Batch<Real>&, std::span<const Real>, std::span<Real>) const; \
    template Report Vm::vjp(const Batch<Real>&, std::span<const Real>, std::span<Real>) const; \
    template Report Vm::hvp(const Batch<Real>&, std::span<const Real>, std::span<const Real>,  \
                            std::span<Real>) const;
TAPEVM_INSTANTIATE(double)
TAPEVM_INSTANTIATE(float)
#undef TAPEVM_INSTANTIATE

}  // namespace tapevm::reference
