// attention, attention_backward and kv_attention on the cpu device.
//
// Forward (flash-style): per query row, keys in blocks of `key_block`; an online softmax keeps
// the running maximum m, the running sum l and the unnormalised output, rescaled by
// exp(m_old - m_new) when a block raises the maximum; lse = m + log(l) is saved for backward.
// Work is spread over (batch, query head, tile of query rows).
//
// Backward (FlashAttention-2's algorithm, scores recomputed from q, k and lse): for query row
// t and visible key s, p = exp(scale q.k - lse), dp = dout.v, ds = p (dp - dout.out); then
// dq_t += scale ds k_s, dk_s += scale ds q_t, dv_s += p dout_t. Work is spread over (batch, kv
// head): one task owns the dk and dv rows of its kv head and the dq rows of the query heads
// that read it, and sums into them in a fixed order (deterministic, no atomics).
#include <cmath>
#include <limits>

#include "cpu/parallel.hpp"

namespace tapevm::nn::detail {

namespace {

constexpr std::size_t key_block = 64;
constexpr std::size_t query_tile = 16;
constexpr float minus_infinity = -std::numeric_limits<float>::infinity();

// Extents of one attention call. Queries [batch][queries][q_heads][head_dim]; keys and values
// [batch][key_rows][kv_heads][head_dim] of which the first `keys` rows are valid; query t sits
// at position past + t.
struct Layout {
    std::size_t batch, queries, q_heads, key_rows, keys, kv_heads, head_dim, past;
    float scale;
    bool causal;

    std::size_t group() const { return q_heads / kv_heads; }
    // Keys query t sees.
    std::size_t visible(std::size_t t) const { return causal ? std::min(keys, past + t + 1) : keys; }
    std::size_t q_index(std::size_t b, std::size_t t, std::size_t h) const {
        return ((b * queries + t) * q_heads + h) * head_dim;
    }
    std::size_t k_index(std::size_t b, std::size_t s, std::size_t g) const {
        return ((b * key_rows + s) * kv_heads + g) * head_dim;
    }
};

float resolve_scale(double scale, std::size_t head_dim) {
    return scale != 0 ? static_cast<float>(scale)
                      : 1.f / std::sqrt(static_cast<float>(std::max<std::size_t>(head_dim, 1)));
}

void attention_forward(const CpuBackend& backend, const Layout& shape, const float* q, const float* k,
                       const float* v, float* out, float* lse) {
    const std::size_t d = shape.head_dim;
    const std::size_t tiles = (shape.queries + query_tile - 1) / query_tile;
    parallel_for(backend, shape.batch * shape.q_heads * tiles, [&](std::size_t task) {
        const std::size_t tile = task % tiles;
        const std::size_t h = task / tiles % shape.q_heads;
        const std::size_t b = task / tiles / shape.q_heads;
        const std::size_t g = h / shape.group();
        float scores[key_block];
        std::vector<float> acc(d);
        for (std::size_t t = tile * query_tile; t < std::min(shape.queries, (tile + 1) * query_tile); ++t) {
            const float* qt = q + shape.q_index(b, t, h);
            const std::size_t visible = shape.visible(t);
            float m = minus_infinity, l = 0;
            std::fill(acc.begin(), acc.end(), 0.f);
            for (std::size_t s0 = 0; s0 < visible; s0 += key_block) {
                const std::size_t count = std::min(key_block, visible - s0);
                for (std::size_t j = 0; j < count; ++j) {
                    scores[j] = shape.scale * row_dot(qt, k + shape.k_index(b, s0 + j, g), d);
                }
                const float m_new = std::max(m, row_max(scores, count));
                if (m_new == minus_infinity) continue;
                const float correction = m == minus_infinity ? 0.f : std::exp(m - m_new);
                l *= correction;
                row_scale(acc.data(), correction, d);
                for (std::size_t j = 0; j < count; ++j) {
                    const float p = std::exp(scores[j] - m_new);
                    l += p;
                    row_axpy(p, v + shape.k_index(b, s0 + j, g), acc.data(), d);
                }
                m = m_new;
            }
            float* ot = out + shape.q_index(b, t, h);
            if (l > 0) {
                const float inverse = 1.f / l;
                for (std::size_t i = 0; i < d; ++i) ot[i] = acc[i] * inverse;
            } else {
                std::fill(ot, ot + d, 0.f);
            }
            if (lse != nullptr)
                lse[(b * shape.q_heads + h) * shape.queries + t] = l > 0 ? m + std::log(l) : minus_infinity;
        }
    });
}

}  // namespace

void CpuBackend::attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                           const Tensor& lse, double scale, bool causal) {
    count_kernel();
    const Layout shape{q.dim(0), q.dim(1), q.dim(2),
                       k.dim(1), k.dim(1), k.dim(2),
                       q.dim(3), 0,        resolve_scale(scale, q.dim(3)),
                       causal};
    if (q.size() == 0) return;
    const F32View qs(*this, q), ks(*this, k), vs(*this, v);
    F32View os(*this, out, false), ls(*this, lse, false);
    attention_forward(*this, shape, qs.data(), ks.data(), vs.data(), os.data(), ls ? ls.data() : nullptr);
    os.store();
    ls.store();
}

void CpuBackend::kv_attention(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache,
                              const Tensor& out, std::size_t past, double scale, bool causal) {
    count_kernel();
    const Layout shape{q.dim(0),
                       q.dim(1),
                       q.dim(2),
                       k_cache.dim(1),
                       past + q.dim(1),
                       k_cache.dim(2),
                       q.dim(3),
                       past,
                       resolve_scale(scale, q.dim(3)),
                       causal};
    if (q.size() == 0) return;
    const F32View qs(*this, q), ks(*this, k_cache), vs(*this, v_cache);
    F32View os(*this, out, false);
    attention_forward(*this, shape, qs.data(), ks.data(), vs.data(), os.data(), nullptr);
    os.store();
}

void CpuBackend::attention_backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                                    const Tensor& lse, const Tensor& dout, const Tensor& dq, const Tensor& dk,
                                    const Tensor& dv, double scale, bool causal) {
    count_kernel();
    const Layout shape{q.dim(0), q.dim(1), q.dim(2),
                       k.dim(1), k.dim(1), k.dim(2),
                       q.dim(3), 0,        resolve_scale(scale, q.dim(3)),
                       causal};
    if (q.size() == 0 || (!dq && !dk && !dv)) return;
    const F32View qs(*this, q), ks(*this, k), vs(*this, v), os(*this, out), ls(*this, lse), dos(*this, dout);
    F32View dqs(*this, dq), dks(*this, dk), dvs(*this, dv);
    const std::size_t d = shape.head_dim;
    const std::size_t keys = shape.keys;
    parallel_for(*this, shape.batch * shape.kv_heads, [&](std::size_t task) {
        const std::size_t g = task % shape.kv_heads;
        const std::size_t b = task / shape.kv_heads;
        std::vector<float> dk_acc(dks ? keys * d : 0, 0.f), dv_acc(dvs ? keys * d : 0, 0.f), dq_acc(d);
        for (std::size_t h = g * shape.group(); h < (g + 1) * shape.group(); ++h) {
            for (std::size_t t = 0; t < shape.queries; ++t) {
                const float row_lse = ls.data()[(b * shape.q_heads + h) * shape.queries + t];
                if (row_lse == minus_infinity) continue;
                const float* qt = qs.data() + shape.q_index(b, t, h);
                const float* dot = dos.data() + shape.q_index(b, t, h);
                const float delta = row_dot(dot, os.data() + shape.q_index(b, t, h), d);
                std::fill(dq_acc.begin(), dq_acc.end(), 0.f);
                for (std::size_t s = 0; s < shape.visible(t); ++s) {
                    const float* ks_row = ks.data() + shape.k_index(b, s, g);
                    const float* vs_row = vs.data() + shape.k_index(b, s, g);
                    const float p = std::exp(shape.scale * row_dot(qt, ks_row, d) - row_lse);
                    const float ds = p * (row_dot(dot, vs_row, d) - delta);
                    if (dqs) row_axpy(shape.scale * ds, ks_row, dq_acc.data(), d);
                    if (dks) row_axpy(shape.scale * ds, qt, dk_acc.data() + s * d, d);
                    if (dvs) row_axpy(p, dot, dv_acc.data() + s * d, d);
                }
                if (dqs) row_axpy(1.f, dq_acc.data(), dqs.data() + shape.q_index(b, t, h), d);
            }
        }
        for (std::size_t s = 0; s < keys; ++s) {
            if (dks) row_axpy(1.f, dk_acc.data() + s * d, dks.data() + shape.k_index(b, s, g), d);
            if (dvs) row_axpy(1.f, dv_acc.data() + s * d, dvs.data() + shape.k_index(b, s, g), d);
        }
    });
    dqs.store();
    dks.store();
    dvs.store();
}

}  // namespace tapevm::nn::detail
