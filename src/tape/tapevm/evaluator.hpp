// The one interface every backend implements (reference VM, CPU VM, GPU VM): the same six
// operations in double and float over the batch layout of batch.hpp, with caller-provided
// buffers (the virtual functions) or returned ones (the templates at the end).
//
// A backend derives from EvaluatorBase<Self> and writes each operation once, as a template
// on Real:
//
//   class Vm final : public EvaluatorBase<Vm> {
//       template <class Real> Report forward_impl(const Batch<Real>&, std::span<Real>) const;
//       ... gradient_impl, jacobian_impl, jvp_impl, vjp_impl, hvp_impl
//       friend class EvaluatorBase<Vm>;
//   };
//
// Shapes are checked by the base (check_* below) before the backend is called, so every
// backend throws the same ShapeError for the same mistake.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "tapevm/batch.hpp"
#include "tapevm/tape.hpp"

namespace tapevm {

/// Results returned by value.
template <class Real> struct Evaluation {
    std::vector<Real> values;
    Report report;
};

class ReducedTape;

/// The adjoints of inputs shared by every point, summed over groups of points (ReducedTape's
/// hook below): group g covers points [g * group, (g + 1) * group), its sums are
/// sums[g * shared ..] in f64, each the pairwise sum over its points along
/// detail/pairwise_sum.hpp's fixed tree (so whole groups are nodes of that tree).
struct SharedSums {
    std::size_t group = 1;  // a power of two; asked for: at most this many points per group
    std::vector<double> sums;
};

class Evaluator {
public:
    virtual ~Evaluator() = default;

    virtual const Tape& tape() const = 0;
    /// What evaluates: "reference", "cpu (avx512, 2 threads)", "gpu (NVIDIA H100)".
    virtual std::string name() const = 0;

    /// outputs [points][n_outputs]
    virtual Report forward(const Batch<double>& batch, std::span<double> outputs) const = 0;
    virtual Report forward(const Batch<float>& batch, std::span<float> outputs) const = 0;

    /// gradients [points][n_inputs]; the tape must have exactly one output (else Unsupported:
    /// use vjp or jacobian).
    virtual Report gradient(const Batch<double>& batch, std::span<double> gradients) const = 0;
    virtual Report gradient(const Batch<float>& batch, std::span<float> gradients) const = 0;

    /// jacobians [points][n_outputs][n_inputs]; automatic picks forward mode when the tape has
    /// fewer inputs than outputs, reverse mode otherwise.
    virtual Report jacobian(const Batch<double>& batch, std::span<double> jacobians,
                            JacobianMode mode = JacobianMode::automatic) const = 0;
    virtual Report jacobian(const Batch<float>& batch, std::span<float> jacobians,
                            JacobianMode mode = JacobianMode::automatic) const = 0;

    /// Jacobian-vector products: tangents [points][n_inputs] -> results [points][n_outputs]
    virtual Report jvp(const Batch<double>& batch, std::span<const double> tangents,
                       std::span<double> results) const = 0;
    virtual Report jvp(const Batch<float>& batch, std::span<const float> tangents,
                       std::span<float> results) const = 0;

    /// Vector-Jacobian products: cotangents [points][n_outputs] -> results [points][n_inputs]
    virtual Report vjp(const Batch<double>& batch, std::span<const double> cotangents,
                       std::span<double> results) const = 0;
    virtual Report vjp(const Batch<float>& batch, std::span<const float> cotangents,
                       std::span<float> results) const = 0;

    /// Hessian-vector products (forward over reverse): results [points][n_inputs] =
    /// sum_k cotangents[k] * Hessian(output k) * directions.
    virtual Report hvp(const Batch<double>& batch, std::span<const double> cotangents,
                       std::span<const double> directions, std::span<double> results) const = 0;
    virtual Report hvp(const Batch<float>& batch, std::span<const float> cotangents,
                       std::span<const float> directions, std::span<float> results) const = 0;

    /// Several Jacobian-vector products per point in directions shared by every point:
    /// directions [count][n_inputs] -> results [points][count][n_outputs], result c of a point
    /// being what jvp gives for direction c (the columns of a compressed Jacobian, as
    /// sparse_jacobian seeds them; JAX's jacfwd over a basis; ADOL-C's fov_forward). Backends
    /// that can evaluate each point's values once for all its directions do (the reference
    /// VM; the CPU VM on few points); the others run jvp over points x directions.
    Report jvps(const Batch<double>& batch, std::span<const double> directions, std::size_t count,
                std::span<double> results) const;
    Report jvps(const Batch<float>& batch, std::span<const float> directions, std::size_t count,
                std::span<float> results) const;

    // Returned buffers: the same operations, results allocated here.
    template <class Real> Evaluation<Real> forward(const Batch<Real>& batch) const {
        Evaluation<Real> e{std::vector<Real>(batch.points * tape().output_count()), {}};
        e.report = forward(batch, std::span<Real>(e.values));
        return e;
    }
    template <class Real> Evaluation<Real> gradient(const Batch<Real>& batch) const {
        Evaluation<Real> e{std::vector<Real>(batch.points * tape().input_count()), {}};
        e.report = gradient(batch, std::span<Real>(e.values));
        return e;
    }
    template <class Real>
    Evaluation<Real> jacobian(const Batch<Real>& batch, JacobianMode mode = JacobianMode::automatic) const {
        Evaluation<Real> e{
            std::vector<Real>(batch.points * std::size_t{tape().output_count()} * tape().input_count()), {}};
        e.report = jacobian(batch, std::span<Real>(e.values), mode);
        return e;
    }
    template <class Real>
    Evaluation<Real> jvp(const Batch<Real>& batch, std::span<const Real> tangents) const {
        Evaluation<Real> e{std::vector<Real>(batch.points * tape().output_count()), {}};
        e.report = jvp(batch, tangents, std::span<Real>(e.values));
        return e;
    }
    template <class Real>
    Evaluation<Real> vjp(const Batch<Real>& batch, std::span<const Real> cotangents) const {
        Evaluation<Real> e{std::vector<Real>(batch.points * tape().input_count()), {}};
        e.report = vjp(batch, cotangents, std::span<Real>(e.values));
        return e;
    }
    template <class Real>
    Evaluation<Real> hvp(const Batch<Real>& batch, std::span<const Real> cotangents,
                         std::span<const Real> directions) const {
        Evaluation<Real> e{std::vector<Real>(batch.points * tape().input_count()), {}};
        e.report = hvp(batch, cotangents, directions, std::span<Real>(e.values));
        return e;
    }
    template <class Real>
    Evaluation<Real> jvps(const Batch<Real>& batch, std::span<const Real> directions,
                          std::size_t count) const {
        Evaluation<Real> e{std::vector<Real>(batch.points * count * tape().output_count()), {}};
        e.report = jvps(batch, directions, count, std::span<Real>(e.values));
        return e;
    }

protected:
    /// jvps after its shape checks. This one runs jvp over points x directions (in chunks of
    /// bounded memory); a backend overrides it where it does better.
    virtual Report evaluate_jvps(const Batch<double>& batch, std::span<const double> directions,
                                 std::size_t count, std::span<double> results) const;
    virtual Report evaluate_jvps(const Batch<float>& batch, std::span<const float> directions,
                                 std::size_t count, std::span<float> results) const;

    /// ReducedTape's hooks (its shapes checked there): the tape's inputs [from, n) take the
    /// values `shared` at every point, so batch.inputs holds only [points][from].
    /// forward: outputs [points][m]. vjp with cotangents [points][m]: the other inputs'
    /// adjoints in point_results [points][from], the shared inputs' summed into `sums`. These
    /// defaults give every point its whole row and call forward and vjp (groups of 1 point); a
    /// backend overrides them where it keeps the shared inputs once and sums their adjoints
    /// as it goes (the CPU VM).
    virtual Report evaluate_forward_shared(const Batch<double>& batch, std::size_t from,
                                           std::span<const double> shared, std::span<double> outputs) const;
    virtual Report evaluate_forward_shared(const Batch<float>& batch, std::size_t from,
                                           std::span<const float> shared, std::span<float> outputs) const;
    virtual Report evaluate_vjp_shared(const Batch<double>& batch, std::size_t from,
                                       std::span<const double> shared, std::span<const double> cotangents,
                                       std::span<double> point_results, SharedSums& sums) const;
    virtual Report evaluate_vjp_shared(const Batch<float>& batch, std::size_t from,
                                       std::span<const float> shared, std::span<const float> cotangents,
                                       std::span<float> point_results, SharedSums& sums) const;
    friend class ReducedTape;
};

/// True when a Jacobian in `mode` is accumulated in forward (tangent) mode for `tape`.
bool jacobian_uses_forward_mode(const Tape& tape, JacobianMode mode);

// The shape checks every operation starts with (ShapeError naming the call, the buffer, the
// expected and the given size; Unsupported for gradient on a tape without exactly 1 output).
template <class Real>
void check_forward(const Tape& tape, const Batch<Real>& batch, std::span<const Real> outputs);
template <class Real>
void check_gradient(const Tape& tape, const Batch<Real>& batch, std::span<const Real> gradients);
template <class Real>
void check_jacobian(const Tape& tape, const Batch<Real>& batch, std::span<const Real> jacobians);
template <class Real>
void check_jvp(const Tape& tape, const Batch<Real>& batch, std::span<const Real> tangents,
               std::span<const Real> results);
template <class Real>
void check_jvps(const Tape& tape, const Batch<Real>& batch, std::span<const Real> directions,
                std::size_t count, std::span<const Real> results);
template <class Real>
void check_vjp(const Tape& tape, const Batch<Real>& batch, std::span<const Real> cotangents,
               std::span<const Real> results);
template <class Real>
void check_hvp(const Tape& tape, const Batch<Real>& batch, std::span<const Real> cotangents,
               std::span<const Real> directions, std::span<const Real> results);

/// Implements Evaluator's virtual functions by checking shapes and calling Self's templates
/// forward_impl<Real>, gradient_impl, jacobian_impl, jvp_impl, vjp_impl and hvp_impl.
template <class Self> class EvaluatorBase : public Evaluator {
public:
    using Evaluator::forward;
    using Evaluator::gradient;
    using Evaluator::hvp;
    using Evaluator::jacobian;
    using Evaluator::jvp;
    using Evaluator::jvps;
    using Evaluator::vjp;

    Report forward(const Batch<double>& b, std::span<double> out) const final { return forward_t(b, out); }
    Report forward(const Batch<float>& b, std::span<float> out) const final { return forward_t(b, out); }
    Report gradient(const Batch<double>& b, std::span<double> out) const final { return gradient_t(b, out); }
    Report gradient(const Batch<float>& b, std::span<float> out) const final { return gradient_t(b, out); }
    Report jacobian(const Batch<double>& b, std::span<double> out,
                    JacobianMode mode = JacobianMode::automatic) const final {
        return jacobian_t(b, out, mode);
    }
    Report jacobian(const Batch<float>& b, std::span<float> out,
                    JacobianMode mode = JacobianMode::automatic) const final {
        return jacobian_t(b, out, mode);
    }
    Report jvp(const Batch<double>& b, std::span<const double> t, std::span<double> out) const final {
        return jvp_t(b, t, out);
    }
    Report jvp(const Batch<float>& b, std::span<const float> t, std::span<float> out) const final {
        return jvp_t(b, t, out);
    }
    Report vjp(const Batch<double>& b, std::span<const double> c, std::span<double> out) const final {
        return vjp_t(b, c, out);
    }
    Report vjp(const Batch<float>& b, std::span<const float> c, std::span<float> out) const final {
        return vjp_t(b, c, out);
    }
    Report hvp(const Batch<double>& b, std::span<const double> c, std::span<const double> d,
               std::span<double> out) const final {
        return hvp_t(b, c, d, out);
    }
    Report hvp(const Batch<float>& b, std::span<const float> c, std::span<const float> d,
               std::span<float> out) const final {
        return hvp_t(b, c, d, out);
    }

protected:
    /// jvps: Self's jvps_impl<Real> where it has one (a backend that evaluates a point once
    /// for all its directions), else Evaluator's.
    Report evaluate_jvps(const Batch<double>& b, std::span<const double> d, std::size_t count,
                         std::span<double> out) const override {
        return jvps_t(b, d, count, out);
    }
    Report evaluate_jvps(const Batch<float>& b, std::span<const float> d, std::size_t count,
                         std::span<float> out) const override {
        return jvps_t(b, d, count, out);
    }

    /// The shared-input hooks: Self's forward_shared_impl<Real> and vjp_shared_impl<Real> where
    /// it has them, else Evaluator's.
    Report evaluate_forward_shared(const Batch<double>& b, std::size_t from, std::span<const double> shared,
                                   std::span<double> out) const override {
        return forward_shared_t(b, from, shared, out);
    }
    Report evaluate_forward_shared(const Batch<float>& b, std::size_t from, std::span<const float> shared,
                                   std::span<float> out) const override {
        return forward_shared_t(b, from, shared, out);
    }
    Report evaluate_vjp_shared(const Batch<double>& b, std::size_t from, std::span<const double> shared,
                               std::span<const double> c, std::span<double> out,
                               SharedSums& sums) const override {
        return vjp_shared_t(b, from, shared, c, out, sums);
    }
    Report evaluate_vjp_shared(const Batch<float>& b, std::size_t from, std::span<const float> shared,
                               std::span<const float> c, std::span<float> out,
                               SharedSums& sums) const override {
        return vjp_shared_t(b, from, shared, c, out, sums);
    }

private:
    const Self& self() const { return static_cast<const Self&>(*this); }

    template <class Real>
    Report forward_shared_t(const Batch<Real>& b, std::size_t from, std::span<const Real> shared,
                            std::span<Real> out) const {
        if constexpr (requires { self().template forward_shared_impl<Real>(b, from, shared, out); }) {
            return self().template forward_shared_impl<Real>(b, from, shared, out);
        } else {
            return Evaluator::evaluate_forward_shared(b, from, shared, out);
        }
    }
    template <class Real>
    Report vjp_shared_t(const Batch<Real>& b, std::size_t from, std::span<const Real> shared,
                        std::span<const Real> c, std::span<Real> out, SharedSums& sums) const {
        if constexpr (requires { self().template vjp_shared_impl<Real>(b, from, shared, c, out, sums); }) {
            return self().template vjp_shared_impl<Real>(b, from, shared, c, out, sums);
        } else {
            return Evaluator::evaluate_vjp_shared(b, from, shared, c, out, sums);
        }
    }

    template <class Real>
    Report jvps_t(const Batch<Real>& b, std::span<const Real> d, std::size_t count,
                  std::span<Real> out) const {
        if constexpr (requires { self().template jvps_impl<Real>(b, d, count, out); }) {
            return self().template jvps_impl<Real>(b, d, count, out);
        } else {
            return Evaluator::evaluate_jvps(b, d, count, out);
        }
    }

    template <class Real> Report forward_t(const Batch<Real>& b, std::span<Real> out) const {
        check_forward<Real>(tape(), b, out);
        return self().template forward_impl<Real>(b, out);
    }
    template <class Real> Report gradient_t(const Batch<Real>& b, std::span<Real> out) const {
        check_gradient<Real>(tape(), b, out);
        return self().template gradient_impl<Real>(b, out);
    }
    template <class Real>
    Report jacobian_t(const Batch<Real>& b, std::span<Real> out, JacobianMode mode) const {
        check_jacobian<Real>(tape(), b, out);
        return self().template jacobian_impl<Real>(b, out, mode);
    }
    template <class Real>
    Report jvp_t(const Batch<Real>& b, std::span<const Real> t, std::span<Real> out) const {
        check_jvp<Real>(tape(), b, t, out);
        return self().template jvp_impl<Real>(b, t, out);
    }
    template <class Real>
    Report vjp_t(const Batch<Real>& b, std::span<const Real> c, std::span<Real> out) const {
        check_vjp<Real>(tape(), b, c, out);
        return self().template vjp_impl<Real>(b, c, out);
    }
    template <class Real>
    Report hvp_t(const Batch<Real>& b, std::span<const Real> c, std::span<const Real> d,
                 std::span<Real> out) const {
        check_hvp<Real>(tape(), b, c, d, out);
        return self().template hvp_impl<Real>(b, c, d, out);
    }
};

}  // namespace tapevm
