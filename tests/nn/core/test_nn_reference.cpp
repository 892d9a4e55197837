// The reference device's kernels against independent oracles: memory kernels and matmul
// against loops written here, row kernels against their formulas, every backward kernel
// against central finite differences of its forward kernel (and checked to ADD into its
// outputs), embeddings and cross-entropy against direct formulas, elementwise tapes against
// the same function written in C++. Attention is in test_nn_reference_attention.cpp.
#include <cmath>
#include <limits>
#include <vector>

#include <doctest/doctest.h>

#include "reference_support.hpp"
#include "tapevm/error.hpp"
#include "tapevm/nn/kernels.hpp"
#include "tapevm/var.hpp"

using namespace tapevm;
using namespace tapevm::nn;
using namespace tapevm::nn::test;

namespace {

constexpr double inf = std::numeric_limits<double>::infinity();

/// Adds the pre-set values `initial` back to a gradient read from a kernel that adds into
/// its output, so that what remains is the kernel's own contribution.
std::vector<double> added(const Tensor& gradient, const std::vector<double>& initial) {
    std::vector<double> values = gradient.to_double();
    for (std::size_t i = 0; i < values.size(); ++i) values[i] -= initial[i];
    return values;
}

}  // namespace

// ---- memory kernels ---------------------------------------------------------------------------

TEST_CASE("zero, fill and copy, between f64 and i32") {
    const Tensor x = random_tensor({2, 3}, 1);
    fill(x, 2.5);
    CHECK(x.to_double() == std::vector<double>(6, 2.5));
    zero(x);
    CHECK(x.to_double() == std::vector<double>(6, 0.0));
    const Tensor integers = id_tensor({6}, {0, 0, 0, 0, 0, 0});
    fill(integers, -7.9);
    CHECK(integers.to_int() == std::vector<std::int32_t>(6, -7));
    const std::vector<double> source = {1.5, -2.5, 3, 4, 5, 6};
    const Tensor floats = tensor({6}, source);
    copy(floats, integers);
    CHECK(integers.to_int() == std::vector<std::int32_t>{1, -2, 3, 4, 5, 6});
    const Tensor back = tensor({2, 3}, std::vector<double>(6, 0.0));
    copy(integers, back);  // shapes may differ
    CHECK(back.to_double() == std::vector<double>{1, -2, 3, 4, 5, 6});
}

TEST_CASE("bias_add, add_assign, reduce_sum, transpose_2d, global_norm_squared") {
    const std::vector<double> xs = random_values(24, 2);
    const Tensor x = tensor({2, 3, 4}, xs);
    const std::vector<double> bias = {1, 2, 3, 4};
    bias_add(x, tensor({4}, bias));
    std::vector<double> expected = xs;
    for (std::size_t i = 0; i < 24; ++i) expected[i] += bias[i % 4];
    check_close(x.to_double(), expected, 0, "bias_add");

    const std::vector<double> ys = random_values(24, 3);
    add_assign(x, tensor({24}, ys), -0.5);
    for (std::size_t i = 0; i < 24; ++i) expected[i] += -0.5 * ys[i];
    check_close(x.to_double(), expected, 1e-15, "add_assign");

    // reduce_sum over each axis of [2][3][4], with and without accumulate.
    const std::vector<double> values = x.to_double();
    auto at = [&](std::size_t a, std::size_t b, std::size_t c) { return values[(a * 3 + b) * 4 + c]; };
    for (std::size_t axis = 0; axis < 3; ++axis) {
        Shape shape = {2, 3, 4};
        shape[axis] = 1;
        std::vector<double> sums(element_count(shape), 0.0);
        for (std::size_t a = 0; a < 2; ++a) {
            for (std::size_t b = 0; b < 3; ++b) {
                for (std::size_t c = 0; c < 4; ++c) {
                    const std::size_t index = axis == 0 ? b * 4 + c : axis == 1 ? a * 4 + c : a * 3 + b;
                    sums[index] += at(a, b, c);
                }
            }
        }
        const Tensor y = tensor(shape, std::vector<double>(sums.size(), 1.0));
        reduce_sum(x, y, axis);
        check_close(y.to_double(), sums, 1e-14, "reduce_sum");
        reduce_sum(x, y, axis, true);
        for (double& sum : sums) sum *= 2;
        check_close(y.to_double(), sums, 1e-14, "reduce_sum accumulate");
    }

    const Tensor t = tensor({2, 4, 3}, std::vector<double>(24, 0.0));
    transpose_2d(x, t);
    const std::vector<double> transposed = t.to_double();
    for (std::size_t a = 0; a < 2; ++a) {
        for (std::size_t b = 0; b < 3; ++b) {
            for (std::size_t c = 0; c < 4; ++c) CHECK(transposed[(a * 4 + c) * 3 + b] == at(a, b, c));
        }
    }
    const Tensor integers = id_tensor({2, 3}, {1, 2, 3, 4, 5, 6});
    const Tensor integers_t = id_tensor({3, 2}, {0, 0, 0, 0, 0, 0});
    transpose_2d(integers, integers_t);
    CHECK(integers_t.to_int() == std::vector<std::int32_t>{1, 4, 2, 5, 3, 6});

    const Tensor norm = tensor({1}, {0.0});
    global_norm_squared(std::vector<Tensor>{tensor({2}, {3, 4}), tensor({1, 1}, {12})}, norm);
    CHECK(norm.to_double()[0] == 169);
    global_norm_squared({}, norm);
    CHECK(norm.to_double()[0] == 0);
}

// ---- matmul -------------------------------------------------------------------------------------

TEST_CASE("matmul: every layout, alpha and beta, batches with shared operands") {
    const std::size_t m = 3, k = 4, n = 2, batches = 2;
    for (const bool transpose_a : {false, true}) {
        for (const bool transpose_b : {false, true}) {
            for (const bool batch_a : {false, true}) {
                for (const bool batch_b : {false, true}) {
                    CAPTURE(transpose_a);
                    CAPTURE(transpose_b);
                    CAPTURE(batch_a);
                    CAPTURE(batch_b);
                    const std::size_t a_batches = batch_a ? batches : 1;
                    const std::size_t b_batches = batch_b ? batches : 1;
                    const std::vector<double> as = random_values(a_batches * m * k, 10);
                    const std::vector<double> bs = random_values(b_batches * k * n, 11);
                    const std::vector<double> cs = random_values(batches * m * n, 12);
                    Shape a_shape = transpose_a ? Shape{k, m} : Shape{m, k};
                    Shape b_shape = transpose_b ? Shape{n, k} : Shape{k, n};
                    if (batch_a) a_shape.insert(a_shape.begin(), batches);
                    if (batch_b) b_shape.insert(b_shape.begin(), batches);
                    const Tensor c = tensor({batches, m, n}, cs);
                    matmul(
                        tensor(a_shape, as), tensor(b_shape, bs), c,
                        {.transpose_a = transpose_a, .transpose_b = transpose_b, .alpha = 0.5, .beta = -2});
                    std::vector<double> expected(cs.size());
                    for (std::size_t batch = 0; batch < batches; ++batch) {
                        const double* A = as.data() + (batch_a ? batch * m * k : 0);
                        const double* B = bs.data() + (batch_b ? batch * k * n : 0);
                        for (std::size_t i = 0; i < m; ++i) {
                            for (std::size_t j = 0; j < n; ++j) {
                                double sum = 0;
                                for (std::size_t p = 0; p < k; ++p) {
                                    sum += (transpose_a ? A[p * m + i] : A[i * k + p]) *
                                           (transpose_b ? B[j * k + p] : B[p * n + j]);
                                }
                                const std::size_t index = (batch * m + i) * n + j;
                                expected[index] = 0.5 * sum - 2 * cs[index];
                            }
                        }
                    }
                    check_close(c.to_double(), expected, 1e-14, "C");
                }
            }
        }
    }
}

TEST_CASE("matmul: beta = 0 ignores what C held, beta = 1 accumulates") {
    const Tensor a = tensor({2, 2}, {1, 2, 3, 4});
    const Tensor b = tensor({2, 2}, {5, 6, 7, 8});
    const Tensor c = tensor({2, 2}, {std::nan(""), inf, -inf, 1});
    matmul(a, b, c);
    CHECK(c.to_double() == std::vector<double>{19, 22, 43, 50});
    matmul(a, b, c, {.beta = 1});
    CHECK(c.to_double() == std::vector<double>{38, 44, 86, 100});
}

// ---- row kernels ----------------------------------------------------------------------------

TEST_CASE("softmax: the formula, -inf entries, rows of only -inf, in place") {
    const std::vector<double> xs = {1, 2, 3, -inf, 0.5, -inf, -inf, -inf, -inf, 1000, 1000, -1000};
    const Tensor x = tensor({4, 3}, xs);
    const Tensor y = tensor({4, 3}, std::vector<double>(12, 9.0));
    softmax(x, y);
    const double e1 = std::exp(1.0), e2 = std::exp(2.0), e3 = std::exp(3.0);
    const double s = e1 + e2 + e3;
    const std::vector<double> expected = {e1 / s, e2 / s, e3 / s, 0, 1, 0, 0, 0, 0, 0.5, 0.5, 0};
    check_close(y.to_double(), expected, 1e-15, "softmax");
    softmax(x, x);
    check_close(x.to_double(), expected, 1e-15, "softmax in place");
}

TEST_CASE("softmax_backward: finite differences of softmax, added into dx") {
    std::vector<double> xs = random_values(10, 20, -2, 2);
    const std::vector<double> weights = random_values(10, 21);
    auto loss = [&] {
        const Tensor y = tensor({2, 5}, std::vector<double>(10, 0.0));
        softmax(tensor({2, 5}, xs), y);
        return weighted_sum(y.to_double(), weights);
    };
    const Tensor y = tensor({2, 5}, std::vector<double>(10, 0.0));
    softmax(tensor({2, 5}, xs), y);
    const std::vector<double> initial = random_values(10, 22);
    const Tensor dx = tensor({2, 5}, initial);
    softmax_backward(y, tensor({2, 5}, weights), dx);
    check_close(added(dx, initial), numeric_gradient(xs, loss), 1e-8, "dx");
}

TEST_CASE("layer_norm: the formula, statistics, no beta, in place") {
    const std::vector<double> xs = random_values(12, 30, -3, 3);
    const std::vector<double> gamma = random_values(4, 31);
    const std::vector<double> beta = random_values(4, 32);
    const Tensor y = tensor({3, 4}, std::vector<double>(12, 0.0));
    const Tensor mean = tensor({3}, {0, 0, 0});
    const Tensor rstd = tensor({3}, {0, 0, 0});
    layer_norm(tensor({3, 4}, xs), tensor({4}, gamma), tensor({4}, beta), y, mean, rstd, 1e-5);
    std::vector<double> expected(12), means(3), rstds(3);
    for (std::size_t r = 0; r < 3; ++r) {
        double m = 0, v = 0;
        for (std::size_t j = 0; j < 4; ++j) m += xs[r * 4 + j] / 4;
        for (std::size_t j = 0; j < 4; ++j) v += (xs[r * 4 + j] - m) * (xs[r * 4 + j] - m) / 4;
        means[r] = m;
        rstds[r] = 1 / std::sqrt(v + 1e-5);
        for (std::size_t j = 0; j < 4; ++j)
            expected[r * 4 + j] = (xs[r * 4 + j] - m) * rstds[r] * gamma[j] + beta[j];
    }
    check_close(y.to_double(), expected, 1e-13, "y");
    check_close(mean.to_double(), means, 1e-14, "mean");
    check_close(rstd.to_double(), rstds, 1e-13, "rstd");
    const Tensor x = tensor({3, 4}, xs);
    layer_norm(x, tensor({4}, gamma), Tensor(), x, mean, rstd, 1e-5);
    for (std::size_t i = 0; i < 12; ++i) expected[i] -= beta[i % 4];
    check_close(x.to_double(), expected, 1e-13, "y in place, no beta");
}

TEST_CASE("layer_norm_backward: finite differences for x, gamma and beta, added") {
    const std::size_t rows = 3, n = 5;
    std::vector<double> xs = random_values(rows * n, 40, -2, 2);
    std::vector<double> gamma = random_values(n, 41);
    std::vector<double> beta = random_values(n, 42);
    const std::vector<double> weights = random_values(rows * n, 43);
    auto loss = [&] {
        const Tensor y = tensor({rows, n}, std::vector<double>(rows * n, 0.0));
        const Tensor mean = tensor({rows}, std::vector<double>(rows, 0.0));
        const Tensor rstd = tensor({rows}, std::vector<double>(rows, 0.0));
        layer_norm(tensor({rows, n}, xs), tensor({n}, gamma), tensor({n}, beta), y, mean, rstd, 1e-5);
        return weighted_sum(y.to_double(), weights);
    };
    const Tensor x = tensor({rows, n}, xs);
    const Tensor y = tensor({rows, n}, std::vector<double>(rows * n, 0.0));
    const Tensor mean = tensor({rows}, std::vector<double>(rows, 0.0));
    const Tensor rstd = tensor({rows}, std::vector<double>(rows, 0.0));
    layer_norm(x, tensor({n}, gamma), tensor({n}, beta), y, mean, rstd, 1e-5);
    const std::vector<double> dx0 = random_values(rows * n, 44);
    const std::vector<double> dgamma0 = random_values(n, 45);
    const std::vector<double> dbeta0 = random_values(n, 46);
    const Tensor dx = tensor({rows, n}, dx0), dgamma = tensor({n}, dgamma0), dbeta = tensor({n}, dbeta0);
    layer_norm_backward(tensor({rows, n}, weights), x, tensor({n}, gamma), mean, rstd, dx, dgamma, dbeta);
    check_close(added(dx, dx0), numeric_gradient(xs, loss), 1e-7, "dx");
    check_close(added(dgamma, dgamma0), numeric_gradient(gamma, loss), 1e-7, "dgamma");
    check_close(added(dbeta, dbeta0), numeric_gradient(beta, loss), 1e-7, "dbeta");
    // Undefined gradients are skipped.
    const Tensor dgamma_only = tensor({n}, std::vector<double>(n, 0.0));
    layer_norm_backward(tensor({rows, n}, weights), x, tensor({n}, gamma), mean, rstd, Tensor(), dgamma_only,
                        Tensor());
    check_close(dgamma_only.to_double(), added(dgamma, dgamma0), 1e-15, "dgamma alone");
}

TEST_CASE("rms_norm and its backward: formula, finite differences") {
    const std::size_t rows = 2, n = 6;
    std::vector<double> xs = random_values(rows * n, 50, -2, 2);
    std::vector<double> gamma = random_values(n, 51);
    const std::vector<double> weights = random_values(rows * n, 52);
    const Tensor x = tensor({rows, n}, xs);
    const Tensor y = tensor({rows, n}, std::vector<double>(rows * n, 0.0));
    const Tensor rstd = tensor({rows}, {0, 0});
    rms_norm(x, tensor({n}, gamma), y, rstd, 1e-6);
    std::vector<double> expected(rows * n);
    for (std::size_t r = 0; r < rows; ++r) {
        double ms = 0;
        for (std::size_t j = 0; j < n; ++j) ms += xs[r * n + j] * xs[r * n + j] / n;
        CHECK(rstd.to_double()[r] == doctest::Approx(1 / std::sqrt(ms + 1e-6)).epsilon(1e-14));
        for (std::size_t j = 0; j < n; ++j)
            expected[r * n + j] = xs[r * n + j] / std::sqrt(ms + 1e-6) * gamma[j];
    }
    check_close(y.to_double(), expected, 1e-13, "y");
    auto loss = [&] {
        const Tensor out = tensor({rows, n}, std::vector<double>(rows * n, 0.0));
        rms_norm(tensor({rows, n}, xs), tensor({n}, gamma), out, tensor({rows}, {0, 0}), 1e-6);
        return weighted_sum(out.to_double(), weights);
    };
    const std::vector<double> dx0 = random_values(rows * n, 53);
    const std::vector<double> dgamma0 = random_values(n, 54);
    const Tensor dx = tensor({rows, n}, dx0), dgamma = tensor({n}, dgamma0);
    rms_norm_backward(tensor({rows, n}, weights), x, tensor({n}, gamma), rstd, dx, dgamma);
    check_close(added(dx, dx0), numeric_gradient(xs, loss), 1e-7, "dx");
    check_close(added(dgamma, dgamma0), numeric_gradient(gamma, loss), 1e-7, "dgamma");
}

// ---- embeddings and losses ------------------------------------------------------------------

TEST_CASE("embedding and embedding_backward: rows gathered, gradients summed per row") {
    const std::vector<double> table = random_values(5 * 3, 60);
    const Tensor ids = id_tensor({2, 3}, {4, 0, 4, 2, 2, 4});
    const Tensor out = tensor({2, 3, 3}, std::vector<double>(18, 0.0));
    embedding(ids, tensor({5, 3}, table), out);
    const std::vector<std::int32_t> id_values = ids.to_int();
    std::vector<double> expected(18);
    for (std::size_t t = 0; t < 6; ++t) {
        for (std::size_t d = 0; d < 3; ++d)
            expected[t * 3 + d] = table[static_cast<std::size_t>(id_values[t]) * 3 + d];
    }
    CHECK(out.to_double() == expected);
    // Backward: dtable[id] += dout[t]; rows never looked up keep their values.
    const std::vector<double> dout = random_values(18, 61);
    const std::vector<double> dtable0 = random_values(15, 62);
    const Tensor dtable = tensor({5, 3}, dtable0);
    embedding_backward(ids, tensor({2, 3, 3}, dout), dtable);
    std::vector<double> sums(15, 0.0);
    for (std::size_t t = 0; t < 6; ++t) {
        for (std::size_t d = 0; d < 3; ++d)
            sums[static_cast<std::size_t>(id_values[t]) * 3 + d] += dout[t * 3 + d];
    }
    check_close(added(dtable, dtable0), sums, 1e-15, "dtable");
    // A bad id: nothing is written.
    const Tensor untouched = tensor({1, 3}, {7, 7, 7});
    CHECK_THROWS_AS(embedding(id_tensor({1}, {5}), tensor({5, 3}, table), untouched), Error);
    CHECK(untouched.to_double() == std::vector<double>{7, 7, 7});
}

TEST_CASE("cross_entropy: log-softmax losses, pad rows, dlogits by finite differences, in place") {
    const std::size_t rows = 4, vocabulary = 6;
    std::vector<double> logits = random_values(rows * vocabulary, 70, -3, 3);
    logits[1] = 800;  // large logits stay finite
    const std::vector<std::int32_t> targets = {1, -1, 5, 0};
    const Tensor losses = tensor({rows}, std::vector<double>(rows, 9.0));
    const Tensor dlogits = tensor({rows, vocabulary}, std::vector<double>(rows * vocabulary, 9.0));
    cross_entropy(tensor({rows, vocabulary}, logits), id_tensor({rows}, targets), losses, dlogits, -1, 0.25);
    std::vector<double> expected(rows, 0.0);
    for (std::size_t r = 0; r < rows; ++r) {
        if (targets[r] == -1) continue;
        double max = -inf;
        for (std::size_t j = 0; j < vocabulary; ++j) max = std::max(max, logits[r * vocabulary + j]);
        double sum = 0;
        for (std::size_t j = 0; j < vocabulary; ++j) sum += std::exp(logits[r * vocabulary + j] - max);
        expected[r] = max + std::log(sum) - logits[r * vocabulary + static_cast<std::size_t>(targets[r])];
    }
    check_close(losses.to_double(), expected, 1e-13, "losses");
    auto loss = [&] {
        const Tensor l = tensor({rows}, std::vector<double>(rows, 0.0));
        cross_entropy(tensor({rows, vocabulary}, logits), id_tensor({rows}, targets), l, Tensor());
        const std::vector<double> values = l.to_double();
        return 0.25 * (values[0] + values[1] + values[2] + values[3]);
    };
    const std::vector<double> numeric = numeric_gradient(logits, loss, 1e-5);
    check_close(dlogits.to_double(), numeric, 1e-8, "dlogits");
    for (std::size_t j = 0; j < vocabulary; ++j) CHECK(dlogits.to_double()[vocabulary + j] == 0);  // pad row
    // In place: dlogits = logits.
    const Tensor in_place = tensor({rows, vocabulary}, logits);
    cross_entropy(in_place, id_tensor({rows}, targets), losses, in_place, -1, 0.25);
    check_close(in_place.to_double(), dlogits.to_double(), 1e-15, "dlogits in place");
    check_close(losses.to_double(), expected, 1e-13, "losses in place");
}

// ---- elementwise tapes --------------------------------------------------------------------------

TEST_CASE("elementwise: broadcast inputs, parameters, two outputs, in place") {
    // out0 = x * y + p0 sin(z), out1 = exp(x) - y
    const Tape tape = record(3, 1, [](std::span<const Var> v, std::span<const Var> p) {
        return std::vector<Var>{v[0] * v[1] + p[0] * sin(v[2]), exp(v[0]) - v[1]};
    });
    const std::vector<double> xs = random_values(6, 80);
    const std::vector<double> ys = random_values(3, 81);  // a row [3]
    const std::vector<double> zs = random_values(2, 82);  // a column [2, 1]
    const std::vector<double> params = {0.75};
    const Tensor out0 = tensor({2, 3}, std::vector<double>(6, 0.0));
    const Tensor out1 = tensor({2, 3}, std::vector<double>(6, 0.0));
    elementwise(tape, std::vector<Tensor>{tensor({2, 3}, xs), tensor({3}, ys), tensor({2, 1}, zs)},
                std::vector<Tensor>{out0, out1}, params);
    std::vector<double> expected0(6), expected1(6);
    for (std::size_t r = 0; r < 2; ++r) {
        for (std::size_t c = 0; c < 3; ++c) {
            const double x = xs[r * 3 + c], y = ys[c], z = zs[r];
            expected0[r * 3 + c] = x * y + 0.75 * std::sin(z);
            expected1[r * 3 + c] = std::exp(x) - y;
        }
    }
    check_close(out0.to_double(), expected0, 1e-15, "out0");
    check_close(out1.to_double(), expected1, 1e-15, "out1");
    // In place, and a scalar input.
    const Tensor x = tensor({2, 3}, xs);
    const Tensor scratch = tensor({2, 3}, std::vector<double>(6, 0.0));
    elementwise(tape, std::vector<Tensor>{x, tensor({}, {2.0}), tensor({1}, {0.0})},
                std::vector<Tensor>{x, scratch}, params);
    for (std::size_t i = 0; i < 6; ++i) CHECK(x.to_double()[i] == doctest::Approx(2 * xs[i]).epsilon(1e-15));
}

TEST_CASE("elementwise_backward: finite differences through broadcasting, added, skipped grads") {
    const Tape tape = record(3, 1, [](std::span<const Var> v, std::span<const Var> p) {
        return std::vector<Var>{v[0] * v[1] + p[0] * sin(v[2]), exp(v[0]) - v[1] * v[2]};
    });
    std::vector<double> xs = random_values(6, 90);
    std::vector<double> ys = random_values(3, 91);
    std::vector<double> zs = random_values(2, 92);
    const std::vector<double> params = {0.75};
    const std::vector<double> w0 = random_values(6, 93);
    const std::vector<double> w1 = random_values(6, 94);
    auto loss = [&] {
        const Tensor out0 = tensor({2, 3}, std::vector<double>(6, 0.0));
        const Tensor out1 = tensor({2, 3}, std::vector<double>(6, 0.0));
        elementwise(tape, std::vector<Tensor>{tensor({2, 3}, xs), tensor({3}, ys), tensor({2, 1}, zs)},
                    std::vector<Tensor>{out0, out1}, params);
        return weighted_sum(out0.to_double(), w0) + weighted_sum(out1.to_double(), w1);
    };
    const std::vector<double> dx0 = random_values(6, 95), dy0 = random_values(3, 96),
                              dz0 = random_values(2, 97);
    const Tensor dx = tensor({2, 3}, dx0), dy = tensor({3}, dy0), dz = tensor({2, 1}, dz0);
    const std::vector<Tensor> inputs = {tensor({2, 3}, xs), tensor({3}, ys), tensor({2, 1}, zs)};
    const std::vector<Tensor> output_grads = {tensor({2, 3}, w0), tensor({2, 3}, w1)};
    elementwise_backward(tape, inputs, output_grads, std::vector<Tensor>{dx, dy, dz}, params);
    check_close(added(dx, dx0), numeric_gradient(xs, loss), 1e-8, "dx");
    check_close(added(dy, dy0), numeric_gradient(ys, loss), 1e-8, "dy (row)");
    check_close(added(dz, dz0), numeric_gradient(zs, loss), 1e-8, "dz (column)");
    // Only dy: the others skipped.
    const Tensor dy_only = tensor({3}, {0, 0, 0});
    elementwise_backward(tape, inputs, output_grads, std::vector<Tensor>{Tensor(), dy_only, Tensor()},
                         params);
    check_close(dy_only.to_double(), added(dy, dy0), 1e-15, "dy alone");
}
