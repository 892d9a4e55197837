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

std::string Vm::name() const { return "reference"; }

template <class Real> Report Vm::forward_impl(const Batch<Real>& batch, std::span<Real> outputs) const {
    const std::size_t m = tape_.output_count();
    return for_each_point(tape_, batch, [&](std::size_t point, std::span<const Real> values) {
        for (std::size_t k = 0; k < m; ++k) outputs[point * m + k] = values[tape_.outputs()[k]];
    });
}

template <class Real> Report Vm::gradient_impl(const Batch<Real>& batch, std::span<Real> gradients) const {
    const std::size_t n = tape_.input_count();
    std::vector<Real> work(tape_.slot_count());
    return for_each_point(tape_, batch, [&](std::size_t point, std::span<const Real> values) {
        reverse_point<Real>(
            tape_, values, [](std::size_t) { return Real(1); }, work, gradients.data() + point * n);
    });
}

template <class Real>
Report Vm::jacobian_impl(const Batch<Real>& batch, std::span<Real> jacobians, JacobianMode mode) const {
    const std::size_t n = tape_.input_count();
    const std::size_t m = tape_.output_count();
    using S = Sweeps<ScalarMath<Real>, Real>;
    std::vector<Real> work(tape_.slot_count());
    std::vector<Real> direction(n);
    const bool forward_mode = jacobian_uses_forward_mode(tape_, mode);
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
Report Vm::jvp_impl(const Batch<Real>& batch, std::span<const Real> tangents, std::span<Real> results) const {
    const std::size_t n = tape_.input_count();
    const std::size_t m = tape_.output_count();
    std::vector<Real> work(tape_.slot_count());
    return for_each_point(tape_, batch, [&](std::size_t point, std::span<const Real> values) {
        Sweeps<ScalarMath<Real>, Real>::tangent(tape_, values, tangents.subspan(point * n, n), work);
        for (std::size_t k = 0; k < m; ++k) results[point * m + k] = work[tape_.outputs()[k]];
    });
}

template <class Real>
Report Vm::jvps_impl(const Batch<Real>& batch, std::span<const Real> directions, std::size_t count,
                     std::span<Real> results) const {
    const std::size_t n = tape_.input_count();
    const std::size_t m = tape_.output_count();
    std::vector<Real> work(tape_.slot_count());
    return for_each_point(tape_, batch, [&](std::size_t point, std::span<const Real> values) {
        for (std::size_t c = 0; c < count; ++c) {
            Sweeps<ScalarMath<Real>, Real>::tangent(tape_, values, directions.subspan(c * n, n), work);
            for (std::size_t k = 0; k < m; ++k)
                results[(point * count + c) * m + k] = work[tape_.outputs()[k]];
        }
    });
}

template <class Real>
Report Vm::vjp_impl(const Batch<Real>& batch, std::span<const Real> cotangents,
                    std::span<Real> results) const {
    const std::size_t n = tape_.input_count();
    const std::size_t m = tape_.output_count();
    std::vector<Real> work(tape_.slot_count());
    return for_each_point(tape_, batch, [&](std::size_t point, std::span<const Real> values) {
        const auto seed = [&](std::size_t k) { return cotangents[point * m + k]; };
        reverse_point<Real>(tape_, values, seed, work, results.data() + point * n);
    });
}

template <class Real>
Report Vm::hvp_impl(const Batch<Real>& batch, std::span<const Real> cotangents,
                    std::span<const Real> directions, std::span<Real> results) const {
    const std::size_t n = tape_.input_count();
    const std::size_t m = tape_.output_count();
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

#define TAPEVM_INSTANTIATE(Real)                                                                           \
    template Report Vm::forward_impl(const Batch<Real>&, std::span<Real>) const;                           \
    template Report Vm::gradient_impl(const Batch<Real>&, std::span<Real>) const;                          \
    template Report Vm::jacobian_impl(const Batch<Real>&, std::span<Real>, JacobianMode) const;            \
    template Report Vm::jvp_impl(const Batch<Real>&, std::span<const Real>, std::span<Real>) const;        \
    template Report Vm::jvps_impl(const Batch<Real>&, std::span<const Real>, std::size_t, std::span<Real>) \
        const;                                                                                             \
    template Report Vm::vjp_impl(const Batch<Real>&, std::span<const Real>, std::span<Real>) const;        \
    template Report Vm::hvp_impl(const Batch<Real>&, std::span<const Real>, std::span<const Real>,         \
                                 std::span<Real>) const;
TAPEVM_INSTANTIATE(double)
TAPEVM_INSTANTIATE(float)
#undef TAPEVM_INSTANTIATE

}  // namespace tapevm::reference
