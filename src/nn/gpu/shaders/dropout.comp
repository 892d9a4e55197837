#version 450
#extension GL_GOOGLE_include_directive : require
// dropout: y[i] = keep(i) ? x[i] * scale : 0, keep(i) = (triple32(triple32(i) ^ key) >> 8) >=
// threshold: src/nn/dropout_mask.hpp's DropoutMask, which computes key, threshold and scale on
// the host (the conformance suite checks the masks agree bit for bit). x and y may be one buffer.
#include "nn_dtype.glsl"
#include "nn_common.glsl"
layout(local_size_x = 256) in;
layout(set = 0, binding = 0, std430) buffer X { NN_T x[]; };
layout(set = 0, binding = 1, std430) buffer Y { NN_T y[]; };
layout(push_constant) uniform Push { uint n; uint key; uint threshold; float scale; } pc;

#define NN_TRIPLE32_SIGNATURE uint triple32(uint v)
#include "triple32.glsl"

void main() {
    const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint i = gl_GlobalInvocationID.x; i < pc.n; i += stride) {
        const bool keep = (triple32(triple32(i) ^ pc.key) >> 8) >= pc.threshold;
        y[i] = NN_STORE(keep ? NN_LOAD(x[i]) * pc.scale : 0.0);
    }
}
