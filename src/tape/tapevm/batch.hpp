// The batch layout every backend shares (reference, CPU, GPU): row-major spans in, caller
// buffers out.
//   inputs       [points][n_inputs]
//   params       [points][n_params] (one set per point) or [n_params] (shared by all points)
//   outputs      [points][n_outputs]
//   gradients    [points][n_inputs]            (tapes with one output)
//   jacobians    [points][n_outputs][n_inputs]
//   jvp          tangents [points][n_inputs]     -> [points][n_outputs]
//   vjp          cotangents [points][n_outputs]  -> [points][n_inputs]
//   hvp          cotangents [points][n_outputs], directions [points][n_inputs]
//                -> [points][n_inputs]: sum_k cotangent_k * Hessian(output_k) * direction
// Wrong sizes throw ShapeError naming the expected and the given size.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

namespace tapevm {

class Tape;

/// A batch of points to evaluate a tape at, in precision Real (double or float).
template <class Real> struct Batch {
    std::size_t points = 0;
    std::span<const Real> inputs;
    std::span<const Real> params;

    /// True when params holds one set per point rather than one shared set. With one
    /// point both layouts are the same.
    bool params_per_point(std::size_t param_count) const {
        return points > 1 && params.size() == points * param_count && param_count > 0;
    }
    /// The parameters of point `point`.
    std::span<const Real> params_of(std::size_t point, std::size_t param_count) const {
        return params_per_point(param_count) ? params.subspan(point * param_count, param_count)
                                             : params.first(param_count);
    }
};

/// One point (x, p) as a batch of one.
template <class Real>
Batch<Real> single_point(std::span<const Real> inputs, std::span<const Real> params = {}) {
    return Batch<Real>{1, inputs, params};
}

/// What an evaluation reports besides its results.
struct Report {
    /// Points (sorted, 0-based) where a guard failed: the function takes another branch
    /// there than while recording, so those results follow the recorded branch, not f.
    std::vector<std::size_t> diverged;

    bool all_guards_hold() const { return diverged.empty(); }
};

/// How a Jacobian is accumulated. automatic picks forward (tangent) mode when the tape has
/// fewer inputs than outputs and reverse mode otherwise.
enum class JacobianMode { automatic, forward, reverse };

/// Throws ShapeError unless `batch` fits `tape`: inputs of points * n_inputs values, params
/// of n_params (shared) or points * n_params (per point). `where` names the call.
template <class Real> void check_batch(const Tape& tape, const Batch<Real>& batch, const std::string& where);

/// Throws ShapeError unless `buffer_size == expected`; `argument` names the buffer.
void check_size(const std::string& where, const std::string& argument, std::size_t expected,
                std::size_t buffer_size);

}  // namespace tapevm
