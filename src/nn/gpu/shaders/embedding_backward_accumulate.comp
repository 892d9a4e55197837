#version 450
// embedding_backward, pass 5 of 5: dtable[v][c] += dout[t][c] for the tokens t of id v, added
// one by one in token order (order[offsets[v] .. offsets[v + 1])), f32, rounded once.
#extension GL_GOOGLE_include_directive : require
#include "nn_common.glsl"
#include "nn_dtype.glsl"
layout(local_size_x = 256) in;

layout(std430, set = 0, binding = 0) readonly buffer Offsets { uint offsets[]; };
layout(std430, set = 0, binding = 1) readonly buffer Order { uint order[]; };
layout(std430, set = 0, binding = 2) readonly buffer Dout { NN_T dout[]; };
layout(std430, set = 0, binding = 3) buffer Dtable { NN_T dtable[]; };
layout(push_constant) uniform Push {
    uint tokens;
    uint vocab;
    uint dim;
} pc;

void main() {
    uint total = pc.vocab * pc.dim;
    for (uint e = gl_GlobalInvocationID.x; e < total; e += gl_NumWorkGroups.x * gl_WorkGroupSize.x) {
        uint v = e / pc.dim;
        uint c = e - v * pc.dim;
        uint begin = offsets[v];
        uint end = offsets[v + 1u];
        if (begin == end) continue;
        float acc = NN_LOAD(dtable[e]);
        for (uint k = begin; k < end; ++k) acc += NN_LOAD(dout[order[k] * pc.dim + c]);
        dtable[e] = NN_STORE(acc);
    }
}
