// Cases of the row kernels: softmax, layer_norm and rms_norm, forward and backward. Bounds are
// c * (log2(N) + a few) * u_f32 times the row's scale (plus f16/bf16 storage rounding): for
// softmax 1 (the row sums to 1), for the norms the normalised row's magnitude; backward
// outputs scale with the sum of the magnitudes of the terms they add.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "harness.hpp"

namespace tapevm::nn::conformance {
namespace {

struct RowShape {
    std::size_t rows, n;
};

std::vector<RowShape> row_shapes(bool sweep) {
    std::vector<RowShape> shapes = {{7, 65}, {3, 1}, {2, 384}, {0, 16}, {5, 1000}};
    if (sweep) {
        for (const std::size_t n : {7, 16, 63, 64, 127, 129, 385}) shapes.push_back({65, n});
        shapes.push_back({1000, 385});
        shapes.push_back({1, 4096});
    }
    return shapes;
}

std::string rs(const RowShape& s) { return text("[", s.rows, ", ", s.n, "]"); }
double row_depth(std::size_t n) { return static_cast<double>(ceil_log2(n + 1) + 4); }

// Logits of a kind: 0 uniform in [-4, 4); 1 +-1e4 plus noise; 2 with -inf entries and one row of only -inf.
std::vector<double> logits(Context& c, std::size_t rows, std::size_t n, int kind) {
    std::vector<double> x = c.random(rows * n, -4, 4);
    if (kind == 1) {
        const auto signs = c.random(rows * n, -1, 1);
        for (std::size_t i = 0; i < x.size(); ++i)
            x[i] = round_to(c.tested(), (signs[i] < 0 ? -1e4 : 1e4) + x[i]);
    } else if (kind == 2) {
        const double inf = std::numeric_limits<double>::infinity();
        for (std::size_t i = 0; i < x.size(); i += 3) x[i] = -inf;
        for (std::size_t j = 0; j < n && rows > 1; ++j) x[n + j] = -inf;  // row 1: all -inf -> 0
    }
    return x;
}

void add_softmax(std::vector<Case>& cases, bool sweep) {
    for (const RowShape s : row_shapes(sweep)) {
        for (const int kind : {0, 1, 2}) {
            if (kind > 0 && s.rows * s.n > 5000) continue;
            for (const bool in_place : {false, true}) {
                if (in_place && kind > 0) continue;
                const char* kinds[] = {"", " logits +-1e4", " -inf entries, a row of -inf"};
                cases.push_back({KernelId::softmax, rs(s) + kinds[kind] + (in_place ? " in place" : ""),
                                 [s, kind, in_place](Context& c) {
                                     const Tensor x = c.upload({s.rows, s.n}, logits(c, s.rows, s.n, kind));
                                     const Tensor y = in_place ? x : c.empty({s.rows, s.n});
                                     softmax(x, y);
                                     Output out = c.output("y", y);
                                     // exp's error grows with |x - max| (GLSL: 3 + 2|x| ulp): depth 24.
                                     out.scale.assign(out.values.size(), 1.0);
                                     out.depth = row_depth(s.n) + 24;
                                     return std::vector<Output>{out};
                                 }});
            }
        }
        cases.push_back({KernelId::softmax_backward, rs(s), [s](Context& c) {
                             const std::size_t count = s.rows * s.n;
                             auto y = c.random(count, 0.01, 1);
                             for (std::size_t r = 0; r < s.rows; ++r) {  // rows that sum to 1 (about)
                                 double sum = 0;
                                 for (std::size_t j = 0; j < s.n; ++j) sum += y[r * s.n + j];
                                 for (std::size_t j = 0; j < s.n; ++j)
                                     y[r * s.n + j] = round_to(c.tested(), y[r * s.n + j] / sum);
                             }
                             const auto dy = c.random(count, -2, 2);
                             const auto dx0 = c.random(count);
                             const Tensor dx = c.upload({s.rows, s.n}, dx0);
                             softmax_backward(c.upload({s.rows, s.n}, y), c.upload({s.rows, s.n}, dy), dx);
                             Output out = c.output("dx", dx);
                             for (std::size_t r = 0; r < s.rows; ++r) {
                                 double dot = 0;
                                 for (std::size_t j = 0; j < s.n; ++j)
                                     dot += std::fabs(dy[r * s.n + j] * y[r * s.n + j]);
                                 for (std::size_t j = 0; j < s.n; ++j) {
                                     const std::size_t i = r * s.n + j;
                                     out.scale.push_back(std::fabs(y[i]) * (std::fabs(dy[i]) + dot) +
                                                         std::fabs(dx0[i]));
                                 }
                             }
                             out.depth = row_depth(s.n);
                             return std::vector<Output>{out};
                         }});
    }
}

// Row statistics of x in f64: mean and 1/sqrt(var + eps) (layer_norm) or 1/sqrt(mean(x^2) + eps).
void statistics(const std::vector<double>& x, std::size_t rows, std::size_t n, double eps, bool rms,
                std::vector<double>& mean, std::vector<double>& rstd) {
    mean.assign(rows, 0);
    rstd.assign(rows, 0);
    for (std::size_t r = 0; r < rows; ++r) {
        double sum = 0, squares = 0;
        for (std::size_t j = 0; j < n; ++j) sum += x[r * n + j];
        const double m = rms ? 0 : sum / static_cast<double>(n);
        for (std::size_t j = 0; j < n; ++j) squares += (x[r * n + j] - m) * (x[r * n + j] - m);
        mean[r] = m;
        rstd[r] = 1 / std::sqrt(squares / static_cast<double>(n) + eps);
    }
}

double row_max_abs(const std::vector<double>& x, std::size_t r, std::size_t n) {
    double m = 0;
    for (std::size_t j = 0; j < n; ++j) m = std::max(m, std::fabs(x[r * n + j]));
    return m;
}

void add_norms(std::vector<Case>& cases, bool sweep) {
    for (const RowShape s : row_shapes(sweep)) {
        for (const int variant : {0, 1, 2}) {  // 0: with beta, 1: no beta, 2: in place
            const char* names[] = {"", " no beta", " in place"};
            cases.push_back({KernelId::layer_norm, rs(s) + names[variant], [s, variant](Context& c) {
                                 const std::size_t count = s.rows * s.n;
                                 const auto x = c.random(count, -1.5, 2.5);
                                 const auto gamma = c.random(s.n, 0.5, 1.5);
                                 const auto beta = c.random(s.n);
                                 const Tensor xt = c.upload({s.rows, s.n}, x);
                                 const Tensor y = variant == 2 ? xt : c.empty({s.rows, s.n});
                                 const Tensor mean = c.empty_stats({s.rows}), rstd = c.empty_stats({s.rows});
                                 layer_norm(xt, c.upload({s.n}, gamma),
                                            variant == 1 ? Tensor() : c.upload({s.n}, beta), y, mean, rstd,
                                            1e-5);
                                 std::vector<Output> outs = {c.output("y", y), c.output("mean", mean),
                                                             c.output("rstd", rstd)};
                                 std::vector<double> m, r;
                                 statistics(x, s.rows, s.n, 1e-5, false, m, r);
                                 for (std::size_t row = 0; row < s.rows; ++row) {
                                     const double big = row_max_abs(x, row, s.n);
                                     for (std::size_t j = 0; j < s.n; ++j)
                                         outs[0].scale.push_back(big * r[row] * std::fabs(gamma[j]) +
                                                                 (variant == 1 ? 0 : std::fabs(beta[j])));
                                     outs[1].scale.push_back(big);
                                     outs[2].scale.push_back(r[row] * (1 + big * big * r[row] * r[row]));
                                 }
                                 for (Output& out : outs) out.depth = row_depth(s.n) + 4;
                                 return outs;
                             }});
        }
        for (const bool in_place : {false, true}) {
            cases.push_back(
                {KernelId::rms_norm, rs(s) + (in_place ? " in place" : ""), [s, in_place](Context& c) {
                     const std::size_t count = s.rows * s.n;
                     const auto x = c.random(count, -1.5, 2.5);
                     const auto gamma = c.random(s.n, 0.5, 1.5);
                     const Tensor xt = c.upload({s.rows, s.n}, x);
                     const Tensor y = in_place ? xt : c.empty({s.rows, s.n});
                     const Tensor rstd = c.empty_stats({s.rows});
                     rms_norm(xt, c.upload({s.n}, gamma), y, rstd, 1e-6);
                     std::vector<Output> outs = {c.output("y", y), c.output("rstd", rstd)};
                     std::vector<double> m, r;
                     statistics(x, s.rows, s.n, 1e-6, true, m, r);
                     for (std::size_t row = 0; row < s.rows; ++row) {
                         const double big = row_max_abs(x, row, s.n);
                         for (std::size_t j = 0; j < s.n; ++j)
                             outs[0].scale.push_back(big * r[row] * std::fabs(gamma[j]));
                         outs[1].scale.push_back(r[row] * (1 + big * big * r[row] * r[row]));
                     }
                     for (Output& out : outs) out.depth = row_depth(s.n) + 4;
                     return outs;
                 }});
        }
        // Backward: statistics from the rounded x in f64, rounded to f32 as a device saves them.
        for (const int variant : {0, 1, 2}) {  // 0: dx, dgamma, dbeta; 1: no dbeta; 2: dx only
            const char* names[] = {"", " no dbeta", " dx only"};
            cases.push_back({KernelId::layer_norm_backward, rs(s) + names[variant], [s, variant](Context& c) {
                                 const std::size_t count = s.rows * s.n;
                                 const auto x = c.random(count, -1.5, 2.5);
                                 const auto gamma = c.random(s.n, 0.5, 1.5);
                                 const auto dy = c.random(count);
                                 const auto dx0 = c.random(count), dg0 = c.random(s.n), db0 = c.random(s.n);
                                 std::vector<double> m, r;
                                 statistics(x, s.rows, s.n, 1e-5, false, m, r);
                                 for (double& v : m) v = round_to(DType::f32, v);
                                 for (double& v : r) v = round_to(DType::f32, v);
                                 const Tensor dx = c.upload({s.rows, s.n}, dx0);
                                 const Tensor dgamma = variant == 2 ? Tensor() : c.upload({s.n}, dg0);
                                 const Tensor dbeta = variant == 0 ? c.upload({s.n}, db0) : Tensor();
                                 layer_norm_backward(c.upload({s.rows, s.n}, dy), c.upload({s.rows, s.n}, x),
                                                     c.upload({s.n}, gamma), c.upload_stats({s.rows}, m),
                                                     c.upload_stats({s.rows}, r), dx, dgamma, dbeta);
                                 std::vector<Output> outs = {c.output("dx", dx)};
                                 if (dgamma) outs.push_back(c.output("dgamma", dgamma));
                                 if (dbeta) outs.push_back(c.output("dbeta", dbeta));
                                 std::vector<double> g_scale(s.n, 0), b_scale(s.n, 0);
                                 for (std::size_t row = 0; row < s.rows; ++row) {
                                     const double big =
                                         row_max_abs(x, row, s.n) * r[row] + std::fabs(m[row]) * r[row];
                                     double gdy = 0;
                                     for (std::size_t j = 0; j < s.n; ++j)
                                         gdy = std::max(gdy, std::fabs(gamma[j] * dy[row * s.n + j]));
                                     for (std::size_t j = 0; j < s.n; ++j) {
                                         const std::size_t i = row * s.n + j;
                                         outs[0].scale.push_back(r[row] * gdy * (1 + big) * (1 + big) * 2 +
                                                                 std::fabs(dx0[i]));
                                         g_scale[j] += std::fabs(dy[i]) * (big + 1);
                                         b_scale[j] += std::fabs(dy[i]);
                                     }
                                 }
                                 for (std::size_t j = 0; j < s.n; ++j) {
                                     g_scale[j] += std::fabs(dg0[j]);
                                     b_scale[j] += std::fabs(db0[j]);
                                 }
                                 outs[0].depth = row_depth(s.n) + 4;
                                 if (dgamma) {
                                     outs[1].scale = g_scale;
                                     outs[1].depth = row_depth(s.n) + row_depth(s.rows) + 4;
                                 }
                                 if (dbeta) {
                                     outs[2].scale = b_scale;
                                     outs[2].depth = row_depth(s.rows) + 2;
                                 }
                                 return outs;
                             }});
        }
        for (const bool with_dgamma : {true, false}) {
            cases.push_back({KernelId::rms_norm_backward, rs(s) + (with_dgamma ? "" : " dx only"),
                             [s, with_dgamma](Context& c) {
                                 const std::size_t count = s.rows * s.n;
                                 const auto x = c.random(count, -1.5, 2.5);
                                 const auto gamma = c.random(s.n, 0.5, 1.5);
                                 const auto dy = c.random(count);
                                 const auto dx0 = c.random(count), dg0 = c.random(s.n);
                                 std::vector<double> m, r;
                                 statistics(x, s.rows, s.n, 1e-6, true, m, r);
                                 for (double& v : r) v = round_to(DType::f32, v);
                                 const Tensor dx = c.upload({s.rows, s.n}, dx0);
                                 const Tensor dgamma = with_dgamma ? c.upload({s.n}, dg0) : Tensor();
                                 rms_norm_backward(c.upload({s.rows, s.n}, dy), c.upload({s.rows, s.n}, x),
                                                   c.upload({s.n}, gamma), c.upload_stats({s.rows}, r), dx,
                                                   dgamma);
                                 std::vector<Output> outs = {c.output("dx", dx)};
                                 if (dgamma) outs.push_back(c.output("dgamma", dgamma));
                                 std::vector<double> g_scale(dg0.size());
                                 for (std::size_t j = 0; j < s.n; ++j) g_scale[j] = std::fabs(dg0[j]);
                                 for (std::size_t row = 0; row < s.rows; ++row) {
                                     const double big = row_max_abs(x, row, s.n) * r[row];
                                     double gdy = 0;
                                     for (std::size_t j = 0; j < s.n; ++j)
                                         gdy = std::max(gdy, std::fabs(gamma[j] * dy[row * s.n + j]));
                                     for (std::size_t j = 0; j < s.n; ++j) {
                                         const std::size_t i = row * s.n + j;
                                         outs[0].scale.push_back(r[row] * gdy * (1 + big) * (1 + big) * 2 +
                                                                 std::fabs(dx0[i]));
                                         g_scale[j] += std::fabs(dy[i]) * big;
                                     }
                                 }
                                 outs[0].depth = row_depth(s.n) + 4;
                                 if (dgamma) {
                                     outs[1].scale = g_scale;
                                     outs[1].depth = row_depth(s.n) + row_depth(s.rows) + 4;
                                 }
                                 return outs;
                             }});
        }
    }
}

}  // namespace

void add_row_cases(std::vector<Case>& cases, bool sweep) {
    add_softmax(cases, sweep);
    add_norms(cases, sweep);
}

}  // namespace tapevm::nn::conformance
