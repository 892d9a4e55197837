// Loads and stores of tensor bindings (tensor_bindings.hpp) for the block kernels. Compiled
// with the build's baseline flags and called out of line from every instruction set's kernel,
// so the conversions are one copy whatever set runs.
#include <bit>
#include <cassert>
#include <cstring>

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

#include "tensor_bindings.hpp"

namespace tapevm::cpu::detail {

namespace {

float half_to_float(std::uint16_t h) {
    const std::uint32_t sign = std::uint32_t{h & 0x8000u} << 16;
    const std::uint32_t exponent = (h >> 10) & 0x1fu;
    std::uint32_t mantissa = h & 0x3ffu;
    std::uint32_t bits = 0;
    if (exponent == 0x1f) {
        bits = sign | 0x7f800000u | (mantissa << 13);  // inf, NaN (payload kept)
    } else if (exponent != 0) {
        bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
    } else if (mantissa == 0) {
        bits = sign;
    } else {  // subnormal: normalise
        std::uint32_t e = 113;
        while ((mantissa & 0x400u) == 0) {
            mantissa <<= 1;
            --e;
        }
        bits = sign | (e << 23) | ((mantissa & 0x3ffu) << 13);
    }
    return std::bit_cast<float>(bits);
}

// Round to nearest even; NaN stays NaN (quiet), overflow gives inf.
std::uint16_t float_to_half(float value) {
    const std::uint32_t bits = std::bit_cast<std::uint32_t>(value);
    const std::uint32_t sign = (bits >> 16) & 0x8000u;
    const std::uint32_t magnitude = bits & 0x7fffffffu;
    if (magnitude > 0x7f800000u)
        return static_cast<std::uint16_t>(sign | 0x7e00u | ((magnitude >> 13) & 0x1ffu));
    if (magnitude >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u);  // rounds to >= 65520
    if (magnitude < 0x38800000u) {  // below the smallest normal half: subnormal or zero
        if (magnitude < 0x33000000u) return static_cast<std::uint16_t>(sign);  // <= half of the smallest
        const std::uint32_t exponent = magnitude >> 23;
        const std::uint32_t mantissa = (magnitude & 0x7fffffu) | 0x800000u;
        const std::uint32_t shift = 126 - exponent;  // 14 .. 24
        std::uint32_t half = mantissa >> shift;
        const std::uint32_t rest = mantissa & ((1u << shift) - 1);
        const std::uint32_t halfway = 1u << (shift - 1);
        if (rest > halfway || (rest == halfway && (half & 1u))) ++half;
        return static_cast<std::uint16_t>(sign | half);
    }
    std::uint32_t rebased = magnitude - 0x38000000u;  // exponent 127 -> 15
    const std::uint32_t rest = rebased & 0x1fffu;
    std::uint32_t half = rebased >> 13;
    if (rest > 0x1000u || (rest == 0x1000u && (half & 1u))) ++half;
    return static_cast<std::uint16_t>(sign | half);
}

float bfloat_to_float(std::uint16_t b) { return std::bit_cast<float>(std::uint32_t{b} << 16); }

std::uint16_t float_to_bfloat(float value) {
    const std::uint32_t bits = std::bit_cast<std::uint32_t>(value);
    if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((bits >> 16) | 0x40u);
    return static_cast<std::uint16_t>((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}

template <TensorStorage storage> float read(const void* data, std::size_t index) {
    if constexpr (storage == TensorStorage::f32) {
        return static_cast<const float*>(data)[index];
    } else if constexpr (storage == TensorStorage::f16) {
        return half_to_float(static_cast<const std::uint16_t*>(data)[index]);
    } else {
        return bfloat_to_float(static_cast<const std::uint16_t*>(data)[index]);
    }
}

template <TensorStorage storage> void write(void* data, std::size_t index, float value) {
    if constexpr (storage == TensorStorage::f32) {
        static_cast<float*>(data)[index] = value;
    } else if constexpr (storage == TensorStorage::f16) {
        static_cast<std::uint16_t*>(data)[index] = float_to_half(value);
    } else {
        static_cast<std::uint16_t*>(data)[index] = float_to_bfloat(value);
    }
}

// f16 runs of full bindings with the F16C instructions where the machine has them (the same
// rounding as float_to_half: to nearest even; NaN stays NaN), eight at a time.
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define TAPEVM_F16C 1
__attribute__((target("avx,f16c"))) void halves_to_floats(const std::uint16_t* src, float* dst,
                                                          std::size_t n) {
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(dst + i,
                         _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i))));
    for (; i < n; ++i) dst[i] = half_to_float(src[i]);
}
__attribute__((target("avx,f16c"))) void floats_to_halves(const float* src, std::uint16_t* dst,
                                                          std::size_t n) {
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i),
                         _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT));
    for (; i < n; ++i) dst[i] = float_to_half(src[i]);
}
bool f16c_supported() {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    if (__get_cpuid(1, &eax, &ebx, &ecx, &edx) == 0) return false;
    return __builtin_cpu_supports("avx") && (ecx & (1u << 29)) != 0;  // CPUID.1:ECX.F16C
}
const bool has_f16c = f16c_supported();
#else
#define TAPEVM_F16C 0
#endif

template <TensorStorage storage>
void load(const TensorBinding& b, std::size_t first, std::size_t count, float* row, bool add) {
    const auto put = [&](std::size_t l, float v) { row[l] = add ? row[l] + v : v; };
    switch (b.broadcast) {
        case Broadcast::full:
            if (storage == TensorStorage::f32 && !add) {
                std::memcpy(row, static_cast<const float*>(b.data) + first, count * sizeof(float));
#if TAPEVM_F16C
            } else if (storage == TensorStorage::f16 && !add && has_f16c) {
                halves_to_floats(static_cast<const std::uint16_t*>(b.data) + first, row, count);
#endif
            } else {
                for (std::size_t l = 0; l < count; ++l) put(l, read<storage>(b.data, first + l));
            }
            break;
        case Broadcast::scalar: {
            const float v = read<storage>(b.data, 0);
            for (std::size_t l = 0; l < count; ++l) put(l, v);
            break;
        }
        case Broadcast::row: {
            std::size_t j = first % b.extent;
            for (std::size_t l = 0; l < count; ++l) {
                put(l, read<storage>(b.data, j));
                if (++j == b.extent) j = 0;
            }
            break;
        }
        case Broadcast::column: {
            std::size_t r = first / b.extent, j = first % b.extent;
            float v = read<storage>(b.data, r);
            for (std::size_t l = 0; l < count; ++l) {
                put(l, v);
                if (++j == b.extent && l + 1 < count) {
                    j = 0;
                    v = read<storage>(b.data, ++r);
                }
            }
            break;
        }
    }
}

template <TensorStorage storage>
void store(const TensorBinding& b, std::size_t first, std::size_t count, const float* row) {
    if (b.accumulate) {
        if (row == nullptr) return;  // += 0 changes nothing (but -0 + 0: keep the tensor's value)
        for (std::size_t l = 0; l < count; ++l)
            write<storage>(b.data, first + l, read<storage>(b.data, first + l) + row[l]);
        return;
    }
    if (storage == TensorStorage::f32 && row != nullptr) {
        std::memcpy(static_cast<float*>(b.data) + first, row, count * sizeof(float));
        return;
    }
#if TAPEVM_F16C
    if (storage == TensorStorage::f16 && row != nullptr && has_f16c) {
        floats_to_halves(row, static_cast<std::uint16_t*>(b.data) + first, count);
        return;
    }
#endif
    for (std::size_t l = 0; l < count; ++l) write<storage>(b.data, first + l, row == nullptr ? 0.0f : row[l]);
}

}  // namespace

void load_binding(const TensorBinding& binding, std::size_t first, std::size_t count, float* row,
                  std::size_t lanes, bool add) {
    switch (binding.storage) {
        case TensorStorage::f32: load<TensorStorage::f32>(binding, first, count, row, add); break;
        case TensorStorage::f16: load<TensorStorage::f16>(binding, first, count, row, add); break;
        case TensorStorage::bf16: load<TensorStorage::bf16>(binding, first, count, row, add); break;
    }
    if (!add)
        for (std::size_t l = count; l < lanes; ++l) row[l] = 0.0f;
}

void store_binding(const TensorBinding& binding, std::size_t first, std::size_t count, const float* row) {
    assert(binding.broadcast == Broadcast::full);
    switch (binding.storage) {
        case TensorStorage::f32: store<TensorStorage::f32>(binding, first, count, row); break;
        case TensorStorage::f16: store<TensorStorage::f16>(binding, first, count, row); break;
        case TensorStorage::bf16: store<TensorStorage::bf16>(binding, first, count, row); break;
    }
}

}  // namespace tapevm::cpu::detail
