// Storage dtypes of the nn kernels. Before including, define NN_DTYPE (the kernel's dtype)
// and optionally NN_OUT_DTYPE (a second one: copy's destination, matmul's C; default
// NN_DTYPE): 0 f32, 1 f16, 2 bf16, 3 i32 (ShaderDType in backend.hpp).
//
// For each, NN_T / NN_OUT_T is the buffer element type and NN_LOAD(v) / NN_OUT_LOAD(v) turn an
// element into float, NN_STORE(f) / NN_OUT_STORE(f) a float into an element. f16 and bf16 are
// stored as uint16_t (GL_EXT_shader_16bit_storage: storageBuffer16BitAccess, no float16
// arithmetic needed) and converted with integer code here: round to nearest even, NaN stays
// NaN, overflow to inf, as tapevm::nn::float_to_half / float_to_bfloat do on the host.
#ifndef NN_DTYPE_GLSL
#define NN_DTYPE_GLSL

#ifndef NN_OUT_DTYPE
#define NN_OUT_DTYPE NN_DTYPE
#endif

#if NN_DTYPE == 1 || NN_DTYPE == 2 || NN_OUT_DTYPE == 1 || NN_OUT_DTYPE == 2
#extension GL_EXT_shader_16bit_storage : require
#endif

float nn_f16_to_f32(uint h) { return unpackHalf2x16(h).x; }

uint nn_f32_to_f16(float f) {
    const uint x = floatBitsToUint(f);
    const uint sign = (x >> 16) & 0x8000u;
    const uint ax = x & 0x7fffffffu;
    if (ax >= 0x7f800000u) return sign | (ax > 0x7f800000u ? 0x7e00u : 0x7c00u);  // NaN, inf
    if (ax >= 0x477ff000u) return sign | 0x7c00u;  // rounds to inf (65520 and beyond)
    if (ax < 0x38800000u) {  // below 2^-14: an f16 subnormal (or zero); |f| * 2^24 is exact
        return sign | uint(roundEven(uintBitsToFloat(ax) * 16777216.0));
    }
    const uint e = ax - 0x38000000u;  // exponent rebiased from 127 to 15
    return sign | ((e + 0x0fffu + ((e >> 13) & 1u)) >> 13);
}

float nn_bf16_to_f32(uint b) { return uintBitsToFloat(b << 16); }

uint nn_f32_to_bf16(float f) {
    const uint x = floatBitsToUint(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (x >> 16) | 0x40u;  // NaN stays (quiet) NaN
    return (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
}

#if NN_DTYPE == 0
#define NN_T float
#define NN_LOAD(v) (v)
#define NN_STORE(f) (f)
#elif NN_DTYPE == 1
#define NN_T uint16_t
#define NN_LOAD(v) nn_f16_to_f32(uint(v))
#define NN_STORE(f) uint16_t(nn_f32_to_f16(f))
#elif NN_DTYPE == 2
#define NN_T uint16_t
#define NN_LOAD(v) nn_bf16_to_f32(uint(v))
#define NN_STORE(f) uint16_t(nn_f32_to_bf16(f))
#elif NN_DTYPE == 3
#define NN_T int
#define NN_LOAD(v) float(v)
#define NN_STORE(f) int(f)
#endif

#if NN_OUT_DTYPE == 0
#define NN_OUT_T float
#define NN_OUT_LOAD(v) (v)
#define NN_OUT_STORE(f) (f)
#elif NN_OUT_DTYPE == 1
#define NN_OUT_T uint16_t
#define NN_OUT_LOAD(v) nn_f16_to_f32(uint(v))
#define NN_OUT_STORE(f) uint16_t(nn_f32_to_f16(f))
#elif NN_OUT_DTYPE == 2
#define NN_OUT_T uint16_t
#define NN_OUT_LOAD(v) nn_bf16_to_f32(uint(v))
#define NN_OUT_STORE(f) uint16_t(nn_f32_to_bf16(f))
#elif NN_OUT_DTYPE == 3
#define NN_OUT_T int
#define NN_OUT_LOAD(v) float(v)
#define NN_OUT_STORE(f) int(f)
#endif

#endif  // NN_DTYPE_GLSL
