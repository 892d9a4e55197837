// Counter-based random numbers (internal to src/nn/train): a value is a pure function of
// (seed, stream, index), so initialisation and dropout masks do not depend on thread counts,
// devices or call order, and resuming needs only the counters.
#pragma once

#include <cmath>
#include <cstdint>

namespace tapevm::nn::detail {

/// SplitMix64's finaliser: a bijective 64-bit mix.
inline std::uint64_t mix64(std::uint64_t z) {
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/// 64 random bits for (seed, stream, index).
inline std::uint64_t counter_bits(std::uint64_t seed, std::uint64_t stream, std::uint64_t index) {
    return mix64(mix64(mix64(seed) ^ stream) ^ index);
}

/// Uniform in [0, 1) with 53 bits.
inline double counter_uniform(std::uint64_t seed, std::uint64_t stream, std::uint64_t index) {
    return static_cast<double>(counter_bits(seed, stream, index) >> 11) * 0x1.0p-53;
}

/// Standard normal (Box-Muller on the uniforms at 2 index and 2 index + 1).
inline double counter_normal(std::uint64_t seed, std::uint64_t stream, std::uint64_t index) {
    const double u1 = 1.0 - counter_uniform(seed, stream, 2 * index);  // (0, 1]
    const double u2 = counter_uniform(seed, stream, 2 * index + 1);
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

}  // namespace tapevm::nn::detail
