// The reference attention: the whole score row of each query, softmax, weighted sum of
// values (no tiling, no online softmax), and its exact gradient. Layouts: q [B][Tq][Hq][D],
// k and v [B][Tk][Hkv][D], lse [B][Hq][Tq]; query head h reads kv head h / (Hq / Hkv).
#include <cmath>
#include <limits>
#include <vector>

#include "reference/reference_backend.hpp"

namespace tapevm::nn::detail {

namespace {

struct Layout {
    std::size_t batch, query_length, query_heads, head_dim, key_length, kv_heads;

    std::size_t group() const { return query_heads / kv_heads; }
    std::size_t q_index(std::size_t b, std::size_t t, std::size_t h) const {
        return ((b * query_length + t) * query_heads + h) * head_dim;
    }
    std::size_t kv_index(std::size_t b, std::size_t t, std::size_t h) const {
        return ((b * key_length + t) * kv_heads + h) * head_dim;
    }
};

Layout layout_of(const Tensor& q, const Tensor& k) {
    return {q.shape()[0], q.shape()[1], q.shape()[2], q.shape()[3], k.shape()[1], k.shape()[2]};
}

double dot(const double* a, const double* b, std::size_t n) {
    double sum = 0;
    for (std::size_t i = 0; i < n; ++i) sum += a[i] * b[i];
    return sum;
}

/// One query row: scaled scores against keys 0 .. visible-1, softmax, out = P v; returns the
/// log-sum-exp (-inf, and out = 0, when no key is visible).
double attend_row(const double* query, const double* keys, const double* values, std::size_t key_stride,
                  std::size_t visible, std::size_t head_dim, double scale, double* out) {
    for (std::size_t d = 0; d < head_dim; ++d) out[d] = 0;
    if (visible == 0) return -std::numeric_limits<double>::infinity();
    std::vector<double> scores(visible);
    double max = -std::numeric_limits<double>::infinity();
    for (std::size_t j = 0; j < visible; ++j) {
        scores[j] = scale * dot(query, keys + j * key_stride, head_dim);
        max = std::max(max, scores[j]);
    }
    double sum = 0;
    for (std::size_t j = 0; j < visible; ++j) sum += std::exp(scores[j] - max);
    const double log_sum_exp = max + std::log(sum);
    for (std::size_t j = 0; j < visible; ++j) {
        const double probability = std::exp(scores[j] - log_sum_exp);
        for (std::size_t d = 0; d < head_dim; ++d) out[d] += probability * values[j * key_stride + d];
    }
    return log_sum_exp;
}

}  // namespace

void ReferenceBackend::attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                                 const Tensor& lse, double scale, bool causal) {
    count_kernel();
    const Layout s = layout_of(q, k);
    const std::size_t key_stride = s.kv_heads * s.head_dim;
    for (std::size_t b = 0; b < s.batch; ++b) {
        for (std::size_t h = 0; h < s.query_heads; ++h) {
            const std::size_t kv_head = h / s.group();
            for (std::size_t t = 0; t < s.query_length; ++t) {
                const std::size_t visible = causal ? t + 1 : s.key_length;
                f64_data(lse)[(b * s.query_heads + h) * s.query_length + t] =
                    attend_row(f64_data(q) + s.q_index(b, t, h), f64_data(k) + s.kv_index(b, 0, kv_head),
                               f64_data(v) + s.kv_index(b, 0, kv_head), key_stride, visible, s.head_dim,
                               scale, f64_data(out) + s.q_index(b, t, h));
            }
        }
    }
}

void ReferenceBackend::attention_backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor&,
                                          const Tensor& lse, const Tensor& dout, const Tensor& dq,
                                          const Tensor& dk, const Tensor& dv, double scale, bool causal) {
    count_kernel();
    // With scores S_j = scale q.k_j, P_j = exp(S_j - lse) and out = sum_j P_j v_j:
    //   dv_j += P_j dout,  dP_j = dout.v_j,  dS_j = P_j (dP_j - sum_i P_i dP_i),
    //   dq += scale sum_j dS_j k_j,  dk_j += scale dS_j q.
    const Layout s = layout_of(q, k);
    const std::size_t dim = s.head_dim;
    std::vector<double> probability(s.key_length);
    std::vector<double> dprobability(s.key_length);
    for (std::size_t b = 0; b < s.batch; ++b) {
        for (std::size_t h = 0; h < s.query_heads; ++h) {
            const std::size_t kv_head = h / s.group();
            for (std::size_t t = 0; t < s.query_length; ++t) {
                const double log_sum_exp = f64_data(lse)[(b * s.query_heads + h) * s.query_length + t];
                if (log_sum_exp == -std::numeric_limits<double>::infinity()) continue;  // no visible key
                const std::size_t visible = causal ? t + 1 : s.key_length;
                const double* query = f64_data(q) + s.q_index(b, t, h);
                const double* dquery_out = f64_data(dout) + s.q_index(b, t, h);
                double weighted = 0;  // sum_j P_j dP_j
                for (std::size_t j = 0; j < visible; ++j) {
                    const double* key = f64_data(k) + s.kv_index(b, j, kv_head);
                    const double* value = f64_data(v) + s.kv_index(b, j, kv_head);
                    probability[j] = std::exp(scale * dot(query, key, dim) - log_sum_exp);
                    dprobability[j] = dot(dquery_out, value, dim);
                    weighted += probability[j] * dprobability[j];
                }
                for (std::size_t j = 0; j < visible; ++j) {
                    const double dscore = probability[j] * (dprobability[j] - weighted);
                    const double* key = f64_data(k) + s.kv_index(b, j, kv_head);
                    for (std::size_t d = 0; d < dim; ++d) {
                        if (dq.defined()) f64_data(dq)[s.q_index(b, t, h) + d] += scale * dscore * key[d];
                        if (dk.defined())
                            f64_data(dk)[s.kv_index(b, j, kv_head) + d] += scale * dscore * query[d];
                        if (dv.defined())
                            f64_data(dv)[s.kv_index(b, j, kv_head) + d] += probability[j] * dquery_out[d];
                    }
                }
            }
        }
    }
}

void ReferenceBackend::kv_attention(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache,
                                    const Tensor& out, std::size_t past, double scale, bool causal) {
    count_kernel();
    const Layout s = layout_of(q, k_cache);
    const std::size_t key_stride = s.kv_heads * s.head_dim;
    for (std::size_t b = 0; b < s.batch; ++b) {
        for (std::size_t h = 0; h < s.query_heads; ++h) {
            const std::size_t kv_head = h / s.group();
            for (std::size_t t = 0; t < s.query_length; ++t) {
                // Query t sits at position past + t; the cache holds past + Tq valid positions.
                const std::size_t visible = causal ? past + t + 1 : past + s.query_length;
                attend_row(f64_data(q) + s.q_index(b, t, h), f64_data(k_cache) + s.kv_index(b, 0, kv_head),
                           f64_data(v_cache) + s.kv_index(b, 0, kv_head), key_stride, visible, s.head_dim,
                           scale, f64_data(out) + s.q_index(b, t, h));
            }
        }
    }
}

}  // namespace tapevm::nn::detail
