#version 450
#extension GL_GOOGLE_include_directive : require
// add_assign: dst[i] += alpha * src[i] in f32 (one dtype). Grid-stride loop over `n` elements.
#include "nn_dtype.glsl"
#include "nn_common.glsl"
layout(local_size_x = 256) in;
layout(set = 0, binding = 0, std430) buffer Dst { NN_T dst[]; };
layout(set = 0, binding = 1, std430) readonly buffer Src { NN_T src[]; };
layout(push_constant) uniform Push { uint n; float alpha; } pc;

void main() {
    const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint i = gl_GlobalInvocationID.x; i < pc.n; i += stride) {
        dst[i] = NN_STORE(NN_LOAD(dst[i]) + pc.alpha * NN_LOAD(src[i]));
    }
}
