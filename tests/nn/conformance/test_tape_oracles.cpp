// The reference device's backward kernels against tapevm itself: each row function (softmax,
// layer_norm, rms_norm, a cross-entropy row, attention with T <= 16 and head_dim <= 8, matmul
// up to 8x8x8) is recorded as a tape with tapevm::record; the reference VM's f64 forward and
// vjp are the exact forward and backward. The same kernels are also checked against central
// finite differences of the reference device's forward kernel. Every other device is then
// compared with the reference device by the table (test_conformance.cpp).
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "harness.hpp"
#include "tapevm/reference.hpp"
#include "tapevm/var.hpp"

namespace tapevm::nn::conformance {
namespace {

using Host = std::vector<double>;
using V = tapevm::Var;

/// A function of several host arrays, computed by the reference device's kernels, with its
/// backward by the reference device's backward kernels, and the same function as a tape over
/// the concatenated arrays.
struct Problem {
    std::string name;
    std::vector<Host> inputs;
    std::function<Host(const std::vector<Host>&)> forward;
    /// Gradients of dot(cotangent, forward) with respect to each input (kernels add into zeros).
    std::function<std::vector<Host>(const std::vector<Host>&, const Host&)> backward;
    Tape tape;
    /// Inputs whose gradient the kernels do not give (integer-like or constant): not compared.
    std::vector<bool> differentiable;
};

Tensor up(const Host& values, Shape shape) {
    return Device::reference().upload(std::move(shape), std::span<const double>(values), DType::f64);
}
Tensor zeros(Shape shape) { return Device::reference().zeros(std::move(shape), DType::f64); }

double max_abs(const Host& values) {
    double m = 0;
    for (const double v : values) m = std::max(m, std::fabs(v));
    return m;
}

void check_problem(const Problem& p) {
    INFO(p.name);
    Host flat;
    for (const Host& input : p.inputs) flat.insert(flat.end(), input.begin(), input.end());
    const tapevm::reference::Vm vm(p.tape);
    const Batch<double> batch{1, flat, {}};
    const Host tape_values = vm.forward(batch).values;
    const Host values = p.forward(p.inputs);
    REQUIRE(values.size() == tape_values.size());
    const double value_scale = max_abs(tape_values) + 1;
    for (std::size_t i = 0; i < values.size(); ++i)
        CHECK(std::fabs(values[i] - tape_values[i]) <= 1e-12 * value_scale);

    Host cotangent(values.size());
    for (std::size_t i = 0; i < cotangent.size(); ++i)
        cotangent[i] = std::sin(1.7 * static_cast<double>(i) + 0.3);
    const Host tape_grads = vm.vjp(batch, std::span<const double>(cotangent)).values;
    const std::vector<Host> grads = p.backward(p.inputs, cotangent);
    REQUIRE(grads.size() == p.inputs.size());
    const double grad_scale = max_abs(tape_grads) + 1;
    std::size_t offset = 0;
    for (std::size_t a = 0; a < p.inputs.size(); ++a) {
        if (p.differentiable[a]) {
            REQUIRE(grads[a].size() == p.inputs[a].size());
            for (std::size_t i = 0; i < grads[a].size(); ++i) {
                INFO("input ", a, " element ", i);
                CHECK(std::fabs(grads[a][i] - tape_grads[offset + i]) <= 1e-11 * grad_scale);
                // Central differences of dot(cotangent, forward) on the reference device.
                std::vector<Host> plus = p.inputs, minus = p.inputs;
                const double h = 1e-6 * std::max(1.0, std::fabs(p.inputs[a][i]));
                plus[a][i] += h;
                minus[a][i] -= h;
                const Host fp = p.forward(plus), fm = p.forward(minus);
                double difference = 0;
                for (std::size_t j = 0; j < fp.size(); ++j) difference += cotangent[j] * (fp[j] - fm[j]);
                CHECK(std::fabs(difference / (2 * h) - grads[a][i]) <= 1e-6 * grad_scale);
            }
        }
        offset += p.inputs[a].size();
    }
}

Host seeded(std::size_t n, double lo, double hi, unsigned seed) {
    Host values(n);
    for (std::size_t i = 0; i < n; ++i) {
        const double unit =
            std::fmod(std::sin(static_cast<double>(i * 7 + seed) * 12.9898) * 43758.5453, 1.0);
        values[i] = lo + (hi - lo) * std::fabs(unit);
    }
    return values;
}

V sum_of(const std::vector<V>& values) {
    V total = 0.0;
    for (const V& v : values) total = total + v;
    return total;
}

}  // namespace

TEST_CASE("tape oracle: softmax and softmax_backward") {
    const std::size_t rows = 2, n = 7;
    Problem p;
    p.name = "softmax [2, 7]";
    p.inputs = {seeded(rows * n, -3, 3, 1)};
    p.differentiable = {true};
    p.forward = [=](const std::vector<Host>& in) {
        const Tensor y = zeros({rows, n});
        softmax(up(in[0], {rows, n}), y);
        return y.to_double();
    };
    p.backward = [=](const std::vector<Host>& in, const Host& dy) {
        const Tensor y = zeros({rows, n}), dx = zeros({rows, n});
        softmax(up(in[0], {rows, n}), y);
        softmax_backward(y, up(dy, {rows, n}), dx);
        return std::vector<Host>{dx.to_double()};
    };
    p.tape = tapevm::record(rows * n, [=](std::span<const V> x) {
        std::vector<V> out;
        for (std::size_t r = 0; r < rows; ++r) {
            std::vector<V> e;
            for (std::size_t j = 0; j < n; ++j) e.push_back(exp(x[r * n + j]));
            const V total = sum_of(e);
            for (const V& v : e) out.push_back(v / total);
        }
        return out;
    });
    check_problem(p);
}

TEST_CASE("tape oracle: layer_norm and layer_norm_backward") {
    const std::size_t rows = 3, n = 6;
    const double eps = 1e-5;
    Problem p;
    p.name = "layer_norm [3, 6]";
    p.inputs = {seeded(rows * n, -2, 2, 2), seeded(n, 0.5, 1.5, 3), seeded(n, -1, 1, 4)};
    p.differentiable = {true, true, true};
    p.forward = [=](const std::vector<Host>& in) {
        const Tensor y = zeros({rows, n}), mean = zeros({rows}), rstd = zeros({rows});
        layer_norm(up(in[0], {rows, n}), up(in[1], {n}), up(in[2], {n}), y, mean, rstd, eps);
        return y.to_double();
    };
    p.backward = [=](const std::vector<Host>& in, const Host& dy) {
        const Tensor x = up(in[0], {rows, n}), gamma = up(in[1], {n});
        const Tensor y = zeros({rows, n}), mean = zeros({rows}), rstd = zeros({rows});
        layer_norm(x, gamma, up(in[2], {n}), y, mean, rstd, eps);
        const Tensor dx = zeros({rows, n}), dgamma = zeros({n}), dbeta = zeros({n});
        layer_norm_backward(up(dy, {rows, n}), x, gamma, mean, rstd, dx, dgamma, dbeta);
        return std::vector<Host>{dx.to_double(), dgamma.to_double(), dbeta.to_double()};
    };
    p.tape = tapevm::record(rows * n + 2 * n, [=](std::span<const V> in) {
        std::vector<V> out;
        for (std::size_t r = 0; r < rows; ++r) {
            std::vector<V> row(in.begin() + static_cast<std::ptrdiff_t>(r * n),
                               in.begin() + static_cast<std::ptrdiff_t>((r + 1) * n));
            const V mean = sum_of(row) / static_cast<double>(n);
            std::vector<V> squares;
            for (const V& v : row) squares.push_back((v - mean) * (v - mean));
            const V rstd = 1.0 / sqrt(sum_of(squares) / static_cast<double>(n) + eps);
            for (std::size_t j = 0; j < n; ++j)
                out.push_back((row[j] - mean) * rstd * in[rows * n + j] + in[rows * n + n + j]);
        }
        return out;
    });
    check_problem(p);
}

TEST_CASE("tape oracle: rms_norm and rms_norm_backward") {
    const std::size_t rows = 3, n = 5;
    const double eps = 1e-6;
    Problem p;
    p.name = "rms_norm [3, 5]";
    p.inputs = {seeded(rows * n, -2, 2, 5), seeded(n, 0.5, 1.5, 6)};
    p.differentiable = {true, true};
    p.forward = [=](const std::vector<Host>& in) {
        const Tensor y = zeros({rows, n}), rstd = zeros({rows});
        rms_norm(up(in[0], {rows, n}), up(in[1], {n}), y, rstd, eps);
        return y.to_double();
    };
    p.backward = [=](const std::vector<Host>& in, const Host& dy) {
        const Tensor x = up(in[0], {rows, n}), gamma = up(in[1], {n});
        const Tensor y = zeros({rows, n}), rstd = zeros({rows});
        rms_norm(x, gamma, y, rstd, eps);
        const Tensor dx = zeros({rows, n}), dgamma = zeros({n});
        rms_norm_backward(up(dy, {rows, n}), x, gamma, rstd, dx, dgamma);
        return std::vector<Host>{dx.to_double(), dgamma.to_double()};
    };
    p.tape = tapevm::record(rows * n + n, [=](std::span<const V> in) {
        std::vector<V> out;
        for (std::size_t r = 0; r < rows; ++r) {
            std::vector<V> squares;
            for (std::size_t j = 0; j < n; ++j) squares.push_back(in[r * n + j] * in[r * n + j]);
            const V rstd = 1.0 / sqrt(sum_of(squares) / static_cast<double>(n) + eps);
            for (std::size_t j = 0; j < n; ++j) out.push_back(in[r * n + j] * rstd * in[rows * n + j]);
        }
        return out;
    });
    check_problem(p);
}

TEST_CASE("tape oracle: cross_entropy rows (losses and dlogits, a pad row)") {
    const std::size_t rows = 3, v = 6;
    const std::vector<std::int32_t> targets = {2, -1, 5};  // row 1 is a pad row (pad_id -1)
    Problem p;
    p.name = "cross_entropy [3, 6]";
    p.inputs = {seeded(rows * v, -3, 3, 7)};
    p.differentiable = {true};
    const Device ref = Device::reference();
    const auto ids = [=] { return ref.upload({rows}, std::span<const std::int32_t>(targets)); };
    p.forward = [=](const std::vector<Host>& in) {
        const Tensor losses = zeros({rows});
        cross_entropy(up(in[0], {rows, v}), ids(), losses, Tensor(), -1, 1);
        return losses.to_double();
    };
    // dlogits is written as (softmax - onehot) * dloss with one dloss for every row: the
    // cotangent of row r must then be one value, so the backward sums one row at a time.
    p.backward = [=](const std::vector<Host>& in, const Host& dloss) {
        Host total(rows * v, 0);
        for (std::size_t r = 0; r < rows; ++r) {
            const Tensor losses = zeros({rows}), dlogits = zeros({rows, v});
            cross_entropy(up(in[0], {rows, v}), ids(), losses, dlogits, -1, dloss[r]);
            const Host d = dlogits.to_double();
            for (std::size_t j = 0; j < v; ++j) total[r * v + j] = d[r * v + j];
        }
        return std::vector<Host>{total};
    };
    p.tape = tapevm::record(rows * v, [=](std::span<const V> x) {
        std::vector<V> losses;
        for (std::size_t r = 0; r < rows; ++r) {
            if (targets[r] < 0) {
                losses.push_back(V(0.0) * x[r * v]);
                continue;
            }
            std::vector<V> e;
            for (std::size_t j = 0; j < v; ++j) e.push_back(exp(x[r * v + j]));
            losses.push_back(log(sum_of(e)) - x[r * v + static_cast<std::size_t>(targets[r])]);
        }
        return losses;
    });
    check_problem(p);
}

TEST_CASE("tape oracle: causal GQA attention and attention_backward (T 5, Hq 2, Hkv 1, D 4)") {
    for (const bool causal : {true, false}) {
        const std::size_t t = 5, hq = 2, hkv = 1, d = 4;
        const double scale = 0.5;
        Problem p;
        p.name = causal ? "attention causal" : "attention full";
        p.inputs = {seeded(t * hq * d, -1, 1, 8), seeded(t * hkv * d, -1, 1, 9),
                    seeded(t * hkv * d, -1, 1, 10)};
        p.differentiable = {true, true, true};
        const Shape qs = {1, t, hq, d}, ks = {1, t, hkv, d};
        p.forward = [=](const std::vector<Host>& in) {
            const Tensor out = zeros(qs), lse = zeros({1, hq, t});
            attention(up(in[0], qs), up(in[1], ks), up(in[2], ks), out, lse, {scale, causal});
            return out.to_double();
        };
        p.backward = [=](const std::vector<Host>& in, const Host& dout) {
            const Tensor q = up(in[0], qs), k = up(in[1], ks), v = up(in[2], ks);
            const Tensor out = zeros(qs), lse = zeros({1, hq, t});
            attention(q, k, v, out, lse, {scale, causal});
            const Tensor dq = zeros(qs), dk = zeros(ks), dv = zeros(ks);
            attention_backward(q, k, v, out, lse, up(dout, qs), dq, dk, dv, {scale, causal});
            return std::vector<Host>{dq.to_double(), dk.to_double(), dv.to_double()};
        };
        p.tape = tapevm::record(t * hq * d + 2 * t * hkv * d, [=](std::span<const V> in) {
            const auto q = [&](std::size_t i, std::size_t h, std::size_t e) {
                return in[(i * hq + h) * d + e];
            };
            const auto k = [&](std::size_t j, std::size_t h, std::size_t e) {
                return in[t * hq * d + (j * hkv + h) * d + e];
            };
            const auto v = [&](std::size_t j, std::size_t h, std::size_t e) {
                return in[t * hq * d + t * hkv * d + (j * hkv + h) * d + e];
            };
            std::vector<V> out(t * hq * d, V(0.0));
            for (std::size_t i = 0; i < t; ++i)
                for (std::size_t h = 0; h < hq; ++h) {
                    const std::size_t kv = h / (hq / hkv);
                    const std::size_t visible = causal ? i + 1 : t;
                    std::vector<V> e;
                    for (std::size_t j = 0; j < visible; ++j) {
                        V dot = 0.0;
                        for (std::size_t c = 0; c < d; ++c) dot = dot + q(i, h, c) * k(j, kv, c);
                        e.push_back(exp(dot * scale));
                    }
                    const V total = sum_of(e);
                    for (std::size_t c = 0; c < d; ++c) {
                        V acc = 0.0;
                        for (std::size_t j = 0; j < visible; ++j) acc = acc + e[j] * v(j, kv, c);
                        out[(i * hq + h) * d + c] = acc / total;
                    }
                }
            return out;
        });
        check_problem(p);
    }
}

TEST_CASE("tape oracle: matmul's backward as matmuls (dA = dC B^T, dB = A^T dC), 8x5x7") {
    const std::size_t m = 8, k = 5, n = 7;
    Problem p;
    p.name = "matmul 8x5x7";
    p.inputs = {seeded(m * k, -1, 1, 11), seeded(k * n, -1, 1, 12)};
    p.differentiable = {true, true};
    p.forward = [=](const std::vector<Host>& in) {
        const Tensor c = zeros({m, n});
        matmul(up(in[0], {m, k}), up(in[1], {k, n}), c);
        return c.to_double();
    };
    p.backward = [=](const std::vector<Host>& in, const Host& dc) {
        const Tensor da = zeros({m, k}), db = zeros({k, n}), dct = up(dc, {m, n});
        matmul(dct, up(in[1], {k, n}), da, {false, true, 1, 1});  // NT, accumulating
        matmul(up(in[0], {m, k}), dct, db, {true, false, 1, 1});  // TN
        return std::vector<Host>{da.to_double(), db.to_double()};
    };
    p.tape = tapevm::record(m * k + k * n, [=](std::span<const V> in) {
        std::vector<V> out;
        for (std::size_t i = 0; i < m; ++i)
            for (std::size_t j = 0; j < n; ++j) {
                V acc = 0.0;
                for (std::size_t l = 0; l < k; ++l) acc = acc + in[i * k + l] * in[m * k + l * n + j];
                out.push_back(acc);
            }
        return out;
    });
    check_problem(p);
}

}  // namespace tapevm::nn::conformance
