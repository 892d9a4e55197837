// The small model both ReducedTape suites fit (tests/test_reduced.cpp on the reference VM,
// tests/conformance/test_reduced.cpp on every backend): f(x; a, b, c, s) =
// s * (log1p(exp(a x0 + b)) - c x1 + c^3 / 10)^2 + sin(a x1), plus x0 c where x0 < b (a guard
// on a parameter), recorded at x = (0.3, -0.2), (a, b, c, s) = (0.7, -0.4, 1.3, 0.5).
#pragma once

#include <vector>

#include "tapevm/var.hpp"

namespace tapevm::test {

inline Tape reduced_model() {
    const std::vector<double> x = {0.3, -0.2};
    const std::vector<double> p = {0.7, -0.4, 1.3, 0.5};
    return record(std::span<const double>(x), std::span<const double>(p),
                  [](std::span<const Var> x, std::span<const Var> p) {
                      const Var r = log1p(exp(p[0] * x[0] + p[1])) - p[2] * x[1] + 0.1 * powi(p[2], 3);
                      Var y = p[3] * r * r + sin(p[0] * x[1]);
                      if (x[0] < p[1]) y = y + x[0] * p[2];
                      return std::vector<Var>{y};
                  });
}

}  // namespace tapevm::test
