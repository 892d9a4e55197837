#version 450
#extension GL_GOOGLE_include_directive : require
// global_norm_squared in two deterministic passes.
// Pass 1 (norm_squared_<dtype>): workgroup g sums x[i]^2 over its CHUNK = 4096 elements from base
//   (thread t: elements t, t + 256, ... in order; then a fixed tree) into partials[offset + g].
// Pass 2 (norm_squared_total, NN_TOTAL): one workgroup sums partials[0 .. n) the same way
//   into out[0] (f32). The partition depends on the sizes only, never on the device.
#include "nn_dtype.glsl"
#include "nn_common.glsl"
layout(local_size_x = 256) in;
#ifdef NN_TOTAL
layout(set = 0, binding = 0, std430) readonly buffer Partials { float x[]; };
layout(set = 0, binding = 1, std430) writeonly buffer Out { float result[]; };
layout(push_constant) uniform Push { uint n; } pc;
#else
layout(set = 0, binding = 0, std430) readonly buffer X { NN_T x[]; };
layout(set = 0, binding = 1, std430) writeonly buffer Partials { float result[]; };
layout(push_constant) uniform Push { uint n; uint offset; uint base; } pc;  // elements base .. n
#endif
const uint CHUNK = 4096;
shared float partial[256];

void main() {
    const uint t = gl_LocalInvocationID.x;
    float sum = 0.0;
#ifdef NN_TOTAL
    for (uint i = t; i < pc.n; i += 256) sum += x[i];
#else
    const uint begin = pc.base + gl_WorkGroupID.x * CHUNK;
    const uint end = min(begin + CHUNK, pc.n);
    for (uint i = begin + t; i < end; i += 256) {
        const float v = NN_LOAD(x[i]);
        sum += v * v;
    }
#endif
    partial[t] = sum;
    barrier();
    for (uint half_size = 128; half_size > 0; half_size /= 2) {
        if (t < half_size) partial[t] += partial[t + half_size];
        barrier();
    }
#ifdef NN_TOTAL
    if (t == 0) result[0] = partial[0];
#else
    if (t == 0) result[pc.offset + gl_WorkGroupID.x] = partial[0];
#endif
}
