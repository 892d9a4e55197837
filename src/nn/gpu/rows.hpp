// The gpu backend's row kernels: softmax, layer_norm, rms_norm (forward and backward),
// embedding (forward and backward) and the fused cross_entropy. GpuBackend's overrides call
// these; arguments are checked by the front end (kernels.cpp), so these only assert.
//
// Shaders (shaders/, one variant per storage dtype): softmax*.comp, norm*.comp,
// embedding*.comp, cross_entropy.comp; softmax_team.glsl holds the row "team" reductions
// they share (a fixed reduction tree per row length: results do not depend on the number of
// workgroups). dgamma / dbeta are reduced in two passes over fixed blocks of rows
// (norm_param_partial, norm_param_reduce), embedding_backward sorts tokens by id stably in
// four passes and sums each table row in token order: no float atomics anywhere.
#pragma once

#include <cstdint>

#include "tapevm/nn/tensor.hpp"

namespace tapevm::nn::detail {

class GpuBackend;

void gpu_softmax(GpuBackend& gpu, const Tensor& x, const Tensor& y);
void gpu_softmax_backward(GpuBackend& gpu, const Tensor& y, const Tensor& dy, const Tensor& dx);

/// beta may be undefined.
void gpu_layer_norm(GpuBackend& gpu, const Tensor& x, const Tensor& gamma, const Tensor& beta,
                    const Tensor& y, const Tensor& mean, const Tensor& rstd, double eps);
/// dx, dgamma, dbeta may each be undefined (skipped).
void gpu_layer_norm_backward(GpuBackend& gpu, const Tensor& dy, const Tensor& x, const Tensor& gamma,
                             const Tensor& mean, const Tensor& rstd, const Tensor& dx, const Tensor& dgamma,
                             const Tensor& dbeta);
void gpu_rms_norm(GpuBackend& gpu, const Tensor& x, const Tensor& gamma, const Tensor& y, const Tensor& rstd,
                  double eps);
void gpu_rms_norm_backward(GpuBackend& gpu, const Tensor& dy, const Tensor& x, const Tensor& gamma,
                           const Tensor& rstd, const Tensor& dx, const Tensor& dgamma);

/// An id outside [0, V) is reported through the device error buffer (thrown at the next wait).
void gpu_embedding(GpuBackend& gpu, const Tensor& ids, const Tensor& table, const Tensor& out);
void gpu_embedding_backward(GpuBackend& gpu, const Tensor& ids, const Tensor& dout, const Tensor& dtable);

/// dlogits may be undefined (losses only) or logits itself.
void gpu_cross_entropy(GpuBackend& gpu, const Tensor& logits, const Tensor& targets, const Tensor& losses,
                       const Tensor& dlogits, std::int32_t pad_id, double dloss);

}  // namespace tapevm::nn::detail
