// `count` values uniform in [low, high) from a fixed seed: the random points and directions
// of the suites (GPU, conformance), the same sequence for a seed on every machine.
#pragma once

#include <cstddef>
#include <random>
#include <vector>

namespace tapevm::test {

template <class Real>
std::vector<Real> random_values(std::size_t count, double low, double high, unsigned seed) {
    std::mt19937_64 engine(seed);
    std::uniform_real_distribution<double> uniform(low, high);
    std::vector<Real> values(count);
    for (auto& value : values) value = static_cast<Real>(uniform(engine));
    return values;
}

}  // namespace tapevm::test
