// Cases of attention (flash-style, GQA), its backward and kv_attention. Shapes cover GQA ratios
// 1, 2 and 6, causal and not, T and head_dim off any tile, T = 0 and batch 0. The bounds scale
// with the values' magnitudes and with each row's absolute scores (an error in a score moves
// the probabilities by that much, relatively): depth head_dim + log2(T) + exp's error; f16/bf16
// add two roundings to the storage dtype of intermediates (probabilities on tensor cores).
// The backward's inputs (out, lse) come from an f64 forward on the host, rounded as a device
// would store them, so both devices see the same numbers.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "harness.hpp"

namespace tapevm::nn::conformance {
namespace {

struct AttentionShape {
    std::size_t batch, t, hq, hkv, d;
    bool causal;
    double scale;  // 0: 1/sqrt(d)
};

std::string as(const AttentionShape& s) {
    std::string label =
        text("B", s.batch, " T", s.t, " Hq", s.hq, " Hkv", s.hkv, " D", s.d, s.causal ? " causal" : " full");
    if (s.scale != 0) label += text(" scale ", s.scale);
    return label;
}

// f64 attention on the host with the scores' absolute values: out, lse, probabilities
// p[b][h][i][j] and the abs-score bound per row (max_j |q_i|.|k_j| * scale).
struct HostAttention {
    std::vector<double> out, lse, p, row_abs;
};

HostAttention host_attention(const AttentionShape& s, std::size_t tq, std::size_t tk, std::size_t past,
                             const std::vector<double>& q, const std::vector<double>& k,
                             const std::vector<double>& v,
                             std::size_t k_rows) {  // k_rows: positions per batch in k/v's storage
    const double scale = s.scale != 0 ? s.scale : 1 / std::sqrt(static_cast<double>(s.d));
    const std::size_t group = s.hq / s.hkv;
    HostAttention h;
    h.out.assign(s.batch * tq * s.hq * s.d, 0);
    h.lse.assign(s.batch * s.hq * tq, 0);
    h.p.assign(s.batch * s.hq * tq * tk, 0);
    h.row_abs.assign(s.batch * s.hq * tq, 0);
    for (std::size_t b = 0; b < s.batch; ++b)
        for (std::size_t hh = 0; hh < s.hq; ++hh)
            for (std::size_t i = 0; i < tq; ++i) {
                const std::size_t kv = hh / group;
                const double* qi = &q[((b * tq + i) * s.hq + hh) * s.d];
                const std::size_t visible = s.causal ? std::min(tk, past + i + 1) : tk;
                std::vector<double> scores(visible);
                double m = -std::numeric_limits<double>::infinity(), abs_max = 0;
                for (std::size_t j = 0; j < visible; ++j) {
                    const double* kj = &k[((b * k_rows + j) * s.hkv + kv) * s.d];
                    double dot = 0, abs_dot = 0;
                    for (std::size_t e = 0; e < s.d; ++e) {
                        dot += qi[e] * kj[e];
                        abs_dot += std::fabs(qi[e] * kj[e]);
                    }
                    scores[j] = dot * scale;
                    m = std::max(m, scores[j]);
                    abs_max = std::max(abs_max, abs_dot * std::fabs(scale));
                }
                double sum = 0;
                for (const double sc : scores) sum += std::exp(sc - m);
                const std::size_t row = (b * s.hq + hh) * tq + i;
                h.lse[row] = visible == 0 ? -std::numeric_limits<double>::infinity() : m + std::log(sum);
                h.row_abs[row] = abs_max;
                for (std::size_t j = 0; j < visible; ++j) {
                    const double pj = std::exp(scores[j] - h.lse[row]);
                    h.p[row * tk + j] = pj;
                    const double* vj = &v[((b * k_rows + j) * s.hkv + kv) * s.d];
                    for (std::size_t e = 0; e < s.d; ++e)
                        h.out[((b * tq + i) * s.hq + hh) * s.d + e] += pj * vj[e];
                }
            }
    return h;
}

double depth_of(const AttentionShape& s, std::size_t t) {
    return static_cast<double>(s.d + ceil_log2(t + 1) + 24);
}

// Per element of out [B][Tq][Hq][D]: (1 + row_abs) * max over the visible keys of |v|.
std::vector<double> out_scale(const AttentionShape& s, std::size_t tq, std::size_t tk, const HostAttention& h,
                              const std::vector<double>& v, std::size_t k_rows) {
    std::vector<double> scale(h.out.size(), 0);
    const std::size_t group = s.hq / s.hkv;
    for (std::size_t b = 0; b < s.batch; ++b)
        for (std::size_t i = 0; i < tq; ++i)
            for (std::size_t hh = 0; hh < s.hq; ++hh) {
                const std::size_t row = (b * s.hq + hh) * tq + i;
                for (std::size_t e = 0; e < s.d; ++e) {
                    double big = 0;
                    for (std::size_t j = 0; j < tk; ++j)
                        if (h.p[row * tk + j] > 0)
                            big = std::max(big,
                                           std::fabs(v[((b * k_rows + j) * s.hkv + hh / group) * s.d + e]));
                    scale[((b * tq + i) * s.hq + hh) * s.d + e] = (1 + h.row_abs[row]) * big;
                }
            }
    return scale;
}

std::vector<AttentionShape> shapes(bool sweep) {
    std::vector<AttentionShape> list = {
        {2, 7, 2, 2, 8, true, 0},
        {1, 16, 6, 3, 16, true, 0},
        {2, 9, 6, 1, 8, false, 0.3},
        {1, 65, 2, 1, 64, true, 0},
        {1, 33, 4, 2, 63, false, 0},
        {1, 0, 2, 1, 8, true, 0},
        {0, 5, 2, 1, 8, true, 0},
        {1, 1, 1, 1, 1, true, 0},
        // head_dim 32 and 48, T past one 32-key tile: the tensor-core kernels' shapes (f16, H100)
        {2, 40, 4, 2, 32, false, 0},
        {1, 37, 6, 1, 48, true, 0}};
    if (sweep) {
        for (const std::size_t t : {63, 64, 127, 129, 384, 385})
            for (const std::size_t d : {16, 64}) list.push_back({1, t, 6, 2, d, true, 0});
        list.push_back({2, 256, 6, 6, 64, true, 0});
        list.push_back({1, 129, 6, 1, 127, false, 0});
    }
    return list;
}

void add_forward(std::vector<Case>& cases, bool sweep) {
    for (const AttentionShape s : shapes(sweep)) {
        cases.push_back(
            {KernelId::attention, as(s), [s](Context& c) {
                 const auto q = c.random(s.batch * s.t * s.hq * s.d, -1.5, 1.5);
                 const auto k = c.random(s.batch * s.t * s.hkv * s.d, -1.5, 1.5);
                 const auto v = c.random(s.batch * s.t * s.hkv * s.d);
                 const Tensor out = c.empty({s.batch, s.t, s.hq, s.d});
                 const Tensor lse = c.empty_stats({s.batch, s.hq, s.t});
                 attention(c.upload({s.batch, s.t, s.hq, s.d}, q), c.upload({s.batch, s.t, s.hkv, s.d}, k),
                           c.upload({s.batch, s.t, s.hkv, s.d}, v), out, lse, {s.scale, s.causal});
                 std::vector<Output> outs = {c.output("out", out), c.output("lse", lse)};
                 if (c.is_reference()) {
                     const HostAttention h = host_attention(s, s.t, s.t, 0, q, k, v, s.t);
                     outs[0].scale = out_scale(s, s.t, s.t, h, v, s.t);
                     for (const double a : h.row_abs) outs[1].scale.push_back(1 + a);
                 }
                 for (Output& o : outs) {
                     o.depth = depth_of(s, s.t);
                     o.store_roundings = 2;
                 }
                 return outs;
             }});
    }
    // kv_attention: decoding (Tq 1) and prefill, with positions past the valid ones holding
    // large values that a correct kernel never reads.
    struct KvShape {
        AttentionShape s;
        std::size_t tq, past, tmax;
    };
    std::vector<KvShape> kv = {
        {{2, 0, 6, 2, 8, true, 0}, 1, 5, 9},      {{1, 0, 2, 1, 64, true, 0}, 1, 0, 4},
        {{1, 0, 6, 6, 16, true, 0}, 7, 3, 16},    {{2, 0, 4, 1, 8, false, 0}, 5, 2, 7},
        {{1, 0, 6, 1, 63, true, 0.2}, 16, 0, 16}, {{0, 0, 2, 1, 8, true, 0}, 1, 0, 4},
        {{1, 0, 4, 2, 32, true, 0}, 40, 8, 64},   {{1, 0, 2, 2, 16, false, 0}, 33, 5, 48}};
    if (sweep) kv.push_back({{2, 0, 6, 2, 64, true, 0}, 1, 384, 512});
    for (const KvShape& entry : kv) {
        const AttentionShape s = entry.s;
        const std::size_t tq = entry.tq, past = entry.past, tmax = entry.tmax;
        cases.push_back(
            {KernelId::kv_attention, text(as(s), " Tq", tq, " past ", past, " Tmax ", tmax),
             [s, tq, past, tmax](Context& c) {
                 const auto q = c.random(s.batch * tq * s.hq * s.d, -1.5, 1.5);
                 auto k = c.random(s.batch * tmax * s.hkv * s.d, -1.5, 1.5);
                 auto v = c.random(s.batch * tmax * s.hkv * s.d);
                 for (std::size_t b = 0; b < s.batch; ++b)
                     for (std::size_t pos = past + tq; pos < tmax; ++pos)
                         for (std::size_t e = 0; e < s.hkv * s.d; ++e) {
                             k[(b * tmax + pos) * s.hkv * s.d + e] = 100;
                             v[(b * tmax + pos) * s.hkv * s.d + e] = 1000;
                         }
                 const Tensor out = c.empty({s.batch, tq, s.hq, s.d});
                 kv_attention(c.upload({s.batch, tq, s.hq, s.d}, q), c.upload({s.batch, tmax, s.hkv, s.d}, k),
                              c.upload({s.batch, tmax, s.hkv, s.d}, v), out, past, {s.scale, s.causal});
                 Output result = c.output("out", out);
                 if (c.is_reference()) {
                     const HostAttention h = host_attention(s, tq, past + tq, past, q, k, v, tmax);
                     result.scale = out_scale(s, tq, past + tq, h, v, tmax);
                 }
                 result.depth = depth_of(s, past + tq);
                 result.store_roundings = 2;
                 return std::vector<Output>{result};
             }});
    }
}

void add_backward(std::vector<Case>& cases, bool sweep) {
    for (const AttentionShape s : shapes(sweep)) {
        if (s.t > 256) continue;
        for (const int variant : {0, 1}) {  // 0: dq, dk, dv; 1: dq skipped
            cases.push_back(
                {KernelId::attention_backward, as(s) + (variant == 1 ? " no dq" : ""),
                 [s, variant](Context& c) {
                     const std::size_t nq = s.batch * s.t * s.hq * s.d, nk = s.batch * s.t * s.hkv * s.d;
                     const auto q = c.random(nq, -1.5, 1.5);
                     const auto k = c.random(nk, -1.5, 1.5);
                     const auto v = c.random(nk);
                     const auto dout = c.random(nq);
                     const auto dq0 = c.random(nq), dk0 = c.random(nk), dv0 = c.random(nk);
                     HostAttention h = host_attention(s, s.t, s.t, 0, q, k, v, s.t);
                     std::vector<double> out_rounded(h.out.size());
                     for (std::size_t i = 0; i < h.out.size(); ++i)
                         out_rounded[i] = round_to(c.tested(), h.out[i]);
                     const Shape qs = {s.batch, s.t, s.hq, s.d}, ks = {s.batch, s.t, s.hkv, s.d};
                     const Tensor dq = variant == 1 ? Tensor() : c.upload(qs, dq0);
                     const Tensor dk = c.upload(ks, dk0), dv = c.upload(ks, dv0);
                     attention_backward(c.upload(qs, q), c.upload(ks, k), c.upload(ks, v),
                                        c.upload(qs, out_rounded),
                                        c.upload_stats({s.batch, s.hq, s.t}, h.lse), c.upload(qs, dout), dq,
                                        dk, dv, {s.scale, s.causal});
                     std::vector<Output> outs;
                     if (dq) outs.push_back(c.output("dq", dq));
                     outs.push_back(c.output("dk", dk));
                     outs.push_back(c.output("dv", dv));
                     if (c.is_reference()) {
                         // |ds_ij| <= p_ij (|dout_i|.|v_j| + |dout_i|.|out_i|) (1 + row_abs_i).
                         const double scale =
                             s.scale != 0 ? s.scale : 1 / std::sqrt(static_cast<double>(s.d));
                         const std::size_t group = s.hq / s.hkv;
                         std::vector<double> sq(dq0.size()), sk(dk0.size()), sv(dv0.size());
                         for (std::size_t i = 0; i < sq.size(); ++i) sq[i] = std::fabs(dq0[i]);
                         for (std::size_t i = 0; i < sk.size(); ++i) sk[i] = std::fabs(dk0[i]);
                         for (std::size_t i = 0; i < sv.size(); ++i) sv[i] = std::fabs(dv0[i]);
                         for (std::size_t b = 0; b < s.batch; ++b)
                             for (std::size_t hh = 0; hh < s.hq; ++hh)
                                 for (std::size_t i = 0; i < s.t; ++i) {
                                     const std::size_t row = (b * s.hq + hh) * s.t + i;
                                     const std::size_t qi = ((b * s.t + i) * s.hq + hh) * s.d;
                                     double d_out = 0;
                                     for (std::size_t e = 0; e < s.d; ++e)
                                         d_out += std::fabs(dout[qi + e] * out_rounded[qi + e]);
                                     for (std::size_t j = 0; j < s.t; ++j) {
                                         const double p = h.p[row * s.t + j];
                                         if (p == 0) continue;
                                         const std::size_t kj = ((b * s.t + j) * s.hkv + hh / group) * s.d;
                                         double dp = 0;
                                         for (std::size_t e = 0; e < s.d; ++e)
                                             dp += std::fabs(dout[qi + e] * v[kj + e]);
                                         const double ds = p * (dp + d_out) * (1 + h.row_abs[row]) * scale;
                                         for (std::size_t e = 0; e < s.d; ++e) {
                                             sq[qi + e] += ds * std::fabs(k[kj + e]);
                                             sk[kj + e] += ds * std::fabs(q[qi + e]);
                                             sv[kj + e] += p * (1 + h.row_abs[row]) * std::fabs(dout[qi + e]);
                                         }
                                     }
                                 }
                         std::size_t at = 0;
                         if (variant == 0) outs[at++].scale = sq;
                         outs[at++].scale = sk;
                         outs[at].scale = sv;
                     }
                     for (Output& o : outs) {
                         o.depth =
                             depth_of(s, s.t) + static_cast<double>(ceil_log2(s.t + 1) + ceil_log2(s.hq + 1));
                         o.store_roundings = 2;
                     }
                     return outs;
                 }});
        }
    }
}

}  // namespace

void add_attention_cases(std::vector<Case>& cases, bool sweep) {
    add_forward(cases, sweep);
    add_backward(cases, sweep);
}

}  // namespace tapevm::nn::conformance
