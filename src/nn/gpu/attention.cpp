// The gpu backend's attention kernels (attention.hpp): host side. Push constants mirror the
// `Push` blocks of shaders/attention*.comp (32-bit fields, no padding).
#include "attention.hpp"

#include <array>
#include <cassert>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <string>

#include "backend.hpp"
#include "context.hpp"
#include "tapevm/error.hpp"

namespace tapevm::nn::detail {

namespace {

// Block sizes shared with the shaders: query rows per forward workgroup (ROWS in
// attention.comp), keys per dk/dv workgroup (KEYS in attention_backward_kv.comp), queries per
// dq workgroup (QUERIES in attention_backward_q.comp).
constexpr std::size_t forward_rows = 16;
// attention_tiled.comp's BR and BC.
constexpr std::size_t tiled_rows = 64, tiled_keys = 32;
constexpr std::size_t backward_keys = 16;
constexpr std::size_t backward_queries = 16;
// Flag bits shared with the shaders.
constexpr std::uint32_t attn_causal = 1, attn_write_lse = 2, attn_write_dk = 4, attn_write_dv = 8;

struct ForwardPush {
    std::uint32_t q_len, kv_len, past, heads_q, heads_kv, dim, flags;
    float scale;
};
struct BackwardPush {
    std::uint32_t batch, seq, heads_q, heads_kv, dim, flags;
    float scale;
};
static_assert(sizeof(ForwardPush) == 32 && sizeof(BackwardPush) == 28);

std::uint32_t to_u32(std::size_t value, const char* kernel) {
    if (value > std::numeric_limits<std::uint32_t>::max()) {
        throw Unsupported(std::string(kernel) + ": more than 2^32 - 1 elements on the gpu");
    }
    return static_cast<std::uint32_t>(value);
}

void check_head_dim(std::size_t dim, const char* kernel) {
    if (dim > gpu_attention_max_head_dim) {
        throw Unsupported(std::string(kernel) + ": head_dim " + std::to_string(dim) +
                          " is over the gpu's limit of " + std::to_string(gpu_attention_max_head_dim));
    }
}

/// Workgroup counts (Vulkan guarantees 65535 per axis): beyond that, Unsupported.
Groups checked_groups(std::size_t x, std::size_t y, std::size_t z, const char* kernel) {
    if (x > 65535 || y > 65535 || z > 65535) {
        throw Unsupported(std::string(kernel) + ": the shape needs more than 65535 workgroups on one axis (" +
                          std::to_string(x) + ", " + std::to_string(y) + ", " + std::to_string(z) + ")");
    }
    return {static_cast<std::uint32_t>(x), static_cast<std::uint32_t>(y), static_cast<std::uint32_t>(z)};
}

std::string variant(const char* shader, const Tensor& t) {
    return std::string(shader) + "_" + shader_suffix(t.dtype());
}

// Specialization constants: 0 the backward kernels' second tile size (unused by the forward
// kernel), 1 head_dim (one pipeline per head size).

/// The second tile size of the backward kernels (their specialization constant 0): 16 where
/// the device's shared memory holds the 16-row tiles (about 35 KiB at head_dim 128), else 8.
std::uint32_t backward_other_block(const GpuBackend& gpu) {
    return gpu.max_shared_memory() >= 36 * 1024 ? 16u : 8u;
}

/// True when the device runs the register-tiled kernels (attention_tiled*.comp): subgroup
/// shuffles among groups of 8 lanes, `shared_bytes` of shared memory. TAPEVM_NN_ATTENTION=simple
/// keeps attention.comp and attention_backward_*.comp (for comparisons).
bool tiled_kernels_fit(const GpuBackend& gpu, std::size_t shared_bytes) {
    static const bool simple = [] {
        const char* env = std::getenv("TAPEVM_NN_ATTENTION");
        return env != nullptr && std::string(env) == "simple";
    }();
    const std::uint32_t lanes = gpu.subgroup_size();
    return !simple && gpu.device().info().subgroup_shuffle && lanes >= 8 && lanes <= 128 &&
           128 % lanes == 0 && shared_bytes <= gpu.max_shared_memory();
}

/// attention_tiled.comp for this forward pass: head_dim <= 64 and a multiple of 4, 32 rows or more.
bool use_tiled_forward(const GpuBackend& gpu, std::size_t rows, std::size_t dim) {
    return rows >= 32 && dim % 4 == 0 && dim <= 64 &&
           tiled_kernels_fit(gpu, 4 * (tiled_rows * dim + tiled_keys * dim + tiled_keys * tiled_rows));
}

/// attention_tiled_backward_{kv,q}.comp: head_dim a power of two <= 64 (their swizzle).
bool use_tiled_backward(const GpuBackend& gpu, std::size_t dim) {
    return dim >= 4 && dim <= 64 && (dim & (dim - 1)) == 0 &&
           tiled_kernels_fit(gpu, 4 * 4 * tiled_keys * dim);
}

/// True when the tensor-core kernels (attention_coopmat*.comp) run these f16 tensors: a device
/// with 16 x 16 x 16 f16 tensor-core shapes and 32-wide subgroups, head_dim 16, 32, 48 or 64.
/// TAPEVM_NN_ATTENTION=simple or tiled keeps the f32-arithmetic kernels (for comparisons).
bool coopmat_kernels_fit(GpuBackend& gpu, const Tensor& q, std::size_t dim) {
    static const bool off = [] {
        const char* env = std::getenv("TAPEVM_NN_ATTENTION");
        return env != nullptr && (std::string(env) == "simple" || std::string(env) == "tiled");
    }();
    return !off && q.dtype() == DType::f16 && dim % 16 == 0 && dim <= 64 && gpu.has_cooperative_matrix() &&
           gpu.cooperative_shape(16, 16, 16) && gpu.subgroup_size() == 32;
}

/// attention_coopmat.comp for this forward pass: coopmat_kernels_fit and 32 queries or more.
bool use_coopmat_forward(GpuBackend& gpu, const Tensor& q, std::size_t q_len, std::size_t dim) {
    if (q_len < 32 || !coopmat_kernels_fit(gpu, q, dim)) return false;
    const std::size_t shared = 16 * (tiled_rows + 2 * tiled_keys) * (dim / 8 + 1) +
                               4 * 4 * 16 * (tiled_keys + 4) + 4 * 16 * 16 * (tiled_keys / 8 + 1) +
                               4 * 4 * 16;
    return shared <= gpu.max_shared_memory();
}

/// attention_coopmat_backward_{kv,q}.comp: the same conditions, for any sequence length.
bool use_coopmat_backward(GpuBackend& gpu, const Tensor& q, std::size_t dim) {
    if (!coopmat_kernels_fit(gpu, q, dim)) return false;
    const std::size_t row = 16 * (dim / 8 + 1);  // a padded f16 row
    const std::size_t kv_shared = row * (64 + 2 * tiled_keys) + 4 * 2 * tiled_keys +
                                  4 * 4 * 16 * (tiled_keys + 4) + 2 * 4 * 16 * 16 * (tiled_keys / 8 + 1);
    return kv_shared <= gpu.max_shared_memory();
}

void forward(GpuBackend& gpu, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
             const Tensor& lse, std::size_t past, double scale, bool causal, const char* kernel) {
    const std::size_t batch = q.dim(0), q_len = q.dim(1), heads_q = q.dim(2), dim = q.dim(3);
    const std::size_t kv_len = k.dim(1), heads_kv = k.dim(2);
    check_head_dim(dim, kernel);
    if (batch == 0 || q_len == 0 || heads_q == 0 || dim == 0) return;
    to_u32(q.size(), kernel);
    to_u32(k.size(), kernel);
    const std::size_t group = heads_q / heads_kv;
    const ForwardPush push{to_u32(q_len, kernel),
                           to_u32(kv_len, kernel),
                           to_u32(past, kernel),
                           to_u32(heads_q, kernel),
                           to_u32(heads_kv, kernel),
                           to_u32(dim, kernel),
                           (causal ? attn_causal : 0u) | (lse.defined() ? attn_write_lse : 0u),
                           static_cast<float>(scale)};
    if (use_coopmat_forward(gpu, q, q_len, dim)) {
        // One workgroup per (64 queries, query head, batch).
        const Groups groups = checked_groups((q_len + tiled_rows - 1) / tiled_rows, heads_q, batch, kernel);
        gpu.dispatch(gpu.pipeline("attention_coopmat_f16", {0u, to_u32(dim, kernel)}), {q, k, v, out, lse},
                     push, groups);
        return;
    }
    const bool tiled = use_tiled_forward(gpu, q_len * group, dim);
    const std::size_t rows = tiled ? tiled_rows : forward_rows;
    const Groups groups = checked_groups((q_len * group + rows - 1) / rows, heads_kv, batch, kernel);
    gpu.dispatch(gpu.pipeline(variant(tiled ? "attention_tiled" : "attention", q), {0u, to_u32(dim, kernel)}),
                 {q, k, v, out, lse}, push, groups);
}

}  // namespace

void gpu_attention(GpuBackend& gpu, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                   const Tensor& lse, double scale, bool causal) {
    forward(gpu, q, k, v, out, lse, 0, scale, causal, "attention");
}

void gpu_kv_attention(GpuBackend& gpu, const Tensor& q, const Tensor& k_cache, const Tensor& v_cache,
                      const Tensor& out, std::size_t past, double scale, bool causal) {
    forward(gpu, q, k_cache, v_cache, out, Tensor(), past, scale, causal, "kv_attention");
}

void gpu_attention_backward(GpuBackend& gpu, const Tensor& q, const Tensor& k, const Tensor& v,
                            const Tensor& out, const Tensor& lse, const Tensor& dout, const Tensor& dq,
                            const Tensor& dk, const Tensor& dv, double scale, bool causal) {
    const char* kernel = "attention_backward";
    const std::size_t batch = q.dim(0), seq = q.dim(1), heads_q = q.dim(2), dim = q.dim(3);
    const std::size_t heads_kv = k.dim(2);
    check_head_dim(dim, kernel);
    if (batch == 0 || seq == 0 || heads_q == 0 || dim == 0) return;
    if (!dq.defined() && !dk.defined() && !dv.defined()) return;
    to_u32(q.size(), kernel);
    BackwardPush push{to_u32(batch, kernel),    to_u32(seq, kernel), to_u32(heads_q, kernel),
                      to_u32(heads_kv, kernel), to_u32(dim, kernel), causal ? attn_causal : 0u,
                      static_cast<float>(scale)};
    // delta = rowsum(dout * out), [B][Hq][T] f32.
    const Tensor delta = gpu.scratch({batch, heads_q, seq}, DType::f32);
    gpu.dispatch(gpu.pipeline(variant("attention_backward_delta", q)), {out, dout, delta}, push,
                 {GpuBackend::groups_for(batch * seq * heads_q, 64), 1, 1});
    if (use_coopmat_backward(gpu, q, dim)) {
        // Workgroups of 64 keys (kv) and 64 queries (q).
        const std::array<std::uint32_t, 2> constants{0u, to_u32(dim, kernel)};
        const std::size_t blocks = (seq + 63) / 64;
        if (dk.defined() || dv.defined()) {
            BackwardPush kv_push = push;
            kv_push.flags |= (dk.defined() ? attn_write_dk : 0u) | (dv.defined() ? attn_write_dv : 0u);
            gpu.dispatch(gpu.pipeline("attention_coopmat_backward_kv_f16", constants),
                         {q, k, v, dout, lse, delta, dk, dv}, kv_push,
                         checked_groups(blocks, heads_kv, batch, kernel));
        }
        if (dq.defined()) {
            gpu.dispatch(gpu.pipeline("attention_coopmat_backward_q_f16", constants),
                         {q, k, v, dout, lse, delta, dq}, push,
                         checked_groups(blocks, heads_q, batch, kernel));
        }
        return;
    }
    if (use_tiled_backward(gpu, dim)) {
        const std::array<std::uint32_t, 2> constants{0u, to_u32(dim, kernel)};
        const std::size_t blocks = (seq + tiled_keys - 1) / tiled_keys;
        if (dk.defined() || dv.defined()) {
            BackwardPush kv_push = push;
            kv_push.flags |= (dk.defined() ? attn_write_dk : 0u) | (dv.defined() ? attn_write_dv : 0u);
            gpu.dispatch(gpu.pipeline(variant("attention_tiled_backward_kv", q), constants),
                         {q, k, v, dout, lse, delta, dk, dv}, kv_push,
                         checked_groups(blocks, heads_kv, batch, kernel));
        }
        if (dq.defined()) {
            gpu.dispatch(gpu.pipeline(variant("attention_tiled_backward_q", q), constants),
                         {q, k, v, dout, lse, delta, dq}, push,
                         checked_groups(blocks, heads_q, batch, kernel));
        }
        return;
    }
    const std::uint32_t other = backward_other_block(gpu);
    if (dk.defined() || dv.defined()) {
        BackwardPush kv_push = push;
        kv_push.flags |= (dk.defined() ? attn_write_dk : 0u) | (dv.defined() ? attn_write_dv : 0u);
        gpu.dispatch(gpu.pipeline(variant("attention_backward_kv", q), {other, to_u32(dim, kernel)}),
                     {q, k, v, dout, lse, delta, dk, dv}, kv_push,
                     checked_groups((seq + backward_keys - 1) / backward_keys, heads_kv, batch, kernel));
    }
    if (dq.defined()) {
        gpu.dispatch(gpu.pipeline(variant("attention_backward_q", q), {other, to_u32(dim, kernel)}),
                     {q, k, v, dout, lse, delta, dq}, push,
                     checked_groups((seq + backward_queries - 1) / backward_queries, heads_q, batch, kernel));
    }
}

}  // namespace tapevm::nn::detail
