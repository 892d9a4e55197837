// The gpu backend's row kernels (rows.hpp): host side. Each kernel's push constants mirror the
// `Push` block of its shader (all 32-bit fields, no padding; checked by size below).
#include "rows.hpp"

#include <algorithm>
#include <bit>
#include <cassert>
#include <cstdint>
#include <limits>
#include <string>

#include "backend.hpp"
#include "tapevm/error.hpp"

namespace tapevm::nn::detail {

namespace {

/// Invocations of a row kernel's workgroup (ROW_GROUP_SIZE in shaders/softmax_team.glsl).
constexpr std::size_t row_group_size = 256;
/// Rows per block of norm_param_partial (a constant: the reduction order must not depend on
/// the device or the dispatch).
constexpr std::size_t param_block_rows = 32;

std::uint32_t to_u32(std::size_t value, const char* kernel) {
    if (value > std::numeric_limits<std::uint32_t>::max()) {
        throw Unsupported(std::string(kernel) + ": more than 2^32 - 1 elements on the gpu");
    }
    return static_cast<std::uint32_t>(value);
}

/// Subgroups per row ("team", shaders/softmax_team.glsl): enough for at most about 16
/// elements per invocation, a power of two up to the whole workgroup. A function of the row
/// length and the device's subgroup size only, so a row's reduction order is fixed.
std::uint32_t team_for(std::size_t n, std::uint32_t subgroup_size) {
    const std::size_t lanes = std::max<std::uint32_t>(1, subgroup_size);
    const std::size_t subgroups_per_group = std::max<std::size_t>(1, row_group_size / lanes);
    const std::size_t wanted = (n + 16 * lanes - 1) / (16 * lanes);
    return static_cast<std::uint32_t>(
        std::min(subgroups_per_group, std::bit_ceil(std::max<std::size_t>(1, wanted))));
}

std::string variant(const char* shader, const Tensor& t) {
    return std::string(shader) + "_" + shader_suffix(t.dtype());
}

struct RowPush {
    std::uint32_t rows, n, team;
};
struct NormPush {
    std::uint32_t rows, n, team, flags;
    float eps;
};
struct NormBackwardPush {
    std::uint32_t rows, n, team, flags;
};
struct ParamPush {
    std::uint32_t rows, n, block_rows, blocks, flags;
};
struct EmbeddingPush {
    std::uint32_t tokens, vocab, dim;
    std::uint32_t span = 0;  // embedding_backward: tokens per span of pass 1 (a multiple of 256)
};
struct CrossEntropyPush {
    std::uint32_t rows, n, team, flags;
    std::int32_t pad_id;
    float dloss;
};
static_assert(sizeof(RowPush) == 12 && sizeof(NormPush) == 20 && sizeof(NormBackwardPush) == 16 &&
              sizeof(ParamPush) == 20 && sizeof(EmbeddingPush) == 16 && sizeof(CrossEntropyPush) == 24);

// Flag bits shared with shaders/norm*.comp and cross_entropy.comp.
constexpr std::uint32_t norm_has_beta = 1, norm_rms = 2, ce_write_grad = 1;

/// Workgroups for `rows` rows at teams of `team` subgroups (the shaders loop over the rest).
Groups row_groups(const GpuBackend& gpu, std::size_t rows, std::uint32_t team) {
    const std::size_t subgroups_per_group =
        std::max<std::size_t>(1, row_group_size / std::max<std::uint32_t>(1, gpu.subgroup_size()));
    return {GpuBackend::groups_for(rows, std::max<std::size_t>(1, subgroups_per_group / team)), 1, 1};
}

/// dgamma (+= sum over rows of dy * xhat) and dbeta (+= sum of dy) in two passes.
void norm_param_grads(GpuBackend& gpu, const Tensor& dy, const Tensor& x, const Tensor& mean,
                      const Tensor& rstd, const Tensor& dgamma, const Tensor& dbeta, bool rms,
                      const char* kernel) {
    const std::size_t n = x.dim(-1);
    const std::size_t rows = n == 0 ? 0 : x.size() / n;
    if (rows == 0 || n == 0) return;
    const std::size_t blocks = (rows + param_block_rows - 1) / param_block_rows;
    const bool with_beta = dbeta.defined();
    const Tensor partial = gpu.scratch({with_beta ? 2 * blocks : blocks, n}, DType::f32);
    const ParamPush push{to_u32(rows, kernel), to_u32(n, kernel),
                         static_cast<std::uint32_t>(param_block_rows), to_u32(blocks, kernel),
                         (with_beta ? norm_has_beta : 0u) | (rms ? norm_rms : 0u)};
    gpu.dispatch(gpu.pipeline(variant("norm_param_partial", x)), {dy, x, mean, rstd, partial}, push,
                 {GpuBackend::groups_for(n, 64), GpuBackend::groups_for(blocks, 1), 1});
    gpu.dispatch(gpu.pipeline(variant("norm_param_reduce", x)), {partial, dgamma, dbeta}, push,
                 {GpuBackend::groups_for(n, 64), 1, 1});
}

void norm_forward(GpuBackend& gpu, const Tensor& x, const Tensor& gamma, const Tensor& beta, const Tensor& y,
                  const Tensor& mean, const Tensor& rstd, double eps, bool rms, const char* kernel) {
    const std::size_t n = x.dim(-1);
    const std::size_t rows = n == 0 ? 0 : x.size() / n;
    if (rows == 0) return;
    const std::uint32_t team = team_for(n, gpu.subgroup_size());
    const NormPush push{to_u32(rows, kernel), to_u32(n, kernel), team,
                        (beta.defined() ? norm_has_beta : 0u) | (rms ? norm_rms : 0u),
                        static_cast<float>(eps)};
    gpu.dispatch(gpu.pipeline(variant("norm", x)), {x, gamma, beta, y, mean, rstd}, push,
                 row_groups(gpu, rows, team));
}

void norm_backward(GpuBackend& gpu, const Tensor& dy, const Tensor& x, const Tensor& gamma,
                   const Tensor& mean, const Tensor& rstd, const Tensor& dx, const Tensor& dgamma,
                   const Tensor& dbeta, bool rms, const char* kernel) {
    const std::size_t n = x.dim(-1);
    const std::size_t rows = n == 0 ? 0 : x.size() / n;
    if (rows == 0) return;
    if (dx.defined()) {
        const std::uint32_t team = team_for(n, gpu.subgroup_size());
        const NormBackwardPush push{to_u32(rows, kernel), to_u32(n, kernel), team, rms ? norm_rms : 0u};
        gpu.dispatch(gpu.pipeline(variant("norm_backward", x)), {dy, x, gamma, mean, rstd, dx}, push,
                     row_groups(gpu, rows, team));
    }
    if (dgamma.defined() || dbeta.defined()) {
        // The reduce pass always adds into dgamma; without one, a scratch target takes it.
        const Tensor gamma_target = dgamma.defined() ? dgamma : gpu.scratch({n}, x.dtype());
        norm_param_grads(gpu, dy, x, mean, rstd, gamma_target, dbeta, rms, kernel);
    }
}

}  // namespace

void gpu_softmax(GpuBackend& gpu, const Tensor& x, const Tensor& y) {
    const std::size_t n = x.rank() == 0 ? 1 : x.dim(-1);
    const std::size_t rows = n == 0 ? 0 : x.size() / n;
    if (rows == 0) return;
    const std::uint32_t team = team_for(n, gpu.subgroup_size());
    const RowPush push{to_u32(rows, "softmax"), to_u32(n, "softmax"), team};
    gpu.dispatch(gpu.pipeline(variant("softmax", x)), {x, y}, push, row_groups(gpu, rows, team));
}

void gpu_softmax_backward(GpuBackend& gpu, const Tensor& y, const Tensor& dy, const Tensor& dx) {
    const std::size_t n = y.rank() == 0 ? 1 : y.dim(-1);
    const std::size_t rows = n == 0 ? 0 : y.size() / n;
    if (rows == 0) return;
    const std::uint32_t team = team_for(n, gpu.subgroup_size());
    const RowPush push{to_u32(rows, "softmax_backward"), to_u32(n, "softmax_backward"), team};
    gpu.dispatch(gpu.pipeline(variant("softmax_backward", y)), {y, dy, dx}, push,
                 row_groups(gpu, rows, team));
}

void gpu_layer_norm(GpuBackend& gpu, const Tensor& x, const Tensor& gamma, const Tensor& beta,
                    const Tensor& y, const Tensor& mean, const Tensor& rstd, double eps) {
    norm_forward(gpu, x, gamma, beta, y, mean, rstd, eps, false, "layer_norm");
}

void gpu_layer_norm_backward(GpuBackend& gpu, const Tensor& dy, const Tensor& x, const Tensor& gamma,
                             const Tensor& mean, const Tensor& rstd, const Tensor& dx, const Tensor& dgamma,
                             const Tensor& dbeta) {
    norm_backward(gpu, dy, x, gamma, mean, rstd, dx, dgamma, dbeta, false, "layer_norm_backward");
}

void gpu_rms_norm(GpuBackend& gpu, const Tensor& x, const Tensor& gamma, const Tensor& y, const Tensor& rstd,
                  double eps) {
    norm_forward(gpu, x, gamma, Tensor(), y, Tensor(), rstd, eps, true, "rms_norm");
}

void gpu_rms_norm_backward(GpuBackend& gpu, const Tensor& dy, const Tensor& x, const Tensor& gamma,
                           const Tensor& rstd, const Tensor& dx, const Tensor& dgamma) {
    norm_backward(gpu, dy, x, gamma, Tensor(), rstd, dx, dgamma, Tensor(), true, "rms_norm_backward");
}

void gpu_embedding(GpuBackend& gpu, const Tensor& ids, const Tensor& table, const Tensor& out) {
    const std::size_t tokens = ids.size();
    const std::size_t dim = table.dim(1);
    if (tokens == 0 || dim == 0) return;
    const EmbeddingPush push{to_u32(tokens, "embedding"), to_u32(table.dim(0), "embedding"),
                             to_u32(dim, "embedding")};
    to_u32(tokens * dim, "embedding");
    gpu.dispatch(gpu.pipeline(variant("embedding", table)), {ids, table, out}, push,
                 {GpuBackend::groups_for(tokens * dim, 256), 1, 1});
}

void gpu_embedding_backward(GpuBackend& gpu, const Tensor& ids, const Tensor& dout, const Tensor& dtable) {
    const std::size_t tokens = ids.size();
    const std::size_t vocab = dtable.dim(0);
    const std::size_t dim = dtable.dim(1);
    if (tokens == 0 || dim == 0 || vocab == 0) return;
    const char* kernel = "embedding_backward";
    // Tokens sorted stably by id: each token's rank among the tokens of its id in its span (up
    // to 64 spans, one workgroup each), the spans' counts combined in order, offsets (exclusive
    // scan), then order[offsets[id] + the id's count in the spans before + rank] = token.
    const std::size_t chunks = (tokens + 255) / 256;
    std::size_t spans = std::min<std::size_t>(64, chunks);
    const std::size_t span = (chunks + spans - 1) / spans * 256;
    spans = (tokens + span - 1) / span;
    to_u32(spans * vocab, kernel);
    const EmbeddingPush push{to_u32(tokens, kernel), to_u32(vocab, kernel), to_u32(dim, kernel),
                             to_u32(span, kernel)};
    const Tensor span_counts = gpu.scratch({spans, vocab}, DType::i32);
    const Tensor counts = gpu.scratch({vocab}, DType::i32);
    const Tensor offsets = gpu.scratch({vocab + 1}, DType::i32);
    const Tensor rank = gpu.scratch({tokens}, DType::i32);
    const Tensor order = gpu.scratch({tokens}, DType::i32);
    gpu.zero(span_counts);
    gpu.dispatch(gpu.pipeline("embedding_backward_rank"), {ids, span_counts, rank}, push,
                 {to_u32(spans, kernel), 1, 1});
    gpu.dispatch(gpu.pipeline("embedding_backward_combine"), {span_counts, counts}, push,
                 {GpuBackend::groups_for(vocab, 256), 1, 1});
    gpu.dispatch(gpu.pipeline("embedding_backward_scan"), {counts, offsets}, push, {1, 1, 1});
    gpu.dispatch(gpu.pipeline("embedding_backward_scatter"), {ids, offsets, rank, order, span_counts}, push,
                 {GpuBackend::groups_for(tokens, 256), 1, 1});
    gpu.dispatch(gpu.pipeline(variant("embedding_backward_accumulate", dtable)),
                 {offsets, order, dout, dtable}, push, {GpuBackend::groups_for(vocab * dim, 256), 1, 1});
}

void gpu_cross_entropy(GpuBackend& gpu, const Tensor& logits, const Tensor& targets, const Tensor& losses,
                       const Tensor& dlogits, std::int32_t pad_id, double dloss) {
    const std::size_t n = logits.dim(-1);
    const std::size_t rows = n == 0 ? 0 : logits.size() / n;
    if (rows == 0) return;
    const std::uint32_t team = team_for(n, gpu.subgroup_size());
    const CrossEntropyPush push{to_u32(rows, "cross_entropy"),
                                to_u32(n, "cross_entropy"),
                                team,
                                dlogits.defined() ? ce_write_grad : 0u,
                                pad_id,
                                static_cast<float>(dloss)};
    gpu.dispatch(gpu.pipeline(variant("cross_entropy", logits)), {logits, targets, losses, dlogits}, push,
                 row_groups(gpu, rows, team));
}

}  // namespace tapevm::nn::detail
