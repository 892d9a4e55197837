// The GLSL builtins and types the math library (shaders/lib) uses, in C++, so that the
// library's source, converted by glsl_to_cpp.py, compiles as C++ inside namespace
// tapevm::glsl. Each has the GLSL semantics for the values the library passes.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

namespace tapevm::glsl {

using uint = std::uint32_t;

struct uvec2 {
    uint x;
    uint y;
    uvec2(uint x_, uint y_) : x(x_), y(y_) {}
};

inline double packDouble2x32(uvec2 v) {
    return std::bit_cast<double>((static_cast<std::uint64_t>(v.y) << 32) | v.x);
}
inline uvec2 unpackDouble2x32(double d) {
    auto bits = std::bit_cast<std::uint64_t>(d);
    return uvec2(static_cast<uint>(bits), static_cast<uint>(bits >> 32));
}
inline uint floatBitsToUint(float x) { return std::bit_cast<uint>(x); }
inline int floatBitsToInt(float x) { return std::bit_cast<int>(x); }
inline float uintBitsToFloat(uint x) { return std::bit_cast<float>(x); }
inline float intBitsToFloat(int x) { return std::bit_cast<float>(x); }

inline uint uaddCarry(uint x, uint y, uint& carry) {
    uint sum = x + y;
    carry = sum < x ? 1u : 0u;
    return sum;
}
inline void umulExtended(uint x, uint y, uint& msb, uint& lsb) {
    std::uint64_t product = static_cast<std::uint64_t>(x) * y;
    msb = static_cast<uint>(product >> 32);
    lsb = static_cast<uint>(product);
}

inline double floor(double x) { return std::floor(x); }
inline double ceil(double x) { return std::ceil(x); }
inline double trunc(double x) { return std::trunc(x); }
inline double sqrt(double x) { return std::sqrt(x); }
inline double fma(double x, double y, double z) { return std::fma(x, y, z); }
inline float floor(float x) { return std::floor(x); }
inline float ceil(float x) { return std::ceil(x); }
inline float trunc(float x) { return std::trunc(x); }
inline float sqrt(float x) { return std::sqrt(x); }
inline float fma(float x, float y, float z) { return std::fma(x, y, z); }
inline int clamp(int x, int low, int high) { return x < low ? low : (x > high ? high : x); }
inline double clamp(double x, double low, double high) { return x < low ? low : (x > high ? high : x); }
inline float clamp(float x, float low, float high) { return x < low ? low : (x > high ? high : x); }

}  // namespace tapevm::glsl

// The float builtins math_f32.glsl calls (std:: here; the GPU's own in shaders).
namespace tapevm::glsl {
inline float exp(float x) { return std::exp(x); }
inline float exp2(float x) { return std::exp2(x); }
inline float log(float x) { return std::log(x); }
inline float log2(float x) { return std::log2(x); }
inline float sin(float x) { return std::sin(x); }
inline float cos(float x) { return std::cos(x); }
inline float tan(float x) { return std::tan(x); }
inline float asin(float x) { return std::asin(x); }
inline float acos(float x) { return std::acos(x); }
inline float atan(float x) { return std::atan(x); }
inline float pow(float x, float y) { return std::pow(x, y); }
}  // namespace tapevm::glsl
