// Dropout's mask: a pure function of (seed, stream, flat element index), the same bits on every
// device. The host folds (seed, stream) into a 32-bit key; element i is kept when
// (triple32(triple32(i) ^ key) >> 8) >= threshold, threshold = round(p * 2^24).
// triple32 (gpu/shaders/triple32.glsl, one body for this header and gpu/shaders/dropout.comp);
// the conformance suite compares the masks bit for bit across devices.
#pragma once

#include <cmath>
#include <cstdint>

namespace tapevm::nn::detail {

#define NN_TRIPLE32_SIGNATURE constexpr std::uint32_t triple32(std::uint32_t v)
#include "gpu/shaders/triple32.glsl"
#undef NN_TRIPLE32_SIGNATURE

struct DropoutMask {
    std::uint32_t key = 0;
    std::uint32_t threshold = 0;  // of 2^24
    double scale = 1;             // 1 / (1 - p)

    DropoutMask(double p, std::uint64_t seed, std::uint64_t stream)
        : key(triple32(static_cast<std::uint32_t>(seed) ^
                       triple32(static_cast<std::uint32_t>(seed >> 32) ^
                                triple32(static_cast<std::uint32_t>(stream) ^
                                         triple32(static_cast<std::uint32_t>(stream >> 32) ^ 0x9e3779b9U))))),
          threshold(static_cast<std::uint32_t>(std::lround(p * 16777216.0))), scale(1.0 / (1.0 - p)) {}

    bool keeps(std::uint32_t index) const { return (triple32(triple32(index) ^ key) >> 8) >= threshold; }
};

}  // namespace tapevm::nn::detail
