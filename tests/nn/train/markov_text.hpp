// The generated corpus of the train tests: a first-order Markov chain over 8 letters. From
// letter s the next is s + 1 or 3 s + 2 (mod 8), each with probability 1/2 (never the same
// letter). Its entropy rate is ln 2 nats per character: no model can beat it, and a bigram model
// reaches it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace tapevm::nn::test {

/// `length` characters of the chain from letter `first`, its coin flips from an LCG seeded `seed`.
inline std::string markov_text(std::size_t length, std::uint64_t seed, char first = 'a') {
    std::string text;
    std::uint64_t state = seed;
    std::size_t s = 0;
    for (std::size_t i = 0; i < length; ++i) {
        state = state * 6364136223846793005ULL + 1442695040888963407ULL;
        s = (state >> 63) != 0 ? (s + 1) % 8 : (3 * s + 2) % 8;
        text.push_back(static_cast<char>(first + s));
    }
    return text;
}

}  // namespace tapevm::nn::test
