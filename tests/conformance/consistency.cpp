#include "consistency.hpp"

#include <cmath>
#include <limits>

namespace tapevm::conformance {
namespace {

std::string where(const char* what, std::size_t point, std::size_t element) {
    return std::string(what) + " at point " + std::to_string(point) + ", element " + std::to_string(element);
}

/// got matches sum_j terms[j] within bound, scaled by sum_j |terms[j]|; skipped (true) where a
/// term is not finite or the sum is beyond `largest` (it overflows in the backend's precision).
bool matches_sum(double got, const std::vector<double>& terms, ErrorBound bound, double largest) {
    double sum = 0.0, scale = 0.0;
    for (double t : terms) {
        if (!std::isfinite(t)) return true;
        sum += t;
        scale += std::fabs(t);
    }
    if (scale > largest) return true;
    if (!std::isfinite(got)) return false;
    return std::fabs(got - sum) <= bound.relative * scale + bound.absolute;
}

}  // namespace

template <class Real>
void check_consistency(Failures& failures, const Results<Real>& got, const Tape& tape,
                       const Seeds<Real>& seeds) {
    const ErrorBound bound = consistency_bound<Real>();
    const double largest = std::numeric_limits<Real>::max() / 2;
    const std::size_t n = tape.input_count();
    const std::size_t m = tape.output_count();
    const auto& forward = got.jacobian_forward.values;
    const auto& reverse = got.jacobian_reverse.values;
    const std::size_t points = n * m == 0 ? 0 : forward.size() / (n * m);
    for (std::size_t k = 0; k < forward.size(); ++k) {
        if (!within(forward[k], reverse[k], bound)) {
            failures.add(where("jacobian", k / (n * m), k % (n * m)) + ": forward mode " + show(forward[k]) +
                         ", reverse mode " + show(reverse[k]));
        }
    }
    if (m == 1) {
        for (std::size_t k = 0; k < got.gradient.values.size(); ++k) {
            if (!within(got.gradient.values[k], reverse[k], bound)) {
                failures.add(where("gradient", k / n, k % n) + ": " + show(got.gradient.values[k]) +
                             ", jacobian " + show(reverse[k]));
            }
        }
    }
    std::vector<double> terms;
    for (std::size_t p = 0; p < points; ++p) {
        const Real* jac = reverse.data() + p * m * n;
        for (std::size_t k = 0; k < m; ++k) {
            terms.clear();
            for (std::size_t i = 0; i < n; ++i) {
                const double t = seeds.tangents[p * n + i];
                terms.push_back(t == 0 ? 0.0 : double(jac[k * n + i]) * t);
            }
            if (!matches_sum(got.jvp.values[p * m + k], terms, bound, largest)) {
                failures.add(where("jvp", p, k) + ": " + show(got.jvp.values[p * m + k]) + ", J t " +
                             show([&] {
                                 double s = 0;
                                 for (double t : terms) s += t;
                                 return s;
                             }()));
            }
        }
        for (std::size_t i = 0; i < n; ++i) {
            terms.clear();
            for (std::size_t k = 0; k < m; ++k) {
                const double c = seeds.cotangents[p * m + k];
                terms.push_back(c == 0 ? 0.0 : double(jac[k * n + i]) * c);
            }
            if (!matches_sum(got.vjp.values[p * n + i], terms, bound, largest)) {
                failures.add(where("vjp", p, i) + ": " + show(got.vjp.values[p * n + i]) +
                             " differs from c J");
            }
        }
    }
}

template void check_consistency<double>(Failures&, const Results<double>&, const Tape&, const Seeds<double>&);
template void check_consistency<float>(Failures&, const Results<float>&, const Tape&, const Seeds<float>&);

}  // namespace tapevm::conformance
