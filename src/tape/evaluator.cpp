#include "tapevm/evaluator.hpp"

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
    template void check_vjp(const Tape&, const Batch<Real>&, std::span<const Real>, std::span<const Real>); \
    template void check_hvp(const Tape&, const Batch<Real>&, std::span<const Real>, std::span<const Real>,  \
                            std::span<const Real>);
TAPEVM_INSTANTIATE(double)
TAPEVM_INSTANTIATE(float)
#undef TAPEVM_INSTANTIATE

}  // namespace tapevm
