#version 450
#extension GL_GOOGLE_include_directive : require
// matmul's split-K second pass: C[i] = alpha sum over s < slices of partials[s][i] (in order
// of s: deterministic) + beta C[i] (C not read when beta is 0) + bias[i % n] (when bias != 0),
// C and bias of NN_DTYPE.
#include "nn_dtype.glsl"
#include "nn_common.glsl"
layout(local_size_x = 256) in;
layout(set = 0, binding = 0, std430) readonly buffer Partials { float partials[]; };
layout(set = 0, binding = 1, std430) buffer C { NN_T c[]; };
layout(set = 0, binding = 2, std430) readonly buffer Bias { NN_T bias[]; };
layout(push_constant) uniform Push { uint mn; uint slices; float alpha; float beta; uint n; uint bias; } pc;

void main() {
    const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint i = gl_GlobalInvocationID.x; i < pc.mn; i += stride) {
        float sum = 0.0;
        for (uint s = 0; s < pc.slices; ++s) sum += partials[s * pc.mn + i];
        float value = pc.alpha * sum;
        if (pc.beta != 0.0) value += pc.beta * NN_LOAD(c[i]);
        if (pc.bias != 0u) value += NN_LOAD(bias[i % pc.n]);
        c[i] = NN_STORE(value);
    }
}
