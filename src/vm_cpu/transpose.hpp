// In-register transposes of a square tile of SIMD vectors (W vectors of W lanes), used by the
// kernels to move points between the caller's row-major layout ([point][column]) and the
// block's column layout ([column][lane]) with whole-vector loads and stores instead of one
// scalar access per value. Include only from a translation unit compiled for Arch
// (kernel_<isa>.cpp), like simd_math.hpp.
//
// The transpose is log2(W) rounds of a full-width interleave ("zip"): row' 2i, 2i+1 =
// zip_lo, zip_hi(row i, row i + W/2). Each round rotates the bits of the element index
// (row, column) by one, so log2(W) rounds swap the row bits with the column bits.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include <immintrin.h>
#include <xsimd/xsimd.hpp>

namespace tapevm::cpu::detail {

template <class Arch, class Real> struct Transpose {
    using V = xsimd::batch<Real, Arch>;
    static constexpr std::size_t width = V::size;

    /// lo = (a0, b0, a1, b1, ...), hi = the same from the upper halves of a and b.
    static void zip(V a, V b, V& lo, V& hi) {
        if constexpr (std::is_base_of_v<xsimd::avx512f, Arch>) {
            if constexpr (std::is_same_v<Real, double>) {
                const __m512i low = _mm512_set_epi64(11, 3, 10, 2, 9, 1, 8, 0);
                const __m512i high = _mm512_set_epi64(15, 7, 14, 6, 13, 5, 12, 4);
                lo = _mm512_permutex2var_pd(a, low, b);
                hi = _mm512_permutex2var_pd(a, high, b);
            } else {
                const __m512i low = _mm512_set_epi32(23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
                const __m512i high =
                    _mm512_set_epi32(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8);
                lo = _mm512_permutex2var_ps(a, low, b);
                hi = _mm512_permutex2var_ps(a, high, b);
            }
        } else if constexpr (std::is_base_of_v<xsimd::avx, Arch>) {
            // unpacklo/hi interleave within each 128-bit half; permute2f128 puts the halves
            // in order.
            if constexpr (std::is_same_v<Real, double>) {
                const __m256d u = _mm256_unpacklo_pd(a, b);
                const __m256d v = _mm256_unpackhi_pd(a, b);
                lo = _mm256_permute2f128_pd(u, v, 0x20);
                hi = _mm256_permute2f128_pd(u, v, 0x31);
            } else {
                const __m256 u = _mm256_unpacklo_ps(a, b);
                const __m256 v = _mm256_unpackhi_ps(a, b);
                lo = _mm256_permute2f128_ps(u, v, 0x20);
                hi = _mm256_permute2f128_ps(u, v, 0x31);
            }
        } else {
            if constexpr (std::is_same_v<Real, double>) {
                lo = _mm_unpacklo_pd(a, b);
                hi = _mm_unpackhi_pd(a, b);
            } else {
                lo = _mm_unpacklo_ps(a, b);
                hi = _mm_unpackhi_ps(a, b);
            }
        }
    }

    /// A non-temporal store of v at p (aligned to the vector's size): written to memory
    /// without reading the cache line first. Order with fence() before another thread reads.
    static void stream(Real* p, V v) {
        if constexpr (std::is_base_of_v<xsimd::avx512f, Arch>) {
            if constexpr (std::is_same_v<Real, double>) {
                _mm512_stream_pd(p, v);
            } else {
                _mm512_stream_ps(p, v);
            }
        } else if constexpr (std::is_base_of_v<xsimd::avx, Arch>) {
            if constexpr (std::is_same_v<Real, double>) {
                _mm256_stream_pd(p, v);
            } else {
                _mm256_stream_ps(p, v);
            }
        } else {
            if constexpr (std::is_same_v<Real, double>) {
                _mm_stream_pd(p, v);
            } else {
                _mm_stream_ps(p, v);
            }
        }
    }
    static void fence() { _mm_sfence(); }

    /// rows[i] lane j becomes rows[j] lane i.
    static void transpose(V (&rows)[width]) {
        for (std::size_t span = 1; span < width; span *= 2) {
            V next[width];
            for (std::size_t i = 0; i < width / 2; ++i)
                zip(rows[i], rows[i + width / 2], next[2 * i], next[2 * i + 1]);
            for (std::size_t i = 0; i < width; ++i) rows[i] = next[i];
        }
    }
};

}  // namespace tapevm::cpu::detail
