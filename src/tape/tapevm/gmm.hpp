// ADBench's Gaussian mixture model objective (Srajer, Kukelova, Fitzgibbon 2018, section 4.1)
// as tapes for tapevm::ReducedTape, with instances generated as ADBench's gmm-data-gen.py
// generates them, and a hand-written f64 objective and gradient as the oracle.
//
//   theta = (alphas [K], means [K][d], icf [K][d + d(d-1)/2])   (ADBench's gradient order)
//   Q_k   = diag(exp(icf_k[0..d))) + the strictly lower triangle icf_k[d..), column by column
//   E(theta) = -n d/2 log(2 pi)
//              + sum_i logsumexp_k(alpha_k + sum_j icf_kj - |Q_k (x_i - mu_k)|^2 / 2)
//              - n logsumexp(alpha) + the Wishart prior
//   prior    = sum_k (gamma^2 / 2 (|exp(icf_k[0..d))|^2 + |icf_k[d..)|^2) - m sum_j icf_kj)
//              - K (n' d (log gamma - log(2) / 2) - log Gamma_d(n' / 2)),   n' = d + m + 1
//
// The sum over points is gmm_point_tape (inputs x_i, every theta a parameter) reduced over
// the batch; the rest is gmm_prior_tape (inputs theta), evaluated once. Not installed; in the
// examples library beside examples.hpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "tapevm/tape.hpp"

namespace tapevm::examples {

struct GmmInstance {
    std::size_t d = 0, k = 0, n = 0;
    std::vector<double> alphas;  // [k]
    std::vector<double> means;   // [k][d]
    std::vector<double> icf;     // [k][d + d(d-1)/2]
    std::vector<double> x;       // [n][d]
    double gamma = 1.0;
    int m = 0;

    std::size_t icf_size() const { return d + d * (d - 1) / 2; }
    /// alphas, means, icf: the parameters of gmm_point_tape and the inputs of gmm_prior_tape.
    std::vector<double> theta() const;
};

/// An instance drawn as gmm-data-gen.py draws it: alphas, icf and x standard normal, means
/// uniform in [0, 1), gamma 1, m 0 (from SplitMix64(seed), not numpy's generator). Throws Error
/// for d, k or n of 0.
GmmInstance gmm_instance(std::size_t d, std::size_t k, std::size_t n, std::uint64_t seed);

/// One point's term: inputs x [d], parameters theta; one output.
Tape gmm_point_tape(std::size_t d, std::size_t k);
/// The terms of theta alone (constant, -n logsumexp(alpha), the prior): inputs theta; one output.
Tape gmm_prior_tape(std::size_t d, std::size_t k, std::size_t n, double gamma, int m);

/// E(theta) and its gradient, hand-written in f64 (the oracle; the baseline of `tapevm-bench
/// bench --gmm`), on `threads` threads (0: all): the points split into fixed blocks, each
/// block's sums added in block order, so the bits do not depend on the thread count.
double gmm_objective(const GmmInstance& instance, unsigned threads = 1);
std::vector<double> gmm_gradient(const GmmInstance& instance, unsigned threads = 1);

}  // namespace tapevm::examples
