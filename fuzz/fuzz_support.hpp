// What every libFuzzer target here shares: the input as bytes, and a check that stops the
// run (libFuzzer saves the input as a crash) when a property the library promises fails.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>

namespace tapevm::fuzz {

inline std::span<const std::byte> bytes_of(const std::uint8_t* data, std::size_t size) {
    return {reinterpret_cast<const std::byte*>(data), size};
}

/// Aborts with `what` unless `holds`: a broken promise is a finding like a sanitizer report.
inline void require(bool holds, const char* what) {
    if (holds) return;
    std::fprintf(stderr, "fuzz: property failed: %s\n", what);
    std::abort();
}

}  // namespace tapevm::fuzz
