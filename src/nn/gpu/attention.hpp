// The gpu backend's attention kernels: flash-style forward (shaders/attention.comp, also
// kv_attention's), FlashAttention-2 backward (attention_backward_delta, _kv, _q: dk and dv
// owned by key blocks, dq by query blocks, so every gradient element is summed by one
// workgroup in a fixed order). f32 arithmetic on f32, f16 or bf16 storage; head_dim <= 128
// (larger throws Unsupported). Arguments are checked by the front end (kernels.cpp).
#pragma once

#include <cstddef>

#include "tapevm/nn/tensor.hpp"

namespace tapevm::nn::detail {

class GpuBackend;

/// The largest head_dim these kernels take.
inline constexpr std::size_t gpu_attention_max_head_dim = 128;

void gpu_attention(GpuBackend& gpu, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                   const Tensor& lse, double scale, bool causal);
/// dq, dk, dv may each be undefined (skipped).
void gpu_attention_backward(GpuBackend& gpu, const Tensor& q, const Tensor& k, const Tensor& v,
                            const Tensor& out, const Tensor& lse, const Tensor& dout, const Tensor& dq,
                            const Tensor& dk, const Tensor& dv, double scale, bool causal);
void gpu_kv_attention(GpuBackend& gpu, const Tensor& q, const Tensor& k_cache, const Tensor& v_cache,
                      const Tensor& out, std::size_t past, double scale, bool causal);

}  // namespace tapevm::nn::detail
