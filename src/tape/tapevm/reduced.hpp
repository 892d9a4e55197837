// Gradients with respect to shared parameters, summed over the batch: fitting a model
// f(x; theta) to data. The tape is recorded as usual (per-point inputs x, shared parameters);
// a ReducedTape marks which parameters are differentiated (theta) and gives the gradient of
//
//     F(theta) = sum_p w_p f(x_p; theta)      (w_p = 1 without weights)
//
// with respect to them, on any evaluator (reference, CPU VM, GPU interpreter or compiled
// kernels) built for its lifted tape:
//
//   const tapevm::ReducedTape model(tape, {0, 1, 2});        // theta = params 0, 1 and 2
//   const tapevm::cpu::Vm vm(model.tape());                  // any backend, on the lifted tape
//   const auto g = model.gradient(vm, batch);                // g.value = F, g.gradient = dF/dtheta
//
// The lifted tape is the same function with the differentiated parameters turned into
// trailing inputs (x_0 .. x_{n-1}, theta_0 .. theta_{d-1}; the other parameters keep their
// order), so every backend's reverse sweep gives each point's term w_p * grad f(x_p; theta)
// (its vjp with cotangent w_p), and the terms are then summed over the points here.
//
// Deterministic: the sum is the pairwise sum over the point index, in f64, along one fixed
// tree (sum[0, n) = sum[0, h) + sum[h, n) with h the largest power of two below n), so the
// bits depend on the terms only: never on the thread count, the block size of a backend or
// the chunking of the batch (chunk_points). The terms are the backend's vjp, whose bits
// every backend keeps run to run. Error bound, for N points with terms t_p (as the backend
// computed them) and L = ceil(log2 N):
//
//     |result - sum_p t_p| <= u_Real |sum_p t_p| + (1 + u_Real) * L * u_64 / (1 - L * u_64) * sum_p |t_p|
//
// with u_64 = 2^-53 and u_Real the unit roundoff of the result's precision (2^-24 for f32,
// 2^-53 for f64): one rounding of the result plus the f64 pairwise sum's bound. The value F
// is summed the same way from the terms w_p * f_p, each formed in f64.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "tapevm/evaluator.hpp"

namespace tapevm {

/// What a reduced gradient call may also return; every field is optional.
template <class Real> struct ReducedOptions {
    /// w_p, one per point; empty means 1 for every point.
    std::span<const Real> weights;
    /// F, when not null (one more forward sweep per point).
    Real* value = nullptr;
    /// [points]: f(x_p; theta), unweighted.
    std::span<Real> point_values;
    /// [points][n_inputs + d]: each point's term of the gradient, w_p * grad f(x_p; theta) with
    /// respect to its inputs x_p and then theta (the lifted tape's gradient, scaled by w_p).
    std::span<Real> point_gradients;
    /// Points per evaluator call (rounded down to a power of two; 0 picks one that bounds the
    /// per-call buffers to about 2^24 values). The result's bits do not depend on it.
    std::size_t chunk_points = 0;
};

/// The value and gradient of F(theta) = sum_p w_p f(x_p; theta).
template <class Real> struct ReducedGradient {
    Real value = 0;
    std::vector<Real> gradient;  // [d], in the order of ReducedTape::differentiated()
    Report report;               // points where a guard failed
};

/// A one-output tape with some of its shared parameters differentiated.
class ReducedTape {
public:
    /// Marks parameters `differentiated` (indices into the tape's parameters, distinct, in
    /// the order the gradient lists them; empty means none: only the value is reduced, by the
    /// forward sweep alone unless point_gradients are asked for).
    /// Throws Unsupported when the tape has not exactly one output, Error on an index out of
    /// range or repeated.
    ReducedTape(const Tape& tape, std::vector<std::uint32_t> differentiated);

    /// Marks every parameter of `tape` (the gradient in parameter order).
    static ReducedTape all_params(const Tape& tape);

    /// The lifted tape: build the evaluator on this one.
    const Tape& tape() const { return lifted_; }
    /// The recorded tape's inputs and parameters: the layout of the batches passed in.
    std::uint32_t input_count() const { return inputs_; }
    std::uint32_t param_count() const { return params_; }
    std::span<const std::uint32_t> differentiated() const { return differentiated_; }

    /// dF/dtheta (and what options ask for) over `batch` (the recorded tape's layout: inputs [points][n_inputs],
    /// params [n_params] shared, theta at its own indices) on `evaluator`, which must evaluate
    /// tape() (Error otherwise: a ReducedTape of other parameters, or the recorded tape).
    /// gradient: [d]. ShapeError on a wrong size (params given per point included: theta is
    /// shared by definition). Zero points give F = 0 and a zero gradient.
    template <class Real>
    Report gradient(const Evaluator& evaluator, const Batch<Real>& batch, std::span<Real> gradient,
                    const ReducedOptions<Real>& options = {}) const;

    /// Value and gradient, the gradient allocated here.
    template <class Real>
    ReducedGradient<Real> gradient(const Evaluator& evaluator, const Batch<Real>& batch,
                                   std::span<const Real> weights = {}) const;

    /// The Hessian of F in theta times `direction` [d]: sum_p w_p d^2 f(x_p; theta)/dtheta^2
    /// direction, in `result` [d] (each point's term the backend's hvp of the lifted tape with
    /// cotangent w_p and direction (0, direction), summed like the gradient: the same fixed
    /// tree, bits independent of threads and chunks). The checks and errors of gradient().
    template <class Real>
    Report hvp(const Evaluator& evaluator, const Batch<Real>& batch, std::span<const Real> direction,
               std::span<Real> result, std::span<const Real> weights = {}) const;

    /// The dense Hessian of F in theta, [d][d] row-major: d hvps (unit directions), made
    /// exactly symmetric by averaging (i, j) and (j, i) as tapevm::hessian does. Cost: d batch
    /// hvps; for a model of many parameters use hvp.
    template <class Real>
    Report hessian(const Evaluator& evaluator, const Batch<Real>& batch, std::span<Real> result,
                   std::span<const Real> weights = {}) const;

private:
    /// The checks every call starts with; returns the parameters that stay parameters.
    template <class Real>
    std::vector<Real> check_call(const std::string& where, const Evaluator& evaluator,
                                 const Batch<Real>& batch, std::span<const Real> weights) const;

    Tape lifted_;
    std::uint32_t inputs_ = 0;
    std::uint32_t params_ = 0;
    std::vector<std::uint32_t> differentiated_;
    std::vector<std::uint32_t> kept_;  // the parameters that stay parameters, in order
};

/// The tape of `tape` with parameters `differentiated` turned into inputs n_inputs ..
/// n_inputs + d - 1 (in that order) and the other parameters renumbered in order.
Tape lift_params(const Tape& tape, std::span<const std::uint32_t> differentiated);

}  // namespace tapevm
