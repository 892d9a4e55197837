#version 450
#extension GL_GOOGLE_include_directive : require
// copy: dst[i] = src[i] converted from NN_DTYPE to NN_OUT_DTYPE (same-dtype copies are
// transfer copies instead). Grid-stride loop over `n` elements.
#include "nn_dtype.glsl"
#include "nn_common.glsl"
layout(local_size_x = 256) in;
layout(set = 0, binding = 0, std430) readonly buffer Src { NN_T src[]; };
layout(set = 0, binding = 1, std430) writeonly buffer Dst { NN_OUT_T dst[]; };
layout(push_constant) uniform Push { uint n; } pc;

void main() {
    const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint i = gl_GlobalInvocationID.x; i < pc.n; i += stride) {
#if NN_DTYPE == 3 || NN_OUT_DTYPE == 3
        dst[i] = NN_OUT_T(src[i]);
#else
        dst[i] = NN_OUT_STORE(NN_LOAD(src[i]));
#endif
    }
}
