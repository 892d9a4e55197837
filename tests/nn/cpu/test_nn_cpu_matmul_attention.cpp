// The cpu device's matmul (every layout, alpha/beta, batches, shared operands, f16/bf16
// inputs and outputs) against the reference device within the elementwise bound
// c K u (|alpha| |A||B| + |beta| |C|); attention, its backward and kv_attention against the
// reference device (GQA ratios 1, 2, 3, causal and not, awkward lengths).
#include <cmath>

#include "cpu/blas_core.hpp"
#include "cpu_cases.hpp"

namespace tapevm::nn::test {

namespace {

struct MatmulCase {
    std::size_t batch;  // 0: C is 2-D
    std::size_t m, n, k;
    bool a_batched, b_batched;
    MatmulOptions options;
};

Shape operand_shape(std::size_t batch, bool batched, std::size_t rows, std::size_t cols) {
    if (batch != 0 && batched) return {batch, rows, cols};
    return {rows, cols};
}

std::vector<double> absolute(std::vector<double> values) {
    for (double& v : values) v = std::fabs(v);
    return values;
}

// Runs one matmul case in `dtype` (inputs) with C in `c_dtype` and checks it against the
// reference device within the elementwise bound, and for repeatability.
void check_matmul(const MatmulCase& mc, DType dtype, DType c_dtype) {
    const MatmulOptions& o = mc.options;
    CAPTURE(mc.batch);
    CAPTURE(mc.m);
    CAPTURE(mc.n);
    CAPTURE(mc.k);
    CAPTURE(o.transpose_a);
    CAPTURE(o.transpose_b);
    CAPTURE(dtype_name(dtype));
    CAPTURE(dtype_name(c_dtype));
    const Shape a_shape =
        operand_shape(mc.batch, mc.a_batched, o.transpose_a ? mc.k : mc.m, o.transpose_a ? mc.m : mc.k);
    const Shape b_shape =
        operand_shape(mc.batch, mc.b_batched, o.transpose_b ? mc.n : mc.k, o.transpose_b ? mc.k : mc.n);
    const Shape c_shape = mc.batch != 0 ? Shape{mc.batch, mc.m, mc.n} : Shape{mc.m, mc.n};
    const auto run = [&](const Env& env, bool absolute_values) {
        Tensor a = env.random(a_shape, 1);
        Tensor b = env.random(b_shape, 2);
        Tensor c = env.upload_as(c_shape, env.random(c_shape, 3).to_double(), c_dtype, c_dtype);
        MatmulOptions options = o;
        if (absolute_values) {
            a = env.values(a_shape, absolute(a.to_double()));
            b = env.values(b_shape, absolute(b.to_double()));
            c = env.values(c_shape, absolute(c.to_double()));
            options.alpha = std::fabs(o.alpha);
            options.beta = std::fabs(o.beta);
        }
        matmul(a, b, c, options);
        return c;
    };
    const Env reference{Device::reference(), dtype};
    const std::vector<double> expected = run(reference, false).to_double();
    const std::vector<double> magnitude = run(reference, true).to_double();
    const Tensor actual_tensor = run(Env{cpu_device(2), dtype}, false);
    const std::vector<double> actual = actual_tensor.to_double();
    const double u = std::ldexp(1.0, -24);
    const double store = unit_roundoff(c_dtype);
    std::size_t failures = 0;
    for (std::size_t i = 0; i < expected.size(); ++i) {
        const double bound =
            2.0 * static_cast<double>(mc.k + 2) * u * magnitude[i] + store * std::fabs(expected[i]);
        if (!(std::fabs(actual[i] - expected[i]) <= bound) && failures++ < 5) {
            FAIL_CHECK("C[" << i << "]: cpu " << actual[i] << ", reference " << expected[i] << " (bound "
                            << bound << ")");
        }
    }
    CHECK(failures == 0);
    CHECK(run(Env{cpu_device(1), dtype}, false).to_bytes() == actual_tensor.to_bytes());
}

}  // namespace

TEST_CASE("cpu matmul: layouts, alpha and beta, awkward shapes") {
    for (bool ta : {false, true}) {
        for (bool tb : {false, true}) {
            check_matmul({0, 7, 65, 129, false, false, {ta, tb, 1, 0}}, DType::f32, DType::f32);
            check_matmul({0, 63, 1, 7, false, false, {ta, tb, -0.5, 1}}, DType::f32, DType::f32);
            check_matmul({0, 1, 1, 1, false, false, {ta, tb, 2, 0.25}}, DType::f32, DType::f32);
        }
    }
    check_matmul({0, 65, 33, 0, false, false, {false, false, 1, 0.5}}, DType::f32, DType::f32);  // K = 0
}

TEST_CASE("cpu matmul: OpenBLAS's generic kernels on a CPU with wider instruction sets are named") {
    using tapevm::cpu::Isa;
    using tapevm::nn::detail::suggested_openblas_core;
    CHECK(suggested_openblas_core("Prescott", {Isa::sse2, Isa::avx2, Isa::avx512}) == "SkylakeX");
    CHECK(suggested_openblas_core("PRESCOTT", {Isa::sse2, Isa::avx2}) == "Haswell");
    CHECK(suggested_openblas_core("Nehalem", {Isa::sse2}).empty());
    CHECK(suggested_openblas_core("Zen", {Isa::sse2, Isa::avx2}).empty());
    CHECK(suggested_openblas_core("SkylakeX", {Isa::sse2, Isa::avx2, Isa::avx512}).empty());
}

TEST_CASE("cpu matmul: batches, shared operands, f16 and bf16") {
    check_matmul({3, 7, 9, 65, true, true, {false, false, 1, 0}}, DType::f32, DType::f32);
    check_matmul({3, 7, 9, 65, true, false, {false, true, 1, 1}}, DType::f32,
                 DType::f32);  // one folded sgemm
    check_matmul({3, 7, 9, 65, true, false, {true, false, 1, 0}}, DType::f32, DType::f32);
    check_matmul({3, 7, 9, 65, false, true, {false, false, 0.5, 0}}, DType::f32, DType::f32);
    check_matmul({2, 5, 6, 7, false, false, {true, true, 1, 0}}, DType::f32, DType::f32);
    for (DType dtype : {DType::f16, DType::bf16}) {
        check_matmul({0, 33, 17, 65, false, false, {false, true, 1, 0}}, dtype, DType::f32);
        check_matmul({2, 9, 7, 63, true, true, {true, false, 1, 1}}, dtype, dtype);
        check_matmul({0, 9, 7, 63, false, false, {false, false, 1, 0.5}}, DType::f32, dtype);
    }
}

TEST_CASE("cpu attention, attention_backward and kv_attention") {
    struct AttentionCase {
        std::size_t batch, t, q_heads, kv_heads, d;
        bool causal;
    };
    const AttentionCase cases[] = {
        {1, 1, 1, 1, 1, true},  {2, 7, 2, 2, 8, true},    {1, 65, 6, 2, 8, true},
        {2, 9, 3, 1, 5, false}, {1, 70, 2, 1, 16, false},
    };
    for (DType dtype : {DType::f32, DType::f16, DType::bf16}) {
        for (const AttentionCase& ac : cases) {
            const Shape q_shape{ac.batch, ac.t, ac.q_heads, ac.d};
            const Shape kv_shape{ac.batch, ac.t, ac.kv_heads, ac.d};
            const Shape lse_shape{ac.batch, ac.q_heads, ac.t};
            const AttentionOptions options{0, ac.causal};
            const std::string where =
                shape_string(q_shape) + " kv " + shape_string(kv_shape) + (ac.causal ? " causal" : "");
            check_case("attention " + where, dtype, 1e-5, [&](const Env& env) {
                Tensor out = env.zeros(q_shape);
                Tensor lse = env.stats(lse_shape);
                attention(env.random(q_shape, 1, -2, 2), env.random(kv_shape, 2, -2, 2),
                          env.random(kv_shape, 3), out, lse, options);
                return std::vector<Tensor>{out, lse};
            });
            check_case(
                "attention_backward " + where, dtype, 2e-5,
                [&](const Env& env) {
                    Tensor q = env.random(q_shape, 1, -2, 2), k = env.random(kv_shape, 2, -2, 2),
                           v = env.random(kv_shape, 3);
                    // out and lse from the reference device's forward, rounded as each device stores
                    // them, so that both devices' backward read the same values.
                    const Env reference{Device::reference(), env.dtype};
                    Tensor exact_out = reference.zeros(q_shape);
                    Tensor exact_lse = reference.stats(lse_shape);
                    attention(reference.random(q_shape, 1, -2, 2), reference.random(kv_shape, 2, -2, 2),
                              reference.random(kv_shape, 3), exact_out, exact_lse, options);
                    Tensor out = env.values(q_shape, exact_out.to_double());
                    Tensor lse = env.upload_as(lse_shape, exact_lse.to_double(), DType::f32,
                                               env.device.accumulate_dtype());
                    Tensor dq = env.random(q_shape, 4), dk = env.random(kv_shape, 5),
                           dv = env.random(kv_shape, 6);
                    attention_backward(q, k, v, out, lse, env.random(q_shape, 7), dq, dk, dv, options);
                    Tensor dv_only = env.zeros(kv_shape);
                    attention_backward(q, k, v, out, lse, env.random(q_shape, 7), Tensor(), Tensor(), dv_only,
                                       options);
                    return std::vector<Tensor>{dq, dk, dv, dv_only};
                },
                64);  // f16/bf16: the cpu takes sum_j P_j dP_j as dout.out (FlashAttention-2's D) with out
                      // as stored (rounded); the reference sums P_j dP_j exactly: they differ by about
                      // scale |dout| |k| u(dtype).
        }
    }
    for (DType dtype : {DType::f32, DType::bf16}) {
        for (std::size_t past : {0, 5}) {
            for (std::size_t queries : {1, 4}) {
                check_case(
                    "kv_attention past " + std::to_string(past) + " queries " + std::to_string(queries),
                    dtype, 1e-5, [&](const Env& env) {
                        const Shape cache{2, 12, 2, 8};
                        Tensor out = env.zeros({2, queries, 6, 8});
                        kv_attention(env.random({2, queries, 6, 8}, 8, -2, 2), env.random(cache, 9, -2, 2),
                                     env.random(cache, 10), out, past, {0.3, true});
                        Tensor open = env.zeros({2, queries, 6, 8});
                        kv_attention(env.random({2, queries, 6, 8}, 8, -2, 2), env.random(cache, 9, -2, 2),
                                     env.random(cache, 10), open, past, {0, false});
                        return std::vector<Tensor>{out, open};
                    });
            }
        }
    }
}

}  // namespace tapevm::nn::test
