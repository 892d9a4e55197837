// The reference attention kernels against oracles written here: a direct formula with an
// explicit mask matrix (scores, masked softmax, P V) for attention and its lse, central
// finite differences of attention for attention_backward (causal and not, grouped heads),
// grouped heads against repeated kv heads, and kv_attention against full attention.
#include <cmath>
#include <limits>
#include <vector>

#include <doctest/doctest.h>

#include "reference_support.hpp"
#include "tapevm/nn/kernels.hpp"

using namespace tapevm;
using namespace tapevm::nn;
using namespace tapevm::nn::test;

namespace {

constexpr double inf = std::numeric_limits<double>::infinity();

struct Sizes {
    std::size_t batch, length, query_heads, kv_heads, dim;
    Shape q() const { return {batch, length, query_heads, dim}; }
    Shape kv() const { return {batch, length, kv_heads, dim}; }
    Shape lse() const { return {batch, query_heads, length}; }
};

/// out and lse by the textbook formula: for each (b, h), S = scale Q K^T + M with M[t][j] =
/// -inf where j > t (causal), P = softmax(S) row by row, O = P V.
void direct_attention(const Sizes& s, const std::vector<double>& q, const std::vector<double>& k,
                      const std::vector<double>& v, double scale, bool causal, std::vector<double>& out,
                      std::vector<double>& lse) {
    out.assign(element_count(s.q()), 0.0);
    lse.assign(element_count(s.lse()), 0.0);
    const std::size_t T = s.length, D = s.dim;
    for (std::size_t b = 0; b < s.batch; ++b) {
        for (std::size_t h = 0; h < s.query_heads; ++h) {
            const std::size_t g = h * s.kv_heads / s.query_heads;  // the kv head of query head h
            auto Q = [&](std::size_t t, std::size_t d) {
                return q[((b * T + t) * s.query_heads + h) * D + d];
            };
            auto K = [&](std::size_t t, std::size_t d) { return k[((b * T + t) * s.kv_heads + g) * D + d]; };
            auto V = [&](std::size_t t, std::size_t d) { return v[((b * T + t) * s.kv_heads + g) * D + d]; };
            std::vector<std::vector<double>> S(T, std::vector<double>(T));
            for (std::size_t t = 0; t < T; ++t) {
                for (std::size_t j = 0; j < T; ++j) {
                    double dot = 0;
                    for (std::size_t d = 0; d < D; ++d) dot += Q(t, d) * K(j, d);
                    S[t][j] = scale * dot + (causal && j > t ? -inf : 0.0);
                }
            }
            for (std::size_t t = 0; t < T; ++t) {
                double total = 0;
                for (std::size_t j = 0; j < T; ++j) total += std::exp(S[t][j]);
                lse[(b * s.query_heads + h) * T + t] = std::log(total);
                for (std::size_t d = 0; d < D; ++d) {
                    double sum = 0;
                    for (std::size_t j = 0; j < T; ++j) sum += std::exp(S[t][j]) / total * V(j, d);
                    out[((b * T + t) * s.query_heads + h) * D + d] = sum;
                }
            }
        }
    }
}

struct Result {
    std::vector<double> out, lse;
};

Result run_attention(const Sizes& s, const std::vector<double>& q, const std::vector<double>& k,
                     const std::vector<double>& v, AttentionOptions options) {
    const Tensor out = tensor(s.q(), std::vector<double>(element_count(s.q()), 0.0));
    const Tensor lse = tensor(s.lse(), std::vector<double>(element_count(s.lse()), 0.0));
    attention(tensor(s.q(), q), tensor(s.kv(), k), tensor(s.kv(), v), out, lse, options);
    return {out.to_double(), lse.to_double()};
}

}  // namespace

TEST_CASE("attention: the direct formula, causal or not, grouped heads, scale") {
    for (const Sizes s : {Sizes{2, 4, 2, 2, 3}, Sizes{1, 5, 4, 2, 4}, Sizes{1, 3, 3, 1, 2}}) {
        for (const bool causal : {true, false}) {
            for (const double scale : {0.0, 0.8}) {
                CAPTURE(s.query_heads);
                CAPTURE(s.kv_heads);
                CAPTURE(causal);
                CAPTURE(scale);
                const std::vector<double> q = random_values(element_count(s.q()), 100, -2, 2);
                const std::vector<double> k = random_values(element_count(s.kv()), 101, -2, 2);
                const std::vector<double> v = random_values(element_count(s.kv()), 102);
                const Result result = run_attention(s, q, k, v, {.scale = scale, .causal = causal});
                std::vector<double> out, lse;
                direct_attention(s, q, k, v, scale == 0 ? 1 / std::sqrt(static_cast<double>(s.dim)) : scale,
                                 causal, out, lse);
                check_close(result.out, out, 1e-13, "out");
                check_close(result.lse, lse, 1e-13, "lse");
            }
        }
    }
}

TEST_CASE("attention: grouped heads equal their kv heads repeated") {
    const Sizes grouped{1, 4, 4, 2, 3};
    const Sizes repeated{1, 4, 4, 4, 3};
    const std::vector<double> q = random_values(element_count(grouped.q()), 110);
    const std::vector<double> k = random_values(element_count(grouped.kv()), 111);
    const std::vector<double> v = random_values(element_count(grouped.kv()), 112);
    // Query heads 0, 1 read kv head 0; 2, 3 read kv head 1.
    std::vector<double> k4, v4;
    for (std::size_t t = 0; t < 4; ++t) {
        for (std::size_t h = 0; h < 4; ++h) {
            for (std::size_t d = 0; d < 3; ++d) {
                k4.push_back(k[(t * 2 + h / 2) * 3 + d]);
                v4.push_back(v[(t * 2 + h / 2) * 3 + d]);
            }
        }
    }
    const Result a = run_attention(grouped, q, k, v, {});
    const Result b = run_attention(repeated, q, k4, v4, {});
    check_close(a.out, b.out, 0, "out");
    check_close(a.lse, b.lse, 0, "lse");
}

TEST_CASE("attention_backward: finite differences for q, k and v, added, skipped grads") {
    for (const Sizes s : {Sizes{1, 4, 2, 1, 3}, Sizes{2, 3, 2, 2, 2}}) {
        for (const bool causal : {true, false}) {
            CAPTURE(causal);
            CAPTURE(s.kv_heads);
            const AttentionOptions options{.scale = 0.7, .causal = causal};
            std::vector<double> q = random_values(element_count(s.q()), 120, -1.5, 1.5);
            std::vector<double> k = random_values(element_count(s.kv()), 121, -1.5, 1.5);
            std::vector<double> v = random_values(element_count(s.kv()), 122);
            const std::vector<double> weights = random_values(element_count(s.q()), 123);
            auto loss = [&] { return weighted_sum(run_attention(s, q, k, v, options).out, weights); };
            const Result forward = run_attention(s, q, k, v, options);
            const std::vector<double> dq0 = random_values(q.size(), 124);
            const std::vector<double> dk0 = random_values(k.size(), 125);
            const std::vector<double> dv0 = random_values(v.size(), 126);
            const Tensor dq = tensor(s.q(), dq0), dk = tensor(s.kv(), dk0), dv = tensor(s.kv(), dv0);
            const Tensor qt = tensor(s.q(), q), kt = tensor(s.kv(), k), vt = tensor(s.kv(), v);
            const Tensor out = tensor(s.q(), forward.out), lse = tensor(s.lse(), forward.lse);
            attention_backward(qt, kt, vt, out, lse, tensor(s.q(), weights), dq, dk, dv, options);
            auto added = [](const Tensor& grad, const std::vector<double>& initial) {
                std::vector<double> values = grad.to_double();
                for (std::size_t i = 0; i < values.size(); ++i) values[i] -= initial[i];
                return values;
            };
            const std::vector<double> dq_kernel = added(dq, dq0);
            check_close(dq_kernel, numeric_gradient(q, loss), 1e-8, "dq");
            check_close(added(dk, dk0), numeric_gradient(k, loss), 1e-8, "dk");
            check_close(added(dv, dv0), numeric_gradient(v, loss), 1e-8, "dv");
            const Tensor dq_only = tensor(s.q(), std::vector<double>(q.size(), 0.0));
            attention_backward(qt, kt, vt, out, lse, tensor(s.q(), weights), dq_only, Tensor(), Tensor(),
                               options);
            check_close(dq_only.to_double(), dq_kernel, 1e-15, "dq alone");
        }
    }
}

TEST_CASE("kv_attention: the last Tq queries of full attention, past positions from the cache") {
    const std::size_t past = 3, steps = 2, tmax = 7;
    const Sizes full{2, past + steps, 4, 2, 3};
    const std::vector<double> q = random_values(element_count(full.q()), 130);
    const std::vector<double> k = random_values(element_count(full.kv()), 131);
    const std::vector<double> v = random_values(element_count(full.kv()), 132);
    for (const bool causal : {true, false}) {
        CAPTURE(causal);
        const Result expected = run_attention(full, q, k, v, {.causal = causal});
        // The cache [B][Tmax][Hkv][D]: positions past + steps .. Tmax hold values that must not
        // be read (huge, so that reading them would show).
        const std::size_t row = full.kv_heads * full.dim;
        std::vector<double> k_cache(full.batch * tmax * row, 1e6), v_cache(full.batch * tmax * row, 1e6);
        std::vector<double> q_last;
        for (std::size_t b = 0; b < full.batch; ++b) {
            for (std::size_t t = 0; t < past + steps; ++t) {
                for (std::size_t i = 0; i < row; ++i) {
                    k_cache[(b * tmax + t) * row + i] = k[(b * full.length + t) * row + i];
                    v_cache[(b * tmax + t) * row + i] = v[(b * full.length + t) * row + i];
                }
            }
            const std::size_t q_row = full.query_heads * full.dim;
            for (std::size_t t = past; t < past + steps; ++t) {
                for (std::size_t i = 0; i < q_row; ++i)
                    q_last.push_back(q[(b * full.length + t) * q_row + i]);
            }
        }
        const Shape q_shape = {full.batch, steps, full.query_heads, full.dim};
        const Shape cache_shape = {full.batch, tmax, full.kv_heads, full.dim};
        const Tensor out = tensor(q_shape, std::vector<double>(q_last.size(), 0.0));
        kv_attention(tensor(q_shape, q_last), tensor(cache_shape, k_cache), tensor(cache_shape, v_cache), out,
                     past, {.causal = causal});
        std::vector<double> expected_last;
        const std::size_t q_row = full.query_heads * full.dim;
        for (std::size_t b = 0; b < full.batch; ++b) {
            for (std::size_t t = past; t < past + steps; ++t) {
                for (std::size_t i = 0; i < q_row; ++i) {
                    expected_last.push_back(expected.out[(b * full.length + t) * q_row + i]);
                }
            }
        }
        check_close(out.to_double(), expected_last, 1e-13, "out");
    }
}
