// ADOL-C's side of `tapevm bench --gmm` (gmm_bench.hpp): the whole objective taped once with
// adoubles for theta (the data passive), as ADBench's ADOL-C module does, then zos_forward for
// the objective and gradient (one reverse sweep) for the gradient.
#include <adolc/adolc.h>

#include <cmath>
#include <numbers>
#include <vector>

#include "gmm_bench.hpp"
#include "timing.hpp"

namespace tapevm::bench {

namespace {

adouble logsumexp(const std::vector<adouble>& v) {
    adouble top = v[0];
    for (std::size_t i = 1; i < v.size(); ++i) top = fmax(top, v[i]);
    adouble sum = 0.0;
    for (const adouble& x : v) sum += exp(x - top);
    return top + log(sum);
}

}  // namespace

bool adolc_gmm(const examples::GmmInstance& g, unsigned repeats, std::vector<double>& objective_seconds,
               std::vector<double>& gradient_seconds, double& value, std::vector<double>& gradient) {
    constexpr short tag = 92;  // the benchmark runners' tags count up from 1; sparse: 91
    const std::vector<double> theta = g.theta();
    const std::size_t d = g.d, icf_size = g.icf_size();
    {
        trace_on(tag);
        std::vector<adouble> t(theta.size());
        for (std::size_t j = 0; j < theta.size(); ++j) t[j] <<= theta[j];
        const adouble* alphas = t.data();
        const adouble* means = alphas + g.k;
        const adouble* icf = means + g.k * d;
        std::vector<adouble> exp_q(g.k * d), sum_q(g.k), beta(g.k), y(d), z(d);
        for (std::size_t k = 0; k < g.k; ++k) {
            sum_q[k] = 0.0;
            for (std::size_t j = 0; j < d; ++j) {
                exp_q[k * d + j] = exp(icf[k * icf_size + j]);
                sum_q[k] += icf[k * icf_size + j];
            }
        }
        adouble total = 0.0;
        for (std::size_t i = 0; i < g.n; ++i) {
            for (std::size_t k = 0; k < g.k; ++k) {
                for (std::size_t j = 0; j < d; ++j) {
                    z[j] = g.x[i * d + j] - means[k * d + j];
                    y[j] = exp_q[k * d + j] * z[j];
                }
                std::size_t index = d;
                for (std::size_t col = 0; col < d; ++col)
                    for (std::size_t row = col + 1; row < d; ++row)
                        y[row] += icf[k * icf_size + index++] * z[col];
                adouble square = 0.0;
                for (std::size_t j = 0; j < d; ++j) square += y[j] * y[j];
                beta[k] = alphas[k] + sum_q[k] - 0.5 * square;
            }
            total += logsumexp(beta);
        }
        std::vector<adouble> alpha_vector(alphas, alphas + g.k);
        total -= static_cast<double>(g.n) * logsumexp(alpha_vector);
        for (std::size_t k = 0; k < g.k; ++k) {
            adouble frobenius = 0.0;
            for (std::size_t j = 0; j < d; ++j) frobenius += exp_q[k * d + j] * exp_q[k * d + j];
            for (std::size_t j = d; j < icf_size; ++j)
                frobenius += icf[k * icf_size + j] * icf[k * icf_size + j];
            total += 0.5 * g.gamma * g.gamma * frobenius - g.m * sum_q[k];
        }
        // The constant: as gmm_objective (tapevm/gmm.hpp).
        const double dd = static_cast<double>(d), nn = dd + g.m + 1;
        double log_gamma_d = 0.25 * dd * (dd - 1) * std::log(std::numbers::pi);
        for (std::size_t j = 1; j <= d; ++j)
            log_gamma_d += std::lgamma(0.5 * nn + 0.5 * (1.0 - static_cast<double>(j)));
        total += -static_cast<double>(g.n) * dd * 0.5 * std::log(2 * std::numbers::pi) -
                 static_cast<double>(g.k) *
                     (nn * dd * (std::log(g.gamma) - 0.5 * std::numbers::ln2) - log_gamma_d);
        total >>= value;
        trace_off();
    }
    const int count = static_cast<int>(theta.size());
    gradient.assign(theta.size(), 0.0);
    objective_seconds =
        support::timed_runs(repeats, [&] { zos_forward(tag, 1, count, 0, theta.data(), &value); });
    gradient_seconds =
        support::timed_runs(repeats, [&] { ::gradient(tag, count, theta.data(), gradient.data()); });
    return true;
}

}  // namespace tapevm::bench
