#version 450
#extension GL_GOOGLE_include_directive : require
// bias_add: x[r][j] += bias[j], x of `n` elements in rows of `cols`. Grid-stride loop.
#include "nn_dtype.glsl"
#include "nn_common.glsl"
layout(local_size_x = 256) in;
layout(set = 0, binding = 0, std430) buffer X { NN_T x[]; };
layout(set = 0, binding = 1, std430) readonly buffer Bias { NN_T bias[]; };
layout(push_constant) uniform Push { uint n; uint cols; } pc;

void main() {
    const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint i = gl_GlobalInvocationID.x; i < pc.n; i += stride) {
        x[i] = NN_STORE(NN_LOAD(x[i]) + NN_LOAD(bias[i % pc.cols]));
    }
}
