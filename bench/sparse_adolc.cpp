// ADOL-C's side of `tapevm bench --sparse` (sparse_bench.hpp). Debian's ADOL-C 2.7 is built
// without ColPack, so its sparse_jac driver only reports "can only be used if linked with
// ColPack": the peer is what sparse_jac runs once it has a seed, ADOL-C's vector forward mode
// (fov_forward) with the same compressed seed as tapevm's (one direction per colour).
#include <adolc/adolc.h>

#include <vector>

#include "sparse_bench.hpp"
#include "timing.hpp"

namespace tapevm::bench {

bool adolc_sparse_jacobian(std::span<const double> x, const SparseJacobianPlan& plan, unsigned repeats,
                           std::vector<double>& seconds, std::vector<double>& values) {
    constexpr short tag = 91;  // the benchmark runners' tags count up from 1
    const int n = static_cast<int>(x.size());
    const double n1 = static_cast<double>(n + 1);
    const double h2 = 1.0 / (n1 * n1);
    std::vector<double> y(x.size());
    {
        trace_on(tag);
        std::vector<adouble> ax(x.size()), r(x.size());
        for (int i = 0; i < n; ++i) ax[i] <<= x[i];
        for (int i = 0; i < n; ++i) {
            adouble ri = -2.0 * ax[i] + h2 * 1.0 * exp(ax[i]);
            if (i > 0) ri = ri + ax[i - 1];
            if (i + 1 < n) ri = ri + ax[i + 1];
            r[i] = ri;
        }
        for (int i = 0; i < n; ++i) r[i] >>= y[i];
        trace_off();
    }
    const int p = static_cast<int>(plan.colouring.colours);
    double** seed = myalloc2(x.size(), static_cast<std::size_t>(p));
    double** compressed = myalloc2(x.size(), static_cast<std::size_t>(p));
    for (int j = 0; j < n; ++j)
        for (int c = 0; c < p; ++c)
            seed[j][c] = plan.colouring.colour[j] == static_cast<std::uint32_t>(c) ? 1.0 : 0.0;
    std::vector<double> point(x.begin(), x.end());
    seconds = support::timed_runs(
        repeats, [&] { fov_forward(tag, n, n, p, point.data(), seed, y.data(), compressed); });
    values.assign(plan.pattern.nonzeros(), 0.0);
    for (std::size_t row = 0; row < plan.pattern.rows; ++row)
        for (std::size_t k = plan.pattern.row_starts[row]; k < plan.pattern.row_starts[row + 1]; ++k)
            values[k] = compressed[row][plan.colouring.colour[plan.pattern.columns[k]]];
    myfree2(seed);
    myfree2(compressed);
    return true;
}

}  // namespace tapevm::bench
