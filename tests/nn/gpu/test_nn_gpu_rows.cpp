// The gpu device's row kernels (src/nn/gpu/rows.cpp) against the f64 reference device:
// softmax, layer_norm, rms_norm (forward and backward), embedding (forward and backward) and
// the fused cross_entropy, on f32, f16 and bf16 storage, with rows of length 1, 7, 65, 129 and 3000.
// Also: -inf entries and rows of only -inf, logits of +-1e4, pad rows, ids and targets out of
// range (tapevm::Error naming the kernel at the next wait), and determinism (two runs
// bitwise equal). Shapes are tiny: lavapipe runs them on the CPU.
#include <cmath>
#include <cstdint>
#include <limits>
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

const DType float_dtypes[] = {DType::f32, DType::f16, DType::bf16};
// 3000: teams of a whole workgroup (lavapipe: 32 subgroups of 8); 129: of two subgroups.
const std::size_t row_lengths[] = {1, 7, 65, 129, 3000};

Device gpu() { return tapevm::nn::test::gpu_device(); }
Device& reference() {
    static Device device = Device::reference();
    return device;
}

/// Unit roundoff of a storage dtype.
double unit(DType dtype) {
    switch (dtype) {
        case DType::f16: return std::ldexp(1.0, -11);
        case DType::bf16: return std::ldexp(1.0, -8);
        default: return std::ldexp(1.0, -24);
    }
}

/// Deterministic values uniform in [lo, hi), rounded to `dtype`.
std::vector<double> random_values(std::size_t n, double lo, double hi, DType dtype, std::uint64_t seed) {
    std::uint64_t state = seed * 0x9e3779b97f4a7c15ull + 1;
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
/// The same values on the gpu (in `dtype`) and on the reference device (f64, rounded to `dtype`).
Pair upload(const Shape& shape, const std::vector<double>& values, DType dtype) {
    std::vector<double> rounded(values);
    for (double& value : rounded) value = round_to(dtype, value);
    return {gpu().upload(shape, std::span<const double>(values), dtype),
            reference().upload(shape, std::span<const double>(rounded), DType::f64)};
}
Pair stats(const Shape& shape) {
    return {gpu().zeros(shape, DType::f32), reference().zeros(shape, DType::f64)};
}
Pair ids_pair(const Shape& shape, const std::vector<std::int32_t>& ids) {
    return {gpu().upload(shape, std::span<const std::int32_t>(ids)),
            reference().upload(shape, std::span<const std::int32_t>(ids))};
}

/// |gpu - reference| <= slack * u(dtype) * |reference| + f32_slack * 2^-24 * scale, elementwise
/// (scale: the largest |reference| of the tensor, at least 1).
void check_close(const Pair& pair, DType stored, const std::string& what, double slack = 2,
                 double f32_slack = 256) {
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
        const double bound = slack * unit(stored) * std::abs(want[i]) + f32_slack * unit(DType::f32) * scale;
        if (!(std::abs(got[i] - want[i]) <= bound)) {
            FAIL_CHECK(what << " element " << i << ": gpu " << got[i] << ", reference " << want[i]
                            << " (bound " << bound << ")");
            return;
        }
    }
}

void check_bitwise_equal(const Tensor& a, const Tensor& b, const std::string& what) {
    INFO(what);
    CHECK(a.to_bytes() == b.to_bytes());
}

std::string label(const char* kernel, DType dtype, std::size_t n) {
    return std::string(kernel) + " " + std::string(dtype_name(dtype)) + " n=" + std::to_string(n);
}

/// Runs `body` and expects tapevm::Error whose message names `kernel` from the next wait.
template <class Body> void expect_device_error(const char* kernel, Body body) {
    bool thrown = false;
    try {
        body();
        gpu().synchronize();
    } catch (const tapevm::Error& error) {
        thrown = true;
        INFO(error.what());
        CHECK(std::string(error.what()).find(kernel) != std::string::npos);
    }
    CHECK(thrown);
    gpu().synchronize();  // the device stays usable, the error is reported once
}

}  // namespace

TEST_CASE("softmax and softmax_backward match the reference") {
    const std::size_t rows = 3;
    for (DType dtype : float_dtypes) {
        for (std::size_t n : row_lengths) {
            std::vector<double> x = random_values(rows * n, -4, 4, dtype, n);
            if (n > 1) {
                x[1] = -std::numeric_limits<double>::infinity();  // one -inf entry in row 0
                for (std::size_t j = 0; j < n; ++j)
                    x[n + j] = -std::numeric_limits<double>::infinity();  // row 1
                x[2 * n] = 1e4;                                           // row 2: +-1e4
                x[2 * n + n - 1] = -1e4;
            }
            const Pair xp = upload({rows, n}, x, dtype);
            const Pair y{gpu().empty({rows, n}, dtype), reference().empty({rows, n}, DType::f64)};
            softmax(xp.gpu, y.gpu);
            softmax(xp.ref, y.ref);
            check_close(y, dtype, label("softmax", dtype, n));
            for (double value : y.gpu.to_double()) CHECK(std::isfinite(value));

            // In place gives the same bits.
            const Pair in_place = upload({rows, n}, x, dtype);
            softmax(in_place.gpu, in_place.gpu);
            check_bitwise_equal(in_place.gpu, y.gpu, label("softmax in place", dtype, n));

            const std::vector<double> dy = random_values(rows * n, -1, 1, dtype, n + 100);
            const std::vector<double> dx0 = random_values(rows * n, -1, 1, dtype, n + 200);
            const std::vector<double> y_values = y.gpu.to_double();  // softmax's output, rounded
            const Pair yp = upload({rows, n}, y_values, dtype);
            const Pair dyp = upload({rows, n}, dy, dtype);
            const Pair dx = upload({rows, n}, dx0, dtype);
            softmax_backward(yp.gpu, dyp.gpu, dx.gpu);
            softmax_backward(yp.ref, dyp.ref, dx.ref);
            check_close(dx, dtype, label("softmax_backward", dtype, n));

            const Pair dx_again = upload({rows, n}, dx0, dtype);
            softmax_backward(yp.gpu, dyp.gpu, dx_again.gpu);
            check_bitwise_equal(dx_again.gpu, dx.gpu, label("softmax_backward twice", dtype, n));
        }
    }
}

TEST_CASE("layer_norm and rms_norm forward and backward match the reference") {
    const std::size_t rows = 37;  // two blocks of the dgamma reduction
    for (DType dtype : float_dtypes) {
        for (std::size_t n : row_lengths) {
            const std::vector<double> x = random_values(rows * n, -2, 3, dtype, n);
            const std::vector<double> gamma = random_values(n, 0.5, 1.5, dtype, n + 1);
            const std::vector<double> beta = random_values(n, -1, 1, dtype, n + 2);
            const std::vector<double> dy = random_values(rows * n, -1, 1, dtype, n + 3);
            const std::vector<double> dx0 = random_values(rows * n, -1, 1, dtype, n + 4);
            const std::vector<double> dgamma0 = random_values(n, -1, 1, dtype, n + 5);
            const std::vector<double> dbeta0 = random_values(n, -1, 1, dtype, n + 6);
            const Pair xp = upload({rows, n}, x, dtype), gp = upload({n}, gamma, dtype),
                       bp = upload({n}, beta, dtype);
            const Pair dyp = upload({rows, n}, dy, dtype);

            for (int with_beta = 0; with_beta < 2; ++with_beta) {
                const std::string what =
                    label(with_beta ? "layer_norm" : "layer_norm without beta", dtype, n);
                const Pair y{gpu().empty({rows, n}, dtype), reference().empty({rows, n}, DType::f64)};
                const Pair mean = stats({rows}), rstd = stats({rows});
                layer_norm(xp.gpu, gp.gpu, with_beta ? bp.gpu : Tensor(), y.gpu, mean.gpu, rstd.gpu);
                layer_norm(xp.ref, gp.ref, with_beta ? bp.ref : Tensor(), y.ref, mean.ref, rstd.ref);
                check_close(y, dtype, what + " y");
                check_close(mean, DType::f32, what + " mean");
                check_close(rstd, DType::f32, what + " rstd", 8);

                // Backward from the reference's statistics rounded to f32, on both devices.
                const Pair mean_in = upload({rows}, mean.ref.to_double(), DType::f32);
                const Pair rstd_in = upload({rows}, rstd.ref.to_double(), DType::f32);
                const Pair mean_stats{mean_in.gpu, mean_in.ref}, rstd_stats{rstd_in.gpu, rstd_in.ref};
                const Pair dx = upload({rows, n}, dx0, dtype), dgamma = upload({n}, dgamma0, dtype);
                const Pair dbeta = upload({n}, dbeta0, dtype);
                layer_norm_backward(dyp.gpu, xp.gpu, gp.gpu, mean_stats.gpu, rstd_stats.gpu, dx.gpu,
                                    dgamma.gpu, with_beta ? dbeta.gpu : Tensor());
                layer_norm_backward(dyp.ref, xp.ref, gp.ref, mean_stats.ref, rstd_stats.ref, dx.ref,
                                    dgamma.ref, with_beta ? dbeta.ref : Tensor());
                check_close(dx, dtype, what + " dx", 2, 1024);
                check_close(dgamma, dtype, what + " dgamma", 2, 1024);
                check_close(dbeta, dtype, what + " dbeta", 2, 1024);

                const Pair dgamma_again = upload({n}, dgamma0, dtype);
                layer_norm_backward(dyp.gpu, xp.gpu, gp.gpu, mean_stats.gpu, rstd_stats.gpu, Tensor(),
                                    dgamma_again.gpu, Tensor());
                check_bitwise_equal(dgamma_again.gpu, dgamma.gpu, what + " dgamma twice");
            }

            const std::string what = label("rms_norm", dtype, n);
            const Pair y{gpu().empty({rows, n}, dtype), reference().empty({rows, n}, DType::f64)};
            const Pair rstd = stats({rows});
            rms_norm(xp.gpu, gp.gpu, y.gpu, rstd.gpu);
            rms_norm(xp.ref, gp.ref, y.ref, rstd.ref);
            check_close(y, dtype, what + " y");
            check_close(rstd, DType::f32, what + " rstd", 8);
            const Pair rstd_in = upload({rows}, rstd.ref.to_double(), DType::f32);
            const Pair rstd_stats{rstd_in.gpu, rstd_in.ref};
            const Pair dx = upload({rows, n}, dx0, dtype), dgamma = upload({n}, dgamma0, dtype);
            rms_norm_backward(dyp.gpu, xp.gpu, gp.gpu, rstd_stats.gpu, dx.gpu, dgamma.gpu);
            rms_norm_backward(dyp.ref, xp.ref, gp.ref, rstd_stats.ref, dx.ref, dgamma.ref);
            check_close(dx, dtype, what + " dx", 2, 1024);
            check_close(dgamma, dtype, what + " dgamma", 2, 1024);
        }
    }
}

TEST_CASE("embedding and embedding_backward match the reference; backward sums in token order") {
    const std::size_t vocab = 13, dim = 7, tokens = 300;  // more tokens than one chunk of 256
    std::vector<std::int32_t> ids(tokens);
    for (std::size_t t = 0; t < tokens; ++t)
        ids[t] = static_cast<std::int32_t>((t * 7 + t / 5) % (vocab - 2));  // repeats; ids 11, 12 unused
    const Pair idp = ids_pair({3, 100}, ids);
    for (DType dtype : float_dtypes) {
        const std::vector<double> table = random_values(vocab * dim, -1, 1, dtype, 1);
        const Pair tp = upload({vocab, dim}, table, dtype);
        const Pair out{gpu().empty({3, 100, dim}, dtype), reference().empty({3, 100, dim}, DType::f64)};
        embedding(idp.gpu, tp.gpu, out.gpu);
        embedding(idp.ref, tp.ref, out.ref);
        CHECK(out.gpu.to_double() == out.ref.to_double());  // a gather: exact

        const std::vector<double> dout = random_values(tokens * dim, -1, 1, dtype, 2);
        const std::vector<double> dtable0 = random_values(vocab * dim, -1, 1, dtype, 3);
        const Pair doutp = upload({3, 100, dim}, dout, dtype);
        const Pair dtable = upload({vocab, dim}, dtable0, dtype);
        embedding_backward(idp.gpu, doutp.gpu, dtable.gpu);
        embedding_backward(idp.ref, doutp.ref, dtable.ref);
        check_close(dtable, dtype, std::string("embedding_backward ") + std::string(dtype_name(dtype)), 2,
                    1024);
        // Rows no token uses are untouched.
        const std::vector<double> got = dtable.gpu.to_double();
        for (std::size_t j = 0; j < 2 * dim; ++j)
            CHECK(got[(vocab - 2) * dim + j] == dtable0[(vocab - 2) * dim + j]);

        const Pair dtable_again = upload({vocab, dim}, dtable0, dtype);
        embedding_backward(idp.gpu, doutp.gpu, dtable_again.gpu);
        check_bitwise_equal(dtable_again.gpu, dtable.gpu, "embedding_backward twice");
    }

    // In f32 the gpu adds in token order in f32: the same as adding the rows one by one.
    const std::vector<double> dout = random_values(tokens * dim, -1, 1, DType::f32, 4);
    std::vector<float> expected(vocab * dim, 0.0f);
    for (std::size_t t = 0; t < tokens; ++t)
        for (std::size_t c = 0; c < dim; ++c)
            expected[static_cast<std::size_t>(ids[t]) * dim + c] += static_cast<float>(dout[t * dim + c]);
    const Tensor dtable = gpu().zeros({vocab, dim}, DType::f32);
    embedding_backward(idp.gpu, gpu().upload({3, 100, dim}, std::span<const double>(dout), DType::f32),
                       dtable);
    CHECK(dtable.to_float() == expected);
}

TEST_CASE("embedding_backward over many spans (20,000 tokens: 40 spans of 512) still sums in token order") {
    const std::size_t tokens = 20000, vocab = 7, dim = 3;
    std::vector<std::int32_t> ids(tokens);
    for (std::size_t t = 0; t < tokens; ++t)
        ids[t] = static_cast<std::int32_t>((t * 2654435761u >> 7) % vocab);
    const std::vector<double> dout = random_values(tokens * dim, -1, 1, DType::f32, 6);
    std::vector<float> expected(vocab * dim, 0.0f);
    for (std::size_t t = 0; t < tokens; ++t)
        for (std::size_t c = 0; c < dim; ++c)
            expected[static_cast<std::size_t>(ids[t]) * dim + c] += static_cast<float>(dout[t * dim + c]);
    const Tensor dtable = gpu().zeros({vocab, dim}, DType::f32);
    embedding_backward(gpu().upload({tokens}, std::span<const std::int32_t>(ids)),
                       gpu().upload({tokens, dim}, std::span<const double>(dout), DType::f32), dtable);
    CHECK(dtable.to_float() == expected);
}

TEST_CASE("embedding ids out of range: an error naming the kernel, zero rows, nothing read outside") {
    const std::size_t vocab = 5, dim = 3;
    const std::vector<double> table = random_values(vocab * dim, 1, 2, DType::f32, 5);
    const Tensor tt = gpu().upload({vocab, dim}, std::span<const double>(table), DType::f32);
    for (std::int32_t bad : {5, -1, 1 << 30}) {
        const std::vector<std::int32_t> ids = {0, bad, 4};
        const Tensor idt = gpu().upload({3}, std::span<const std::int32_t>(ids));
        const Tensor out = gpu().empty({3, dim}, DType::f32);
        expect_device_error("embedding", [&] { embedding(idt, tt, out); });
        const std::vector<double> got = out.to_double();
        for (std::size_t c = 0; c < dim; ++c) {
            CHECK(got[c] == table[c]);
            CHECK(got[dim + c] == 0.0);
            CHECK(got[2 * dim + c] == table[4 * dim + c]);
        }
        const Tensor dtable = gpu().zeros({vocab, dim}, DType::f32);
        expect_device_error("embedding_backward", [&] { embedding_backward(idt, out, dtable); });
    }
}

TEST_CASE("cross_entropy matches the reference: pad rows, +-1e4 logits, in place, no gradient") {
    const std::size_t rows = 6;
    const std::int32_t pad = -100;
    for (DType dtype : float_dtypes) {
        for (std::size_t n : {std::size_t{7}, std::size_t{129}, std::size_t{3000}}) {
            std::vector<double> logits = random_values(rows * n, -5, 5, dtype, n);
            logits[0] = 1e4;  // row 0: +-1e4
            logits[1] = -1e4;
            const std::vector<std::int32_t> targets = {0, 3, pad, static_cast<std::int32_t>(n - 1), pad, 1};
            const Pair lp = upload({rows, n}, logits, dtype);
            const Pair tp = ids_pair({rows}, targets);
            const Pair losses = stats({rows});
            const Pair dlogits{gpu().empty({rows, n}, dtype), reference().empty({rows, n}, DType::f64)};
            cross_entropy(lp.gpu, tp.gpu, losses.gpu, dlogits.gpu, pad, 0.25);
            cross_entropy(lp.ref, tp.ref, losses.ref, dlogits.ref, pad, 0.25);
            const std::string what = label("cross_entropy", dtype, n);
            check_close(losses, DType::f32, what + " losses", 2, 1e4 * 64);  // lse of 1e4 in f32
            check_close(dlogits, dtype, what + " dlogits");
            const std::vector<double> loss_values = losses.gpu.to_double();
            CHECK(loss_values[2] == 0.0);
            CHECK(loss_values[4] == 0.0);
            const std::vector<double> grads = dlogits.gpu.to_double();
            for (std::size_t j = 0; j < n; ++j) {
                CHECK(grads[2 * n + j] == 0.0);
                CHECK(grads[4 * n + j] == 0.0);
            }

            // In place (dlogits = logits) and without a gradient: the same bits.
            const Pair in_place = upload({rows, n}, logits, dtype);
            const Tensor losses2 = gpu().zeros({rows}, DType::f32), losses3 = gpu().zeros({rows}, DType::f32);
            cross_entropy(in_place.gpu, tp.gpu, losses2, in_place.gpu, pad, 0.25);
            cross_entropy(lp.gpu, tp.gpu, losses3, Tensor(), pad, 0.25);
            check_bitwise_equal(in_place.gpu, dlogits.gpu, what + " in place");
            check_bitwise_equal(losses2, losses.gpu, what + " losses in place");
            check_bitwise_equal(losses3, losses.gpu, what + " losses without gradient");
        }
    }
}

TEST_CASE("cross_entropy targets out of range: an error naming the kernel") {
    const std::size_t n = 4;
    const Tensor logits = gpu().zeros({2, n}, DType::f32);
    const Tensor losses = gpu().zeros({2}, DType::f32);
    for (std::int32_t bad : {4, -2}) {
        const std::vector<std::int32_t> targets = {1, bad};
        const Tensor tt = gpu().upload({2}, std::span<const std::int32_t>(targets));
        expect_device_error("cross_entropy", [&] { cross_entropy(logits, tt, losses, Tensor(), -1, 1); });
    }
}
