// ADBench's GMM objective (tapevm/gmm.hpp): the tapes, the instance generator and the
// hand-written f64 objective and gradient.
#include <algorithm>
#include <cmath>
#include <numbers>
#include <thread>

#include "split_mix64.hpp"
#include "tapevm/error.hpp"
#include "tapevm/gmm.hpp"
#include "tapevm/var.hpp"

namespace tapevm::examples {

namespace {

// -n d/2 log(2 pi) - K (n' d (log gamma - log(2)/2) - log Gamma_d(n'/2)), n' = d + m + 1.
double gmm_constant(std::size_t d, std::size_t k, std::size_t n, double gamma, int m) {
    const double dd = static_cast<double>(d);
    const double nn = dd + m + 1;
    double log_gamma_d = 0.25 * dd * (dd - 1) * std::log(std::numbers::pi);
    for (std::size_t j = 1; j <= d; ++j)
        log_gamma_d += std::lgamma(0.5 * nn + 0.5 * (1.0 - static_cast<double>(j)));
    const double c = nn * dd * (std::log(gamma) - 0.5 * std::numbers::ln2) - log_gamma_d;
    return -static_cast<double>(n) * dd * 0.5 * std::log(2 * std::numbers::pi) - static_cast<double>(k) * c;
}

double max(double a, double b) { return std::max(a, b); }
using std::exp;
using std::log;

// max(v) + log(sum exp(v - max(v))), one operation per statement.
template <class T> T logsumexp(const std::vector<T>& v) {
    T top = v[0];
    for (std::size_t i = 1; i < v.size(); ++i) top = max(top, v[i]);
    T sum = exp(v[0] - top);
    for (std::size_t i = 1; i < v.size(); ++i) {
        const T shifted = v[i] - top;
        const T term = exp(shifted);
        sum = sum + term;
    }
    const T log_sum = log(sum);
    return top + log_sum;
}

void check_sizes(std::size_t d, std::size_t k) {
    if (d == 0 || k == 0) throw Error("gmm: d and K must be at least 1");
}

// Each block of points' contribution, summed in block order: the same bits on any thread count.
constexpr std::size_t block_points = 64;

template <class Block>
std::vector<double> sum_blocks(std::size_t n, std::size_t width, unsigned threads, Block&& block) {
    const std::size_t blocks = (n + block_points - 1) / block_points;
    std::vector<std::vector<double>> partial(blocks);
    const unsigned workers =
        std::max(1u, std::min<unsigned>(threads == 0 ? std::thread::hardware_concurrency() : threads,
                                        static_cast<unsigned>(std::max<std::size_t>(blocks, 1))));
    auto work = [&](unsigned worker) {
        for (std::size_t b = worker; b < blocks; b += workers) {
            partial[b].assign(width, 0.0);
            block(b * block_points, std::min(n, (b + 1) * block_points), partial[b]);
        }
    };
    std::vector<std::thread> pool;
    for (unsigned w = 1; w < workers; ++w) pool.emplace_back(work, w);
    work(0);
    for (std::thread& t : pool) t.join();
    std::vector<double> total(width, 0.0);
    for (const auto& p : partial) {
        for (std::size_t j = 0; j < width; ++j) total[j] += p[j];
    }
    return total;
}

// Per component: exp of the log-diagonal and the sum of the log-diagonal.
struct Components {
    std::vector<double> exp_q, sum_q;
};
Components components(const GmmInstance& g) {
    Components c{std::vector<double>(g.k * g.d), std::vector<double>(g.k, 0.0)};
    for (std::size_t k = 0; k < g.k; ++k) {
        for (std::size_t j = 0; j < g.d; ++j) {
            const double q = g.icf[k * g.icf_size() + j];
            c.exp_q[k * g.d + j] = std::exp(q);
            c.sum_q[k] += q;
        }
    }
    return c;
}

// y = Q_k (x - mu_k) and z = x - mu_k; returns alpha_k + sum q - |y|^2 / 2.
double component_term(const GmmInstance& g, const Components& c, std::size_t k, const double* x, double* z,
                      double* y) {
    const double* mu = g.means.data() + k * g.d;
    const double* lower = g.icf.data() + k * g.icf_size() + g.d;
    for (std::size_t j = 0; j < g.d; ++j) {
        z[j] = x[j] - mu[j];
        y[j] = c.exp_q[k * g.d + j] * z[j];
    }
    std::size_t index = 0;
    for (std::size_t i = 0; i < g.d; ++i) {
        for (std::size_t j = i + 1; j < g.d; ++j) y[j] += lower[index++] * z[i];
    }
    double square = 0;
    for (std::size_t j = 0; j < g.d; ++j) square += y[j] * y[j];
    return g.alphas[k] + c.sum_q[k] - 0.5 * square;
}

double alphas_logsumexp(const GmmInstance& g) { return logsumexp(g.alphas); }

}  // namespace

std::vector<double> GmmInstance::theta() const {
    std::vector<double> theta = alphas;
    theta.insert(theta.end(), means.begin(), means.end());
    theta.insert(theta.end(), icf.begin(), icf.end());
    return theta;
}

GmmInstance gmm_instance(std::size_t d, std::size_t k, std::size_t n, std::uint64_t seed) {
    check_sizes(d, k);
    if (n == 0) throw Error("gmm: n must be at least 1");
    support::SplitMix64 random(seed);
    GmmInstance g;
    g.d = d;
    g.k = k;
    g.n = n;
    g.alphas.resize(k);
    for (double& a : g.alphas) a = random.normal();
    g.means.resize(k * d);
    for (double& mu : g.means) mu = random.uniform();
    g.icf.resize(k * g.icf_size());
    for (double& q : g.icf) q = random.normal();
    g.x.resize(n * d);
    for (double& x : g.x) x = random.normal();
    return g;
}

Tape gmm_point_tape(std::size_t d, std::size_t k) {
    check_sizes(d, k);
    const GmmInstance at = gmm_instance(d, k, 1, 1);
    const std::size_t icf_size = at.icf_size();
    return record(std::span<const double>(at.x), std::span<const double>(at.theta()),
                  [d, k, icf_size](std::span<const Var> x, std::span<const Var> theta) {
                      const Var* alphas = theta.data();
                      const Var* means = alphas + k;
                      const Var* icf = means + k * d;
                      std::vector<Var> terms, z(d), y(d);
                      for (std::size_t c = 0; c < k; ++c) {
                          const Var* q = icf + c * icf_size;
                          Var sum_q = q[0];
                          for (std::size_t j = 1; j < d; ++j) sum_q = sum_q + q[j];
                          for (std::size_t j = 0; j < d; ++j) {
                              z[j] = x[j] - means[c * d + j];
                              const Var diagonal = exp(q[j]);
                              y[j] = diagonal * z[j];
                          }
                          std::size_t index = d;
                          for (std::size_t i = 0; i < d; ++i) {
                              for (std::size_t j = i + 1; j < d; ++j) {
                                  const Var product = q[index++] * z[i];
                                  y[j] = y[j] + product;
                              }
                          }
                          Var square = y[0] * y[0];
                          for (std::size_t j = 1; j < d; ++j) {
                              const Var s = y[j] * y[j];
                              square = square + s;
                          }
                          const Var weight = alphas[c] + sum_q;
                          const Var half = 0.5 * square;
                          terms.push_back(weight - half);
                      }
                      return std::vector<Var>{logsumexp(terms)};
                  });
}

Tape gmm_prior_tape(std::size_t d, std::size_t k, std::size_t n, double gamma, int m) {
    check_sizes(d, k);
    const GmmInstance at = gmm_instance(d, k, 1, 1);
    const std::size_t icf_size = at.icf_size();
    const double constant = gmm_constant(d, k, n, gamma, m);
    return record(at.theta(), [=](std::span<const Var> theta) {
        const std::vector<Var> alphas(theta.begin(), theta.begin() + static_cast<std::ptrdiff_t>(k));
        const Var* icf = theta.data() + k + k * d;
        const Var lse = logsumexp(alphas);
        Var total = constant - static_cast<double>(n) * lse;
        for (std::size_t c = 0; c < k; ++c) {
            const Var* q = icf + c * icf_size;
            Var frobenius = exp(q[0]) * exp(q[0]);
            Var sum_q = q[0];
            for (std::size_t j = 1; j < d; ++j) {
                const Var e = exp(q[j]);
                const Var e2 = e * e;
                frobenius = frobenius + e2;
                sum_q = sum_q + q[j];
            }
            for (std::size_t j = d; j < icf_size; ++j) {
                const Var l2 = q[j] * q[j];
                frobenius = frobenius + l2;
            }
            const Var scaled = 0.5 * gamma * gamma * frobenius;
            const Var term = scaled - static_cast<double>(m) * sum_q;
            total = total + term;
        }
        return std::vector<Var>{total};
    });
}

double gmm_objective(const GmmInstance& g, unsigned threads) {
    const Components c = components(g);
    const std::vector<double> sum =
        sum_blocks(g.n, 1, threads, [&](std::size_t first, std::size_t last, std::vector<double>& out) {
            std::vector<double> z(g.d), y(g.d), beta(g.k);
            for (std::size_t i = first; i < last; ++i) {
                for (std::size_t k = 0; k < g.k; ++k)
                    beta[k] = component_term(g, c, k, g.x.data() + i * g.d, z.data(), y.data());
                out[0] += logsumexp(beta);
            }
        });
    double prior = 0;
    for (std::size_t k = 0; k < g.k; ++k) {
        double frobenius = 0;
        for (std::size_t j = 0; j < g.d; ++j) frobenius += c.exp_q[k * g.d + j] * c.exp_q[k * g.d + j];
        for (std::size_t j = g.d; j < g.icf_size(); ++j)
            frobenius += g.icf[k * g.icf_size() + j] * g.icf[k * g.icf_size() + j];
        prior += 0.5 * g.gamma * g.gamma * frobenius - g.m * c.sum_q[k];
    }
    return gmm_constant(g.d, g.k, g.n, g.gamma, g.m) + sum[0] -
           static_cast<double>(g.n) * alphas_logsumexp(g) + prior;
}

std::vector<double> gmm_gradient(const GmmInstance& g, unsigned threads) {
    const Components c = components(g);
    const std::size_t d = g.d, icf_size = g.icf_size(), means_at = g.k, icf_at = g.k + g.k * d;
    const std::size_t width = icf_at + g.k * icf_size;
    std::vector<double> gradient =
        sum_blocks(g.n, width, threads, [&](std::size_t first, std::size_t last, std::vector<double>& out) {
            std::vector<double> z(g.k * d), y(g.k * d), beta(g.k);
            for (std::size_t i = first; i < last; ++i) {
                for (std::size_t k = 0; k < g.k; ++k)
                    beta[k] = component_term(g, c, k, g.x.data() + i * d, z.data() + k * d, y.data() + k * d);
                const double top = *std::max_element(beta.begin(), beta.end());
                double sum = 0;
                for (std::size_t k = 0; k < g.k; ++k) sum += std::exp(beta[k] - top);
                for (std::size_t k = 0; k < g.k; ++k) {
                    const double r = std::exp(beta[k] - top) / sum;  // d lse / d beta_k
                    const double* zk = z.data() + k * d;
                    const double* yk = y.data() + k * d;
                    const double* lower = g.icf.data() + k * icf_size + d;
                    double* g_mu = out.data() + means_at + k * d;
                    double* g_q = out.data() + icf_at + k * icf_size;
                    out[k] += r;
                    // beta = alpha + sum q - |y|^2 / 2, y = Q z, z = x - mu: dbeta/dmu = Q^T y,
                    // dbeta/dq_j = 1 - y_j exp(q_j) z_j, dbeta/dL_ji = -y_j z_i.
                    for (std::size_t j = 0; j < d; ++j) {
                        g_q[j] += r * (1.0 - yk[j] * c.exp_q[k * d + j] * zk[j]);
                        g_mu[j] += r * c.exp_q[k * d + j] * yk[j];
                    }
                    std::size_t index = 0;
                    for (std::size_t col = 0; col < d; ++col) {
                        for (std::size_t row = col + 1; row < d; ++row) {
                            g_q[d + index] -= r * yk[row] * zk[col];
                            g_mu[col] += r * lower[index] * yk[row];
                            ++index;
                        }
                    }
                }
            }
        });
    // -n logsumexp(alpha) and the prior.
    const double lse = alphas_logsumexp(g);
    for (std::size_t k = 0; k < g.k; ++k) {
        gradient[k] -= static_cast<double>(g.n) * std::exp(g.alphas[k] - lse);
        double* g_q = gradient.data() + icf_at + k * icf_size;
        const double* q = g.icf.data() + k * icf_size;
        for (std::size_t j = 0; j < d; ++j)
            g_q[j] += g.gamma * g.gamma * c.exp_q[k * d + j] * c.exp_q[k * d + j] - g.m;
        for (std::size_t j = d; j < icf_size; ++j) g_q[j] += g.gamma * g.gamma * q[j];
    }
    return gradient;
}

}  // namespace tapevm::examples
