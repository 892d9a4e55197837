// SplitMix64: the one random generator of the programs (the benchmark's workloads, the demo's
// batch) and their tests: a tiny generator with the same output on every platform (unlike the
// distributions of <random>), so every backend, every run and the JAX script see the same
// points. Internal: not installed.
#pragma once

#include <cmath>
#include <cstdint>

namespace tapevm::support {

class SplitMix64 {
public:
    explicit SplitMix64(std::uint64_t seed) : state_(seed) {}
    std::uint64_t next() {
        std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    }
    /// Uniform in [0, 1).
    double uniform() { return static_cast<double>(next() >> 11) * 0x1p-53; }
    /// Uniform in [low, high).
    double uniform(double low, double high) { return low + (high - low) * uniform(); }
    /// Standard normal (Box-Muller from two uniforms; the second value is not kept).
    double normal() {
        const double u = 1.0 - uniform();  // (0, 1]: log(u) is finite
        const double v = uniform();
        return std::sqrt(-2.0 * std::log(u)) * std::cos(6.283185307179586 * v);
    }

private:
    std::uint64_t state_;
};

}  // namespace tapevm::support
