// The gpu device's attention kernels (src/nn/gpu/attention.cpp) against the f64 reference
// device: attention forward (out, lse), attention_backward (dq, dk, dv added into nonzero
// gradients), kv_attention (decoding q_len 1 and prefill over a cache with past positions),
// causal and not, GQA ratios 1, 2 and 6, head_dim 8, 16 and 64, sequence lengths 1, 7 and 33
// (several key and query tiles), f32, f16 and bf16 storage; scores of +-1e4 (no NaN);
// determinism (two runs bitwise equal). Shapes are tiny: lavapipe runs them on the CPU.
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "tapevm/error.hpp"
#include "tapevm/nn/device.hpp"
#include "tapevm/nn/kernels.hpp"
#include "tapevm/nn/tensor.hpp"

#include "nn_gpu_device.hpp"
using namespace tapevm::nn;

namespace {

Device gpu() { return tapevm::nn::test::gpu_device(); }
Device& reference() {
    static Device device = Device::reference();
    return device;
}

double unit(DType dtype) {
    switch (dtype) {
        case DType::f16: return std::ldexp(1.0, -11);
        case DType::bf16: return std::ldexp(1.0, -8);
        default: return std::ldexp(1.0, -24);
    }
}

std::vector<double> random_values(std::size_t n, double lo, double hi, DType dtype, std::uint64_t seed) {
    std::uint64_t state = seed * 0x9e3779b97f4a7c15ull + 7;
    std::vector<double> values(n);
    for (double& value : values) {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        const double unit_value = static_cast<double>(state >> 11) * std::ldexp(1.0, -53);
        value = round_to(dtype, lo + (hi - lo) * unit_value);
    }
    return values;
}

/// A tensor on the gpu and its twin on the reference device.
struct Pair {
    Tensor gpu;
    Tensor ref;
};
Pair upload(const Shape& shape, const std::vector<double>& values, DType dtype) {
    std::vector<double> rounded(values);
    for (double& value : rounded) value = round_to(dtype, value);
    return {gpu().upload(shape, std::span<const double>(values), dtype),
            reference().upload(shape, std::span<const double>(rounded), DType::f64)};
}
Pair random_pair(const Shape& shape, DType dtype, std::uint64_t seed, double lo = -1, double hi = 1) {
    return upload(shape, random_values(element_count(shape), lo, hi, dtype, seed), dtype);
}
Pair empty_pair(const Shape& shape, DType dtype) {
    return {gpu().empty(shape, dtype), reference().empty(shape, DType::f64)};
}

/// |gpu - reference| <= 2 u(stored) |reference| + f32_slack 2^-24 scale (scale: the largest
/// |reference| of the tensor, at least 1); infinities must match.
void check_close(const Pair& pair, DType stored, const std::string& what, double f32_slack) {
    const std::vector<double> got = pair.gpu.to_double();
    const std::vector<double> want = pair.ref.to_double();
    REQUIRE(got.size() == want.size());
    double scale = 1;
    for (double w : want) {
        if (std::isfinite(w)) scale = std::max(scale, std::abs(w));
    }
    for (std::size_t i = 0; i < got.size(); ++i) {
        if (std::isinf(want[i])) {
            INFO(what << " element " << i);
            CHECK(got[i] == want[i]);
            continue;
        }
        const double bound = 2 * unit(stored) * std::abs(want[i]) + f32_slack * unit(DType::f32) * scale;
        if (!(std::abs(got[i] - want[i]) <= bound)) {
            FAIL_CHECK(what << " element " << i << ": gpu " << got[i] << ", reference " << want[i]
                            << " (bound " << bound << ")");
            return;
        }
    }
}

struct Shape4 {
    std::size_t batch, seq, heads_q, heads_kv, dim;
};

std::string describe(const Shape4& s, DType dtype, bool causal) {
    return std::string(dtype_name(dtype)) + " B=" + std::to_string(s.batch) + " T=" + std::to_string(s.seq) +
           " Hq=" + std::to_string(s.heads_q) + " Hkv=" + std::to_string(s.heads_kv) +
           " D=" + std::to_string(s.dim) + (causal ? " causal" : "");
}

/// Forward and backward of one shape on both devices, compared; then the gpu again for bits.
void check_attention(const Shape4& s, DType dtype, bool causal, double scale = 0, double spread = 1) {
    const std::string what = describe(s, dtype, causal);
    const Shape q_shape{s.batch, s.seq, s.heads_q, s.dim};
    const Shape kv_shape{s.batch, s.seq, s.heads_kv, s.dim};
    const Shape lse_shape{s.batch, s.heads_q, s.seq};
    const Pair q = random_pair(q_shape, dtype, 1, -spread, spread);
    const Pair k = random_pair(kv_shape, dtype, 2, -spread, spread);
    const Pair v = random_pair(kv_shape, dtype, 3);
    const AttentionOptions options{scale, causal};

    const Pair out = empty_pair(q_shape, dtype);
    const Pair lse{gpu().empty(lse_shape, DType::f32), reference().empty(lse_shape, DType::f64)};
    attention(q.gpu, k.gpu, v.gpu, out.gpu, lse.gpu, options);
    attention(q.ref, k.ref, v.ref, out.ref, lse.ref, options);
    const double depth = 64.0 * static_cast<double>(s.dim + s.seq);
    check_close(out, dtype, what + " out", depth);
    check_close(lse, DType::f32, what + " lse", depth * spread * spread);

    // Backward from the reference's out and lse (rounded to the gpu's dtypes) on both devices,
    // into nonzero gradients.
    const Pair out_in = upload(q_shape, out.ref.to_double(), dtype);
    const Pair lse_stats = upload(lse_shape, lse.ref.to_double(), DType::f32);
    const Pair dout = random_pair(q_shape, dtype, 4);
    const std::vector<double> dq0 = random_values(element_count(q_shape), -1, 1, dtype, 5);
    const std::vector<double> dk0 = random_values(element_count(kv_shape), -1, 1, dtype, 6);
    const std::vector<double> dv0 = random_values(element_count(kv_shape), -1, 1, dtype, 7);
    const Pair dq = upload(q_shape, dq0, dtype), dk = upload(kv_shape, dk0, dtype),
               dv = upload(kv_shape, dv0, dtype);
    attention_backward(q.gpu, k.gpu, v.gpu, out_in.gpu, lse_stats.gpu, dout.gpu, dq.gpu, dk.gpu, dv.gpu,
                       options);
    attention_backward(q.ref, k.ref, v.ref, out_in.ref, lse_stats.ref, dout.ref, dq.ref, dk.ref, dv.ref,
                       options);
    const double grad_depth = depth * 4 * spread * spread;
    check_close(dq, dtype, what + " dq", grad_depth);
    check_close(dk, dtype, what + " dk", grad_depth);
    check_close(dv, dtype, what + " dv", grad_depth);

    // Determinism: the same call again gives the same bits; gradients skipped stay untouched.
    const Tensor out2 = gpu().empty(q_shape, dtype), lse2 = gpu().empty(lse_shape, DType::f32);
    attention(q.gpu, k.gpu, v.gpu, out2, lse2, options);
    CHECK(out2.to_bytes() == out.gpu.to_bytes());
    CHECK(lse2.to_bytes() == lse.gpu.to_bytes());
    const Pair dk2 = upload(kv_shape, dk0, dtype), dv2 = upload(kv_shape, dv0, dtype);
    attention_backward(q.gpu, k.gpu, v.gpu, out_in.gpu, lse_stats.gpu, dout.gpu, Tensor(), dk2.gpu, dv2.gpu,
                       options);
    CHECK(dk2.gpu.to_bytes() == dk.gpu.to_bytes());
    CHECK(dv2.gpu.to_bytes() == dv.gpu.to_bytes());
    const Pair dq2 = upload(q_shape, dq0, dtype);
    attention_backward(q.gpu, k.gpu, v.gpu, out_in.gpu, lse_stats.gpu, dout.gpu, dq2.gpu, Tensor(), Tensor(),
                       options);
    CHECK(dq2.gpu.to_bytes() == dq.gpu.to_bytes());
}

}  // namespace

TEST_CASE("attention forward and backward match the reference: GQA 1, 2, 6; D 8, 16, 64; T 1, 7, 33") {
    const Shape4 shapes[] = {
        {2, 7, 2, 2, 8},    // ratio 1
        {1, 33, 4, 2, 16},  // ratio 2, three query tiles, two key tiles
        {1, 7, 6, 1, 16},   // ratio 6: one block holds several heads
        {1, 1, 2, 1, 8},    // one position
        {1, 33, 2, 2, 64},  // D 64
    };
    for (const Shape4& s : shapes) {
        for (bool causal : {true, false}) check_attention(s, DType::f32, causal);
    }
}

TEST_CASE("attention on f16 and bf16 storage matches the reference") {
    for (DType dtype : {DType::f16, DType::bf16}) {
        check_attention({1, 17, 4, 2, 16}, dtype, true);
        check_attention({1, 9, 6, 1, 8}, dtype, false);
    }
}

TEST_CASE("attention with scores of +-1e4 stays finite") {
    // q.k up to 16 * 25^2 = 1e4 at scale 1: the online softmax must subtract its maximum.
    check_attention({1, 20, 2, 1, 16}, DType::f32, true, 1.0, 25.0);
    const Tensor q = gpu().upload(
        {1, 5, 1, 8}, std::span<const double>(random_values(40, -40, 40, DType::f32, 9)), DType::f32);
    const Tensor out = gpu().empty({1, 5, 1, 8}, DType::f32), lse = gpu().empty({1, 1, 5}, DType::f32);
    attention(q, q, q, out, lse, {1.0, false});
    for (double value : out.to_double()) CHECK(std::isfinite(value));
    for (double value : lse.to_double()) CHECK(std::isfinite(value));
}

TEST_CASE("kv_attention matches the reference: decoding and prefill after past positions") {
    struct KvCase {
        std::size_t batch, q_len, max_len, past, heads_q, heads_kv, dim;
        bool causal;
    };
    const KvCase cases[] = {
        {2, 1, 40, 33, 6, 1, 16, true},  // decoding: 34 valid positions, two key tiles
        {1, 1, 8, 0, 2, 2, 8, true},     // the first token
        {1, 5, 20, 7, 4, 2, 64, true},   // prefill after 7 positions
        {1, 5, 20, 7, 2, 1, 8, false},   // not causal: every query sees all 12
    };
    for (DType dtype : {DType::f32, DType::f16, DType::bf16}) {
        for (const KvCase& c : cases) {
            if (dtype != DType::f32 && c.dim == 64) continue;
            const std::string what = std::string("kv_attention ") + std::string(dtype_name(dtype)) +
                                     " q_len=" + std::to_string(c.q_len) + " past=" + std::to_string(c.past) +
                                     " D=" + std::to_string(c.dim);
            const Shape q_shape{c.batch, c.q_len, c.heads_q, c.dim};
            const Shape cache_shape{c.batch, c.max_len, c.heads_kv, c.dim};
            const Pair q = random_pair(q_shape, dtype, 11);
            const Pair k = random_pair(cache_shape, dtype, 12);
            const Pair v = random_pair(cache_shape, dtype, 13);
            const Pair out = empty_pair(q_shape, dtype);
            kv_attention(q.gpu, k.gpu, v.gpu, out.gpu, c.past, {0, c.causal});
            kv_attention(q.ref, k.ref, v.ref, out.ref, c.past, {0, c.causal});
            check_close(out, dtype, what, 64.0 * static_cast<double>(c.dim + c.max_len));
            const Tensor out2 = gpu().empty(q_shape, dtype);
            kv_attention(q.gpu, k.gpu, v.gpu, out2, c.past, {0, c.causal});
            CHECK(out2.to_bytes() == out.gpu.to_bytes());
        }
    }
}

TEST_CASE("kv_attention at past 0 equals attention's output") {
    const Shape shape{1, 9, 4, 16}, kv_shape{1, 9, 2, 16};
    const Tensor q = gpu().upload(
        shape, std::span<const double>(random_values(9 * 4 * 16, -1, 1, DType::f32, 21)), DType::f32);
    const Tensor k = gpu().upload(
        kv_shape, std::span<const double>(random_values(9 * 2 * 16, -1, 1, DType::f32, 22)), DType::f32);
    const Tensor v = gpu().upload(
        kv_shape, std::span<const double>(random_values(9 * 2 * 16, -1, 1, DType::f32, 23)), DType::f32);
    const Tensor out = gpu().empty(shape, DType::f32), out_kv = gpu().empty(shape, DType::f32);
    const Tensor lse = gpu().empty({1, 4, 9}, DType::f32);
    attention(q, k, v, out, lse);
    kv_attention(q, k, v, out_kv, 0);
    CHECK(out.to_bytes() == out_kv.to_bytes());
}

TEST_CASE("attention head_dim over 128 is unsupported on the gpu") {
    const Tensor q = gpu().zeros({1, 2, 1, 136}, DType::f32);
    const Tensor out = gpu().empty({1, 2, 1, 136}, DType::f32), lse = gpu().empty({1, 1, 2}, DType::f32);
    CHECK_THROWS_AS(attention(q, q, q, out, lse), tapevm::Unsupported);
}
