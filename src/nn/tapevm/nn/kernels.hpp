// The kernel set: what a model's forward and backward passes are made of, on any device.
//
// Every function checks its arguments before anything is recorded (shapes, dtypes, that all
// tensors live on one device, aliasing) and throws tapevm::ShapeError or tapevm::Error naming
// the kernel and the argument ("layer_norm: gamma: ..."); devices may assume valid input.
// Kernels are recorded into the device's stream (device.hpp) and return at once.
//
// Conventions, as in llm.c:
// - Tensors are row-major; "rows" are all axes but the last, flattened.
// - Floating-point arguments of one call share a dtype, except statistics and losses (mean,
//   rstd, lse, losses, norms), which have the device's accumulate_dtype(), and matmul's C.
// - Backward kernels ADD into their gradient outputs (dx += ..., dgamma += ...), so that
//   residual branches and micro-batches sum there: zero gradients first where needed. The
//   one exception is cross_entropy's dlogits, which it writes.
// - Reductions are deterministic: the same inputs give the same bits, whatever the thread or
//   workgroup count; no float atomics.
// - f16 and bf16 are storage formats: kernels load them, compute in f32 and round on store.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "tapevm/nn/device.hpp"
#include "tapevm/nn/tensor.hpp"

namespace tapevm {
class Tape;
}

namespace tapevm::nn {

// ---- memory -------------------------------------------------------------------------------

/// Sets every element to 0.
void zero(const Tensor& x);
/// Sets every element to `value` (rounded to x's dtype).
void fill(const Tensor& x, double value);
/// dst = src converted to dst's dtype (same element count; shapes may differ).
void copy(const Tensor& src, const Tensor& dst);

// ---- contractions -------------------------------------------------------------------------

struct MatmulOptions {
    bool transpose_a = false;  // A is stored [K][M] (per batch) and used transposed
    bool transpose_b = false;  // B is stored [N][K] and used transposed
    double alpha = 1;
    double beta = 0;         // C = alpha op(A) op(B) + beta C; beta = 1 accumulates gradients
    Tensor bias = Tensor();  // optional [N] of C's dtype, added to every row of C (a Linear layer's bias)
};

/// C = alpha op(A) op(B) + beta C (+ bias[n] in every row). A is [M][K] (transpose_a: [K][M]),
/// B is [K][N] (transpose_b: [N][K]), C is [M][N]; with a leading batch axis on C
/// ([batch][M][N]), each of A and B is either batched too or 2-D and shared by every batch
/// (stride 0). A and B share a float dtype; C is any float dtype (f16 inputs accumulate in f32,
/// on tensor cores where the device has them). C must not share memory with A, B or bias. The
/// gpu device adds the bias in the matmul's own epilogue (C rounded once); the others add it
/// as bias_add(C, bias) after the product.
void matmul(const Tensor& a, const Tensor& b, const Tensor& c, MatmulOptions options = {});

// ---- elementwise and reductions -----------------------------------------------------------

/// x[r][j] += bias[j]: x is [..., N], bias [N].
void bias_add(const Tensor& x, const Tensor& bias);
/// dst += alpha src (same element count).
void add_assign(const Tensor& dst, const Tensor& src, double alpha = 1);
/// Inverted dropout: y = x / (1 - p) where element i is kept, else 0. The mask is a pure
/// function of (seed, stream, flat index i), the same bits on every device and thread count, so
/// the backward pass is the same call on the gradient (dx = dropout(dy) with the same p, seed and
/// stream) and no mask is stored. A Dropout module passes a new stream per call. 0 <= p < 1,
/// rounded to a multiple of 2^-24; y may be x; same shape and dtype.
void dropout(const Tensor& x, const Tensor& y, double p, std::uint64_t seed, std::uint64_t stream);
/// True when dropout(p, seed, stream) keeps flat element `index` (for tests and host code).
bool dropout_keeps(double p, std::uint64_t seed, std::uint64_t stream, std::uint32_t index);
/// y = sum of x over axis `axis` (y's shape is x's without that axis; or with it as 1).
/// accumulate: y += instead of y =.
void reduce_sum(const Tensor& x, const Tensor& y, std::size_t axis, bool accumulate = false);
/// y[b][j][i] = x[b][i][j]: x is [R][C] or [batch][R][C], y [C][R] or [batch][C][R].
void transpose_2d(const Tensor& x, const Tensor& y);

// ---- row kernels ---------------------------------------------------------------------------

/// y = softmax(x) over the last axis (max-subtracted; -inf entries give 0; a row of only
/// -inf gives 0, never NaN). y may be x itself.
void softmax(const Tensor& x, const Tensor& y);
/// dx += y * (dy - sum(dy * y)) per row, from softmax's output y.
void softmax_backward(const Tensor& y, const Tensor& dy, const Tensor& dx);

/// y = (x - mean) * rstd * gamma + beta per row of x [rows][N]; gamma and beta are [N]
/// (beta may be undefined: none). mean and rstd [rows] (accumulate dtype) receive the
/// statistics that the backward pass reads. rstd = 1 / sqrt(var + eps), var the biased
/// variance. y may be x itself.
void layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, const Tensor& y, const Tensor& mean,
                const Tensor& rstd, double eps = 1e-5);
/// dx += ..., dgamma += sum over rows of dy * xhat, dbeta += sum over rows of dy (dbeta
/// undefined when there is no beta; dx or dgamma undefined to skip them).
void layer_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& gamma, const Tensor& mean,
                         const Tensor& rstd, const Tensor& dx, const Tensor& dgamma, const Tensor& dbeta);

/// y = x * rstd * gamma, rstd = 1 / sqrt(mean(x^2) + eps) per row (saved, accumulate dtype).
void rms_norm(const Tensor& x, const Tensor& gamma, const Tensor& y, const Tensor& rstd, double eps = 1e-6);
/// dx += ..., dgamma += sum over rows of dy * x * rstd.
void rms_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& gamma, const Tensor& rstd,
                       const Tensor& dx, const Tensor& dgamma);

// ---- embeddings and losses ----------------------------------------------------------------

/// out[t] = table[ids[t]]: ids i32 [tokens] (any shape), table [V][D], out [..ids shape.., D].
/// An id outside [0, V) throws tapevm::Error naming it (on the GPU, found by the kernel and
/// thrown by the next wait; the row is left as zeros and nothing outside table is read).
void embedding(const Tensor& ids, const Tensor& table, const Tensor& out);
/// dtable[ids[t]] += dout[t], summed in token order for each row (deterministic).
void embedding_backward(const Tensor& ids, const Tensor& dout, const Tensor& dtable);

/// Fused softmax cross-entropy. logits [rows][V], targets i32 [rows]; losses [rows]
/// (accumulate dtype) = logsumexp(row) - logit[target]; rows whose target is pad_id get loss
/// 0. dlogits (same shape and dtype as logits, may be logits itself, or undefined to skip) is
/// WRITTEN: (softmax(row) - onehot(target)) * dloss, and 0 for pad rows. A target outside
/// [0, V) other than pad_id is an error as for embedding.
void cross_entropy(const Tensor& logits, const Tensor& targets, const Tensor& losses, const Tensor& dlogits,
                   std::int32_t pad_id = -1, double dloss = 1);

/// out[0] = sum over every tensor of the sum of its squared elements (out: one element,
/// accumulate dtype), in a fixed order: the square of the global norm, for clipping.
void global_norm_squared(std::span<const Tensor> tensors, const Tensor& out);

// ---- attention ------------------------------------------------------------------------------

struct AttentionOptions {
    double scale = 0;    // 0: 1 / sqrt(head_dim)
    bool causal = true;  // query t sees keys 0..t (plus kv_attention's past)
};

/// Flash-style attention with grouped-query heads. q [B][T][Hq][D], k and v [B][T][Hkv][D]
/// (Hq a multiple of Hkv: query head h reads kv head h / (Hq / Hkv)), out [B][T][Hq][D],
/// lse [B][Hq][T] (accumulate dtype): each row's log-sum-exp of scaled scores, for backward.
/// A row with no visible key (not possible with causal) gives 0 and lse -inf.
void attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out, const Tensor& lse,
               AttentionOptions options = {});
/// FlashAttention-2's backward (scores recomputed from q, k and lse): dq += ..., dk += ...,
/// dv += ... (each may be undefined to skip it).
void attention_backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                        const Tensor& lse, const Tensor& dout, const Tensor& dq, const Tensor& dk,
                        const Tensor& dv, AttentionOptions options = {});
/// Attention over a key/value cache, forward only (decoding and prefill). q [B][Tq][Hq][D];
/// k_cache and v_cache [B][Tmax][Hkv][D] hold `past + Tq` valid positions (the first `past`
/// from earlier calls, then this call's); query t sits at position past + t and (causal)
/// sees positions 0 .. past + t. out [B][Tq][Hq][D].
void kv_attention(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache, const Tensor& out,
                  std::size_t past, AttentionOptions options = {});

// ---- elementwise tapes ----------------------------------------------------------------------

/// Runs `tape` elementwise: output j at element e is tape output j of (input i at e). Each
/// output has the call's shape S (all outputs one shape); each input has S, or broadcasts:
/// one element (scalar), S's last extent (a row vector, [N]), or S with last extent 1 (a
/// column, [..., 1]). Outputs may be inputs (in place). The tape's shared parameters, if it
/// has any, come from `params` (host values). f16/bf16 tensors compute in f32.
/// Tapes run on the CPU VM (cpu device), the tape compiler (gpu) or the reference VM.
void elementwise(const Tape& tape, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                 std::span<const double> params = {});
/// The backward of elementwise (the tape's vjp): input_grads[i] += sum over outputs j of
/// output_grads[j] * d output_j / d input_i, reduced over broadcast axes in a fixed order.
/// input_grads[i] undefined: skipped. output_grads has one tensor per output, shape S.
void elementwise_backward(const Tape& tape, std::span<const Tensor> inputs,
                          std::span<const Tensor> output_grads, std::span<const Tensor> input_grads,
                          std::span<const double> params = {});

}  // namespace tapevm::nn
