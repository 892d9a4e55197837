#version 450
// Pass 2 of dgamma / dbeta: dgamma[j] += sum over blocks b, in order, of partial[b][j];
// dbeta[j] += sum of partial[blocks + b][j] (when NORM_HAS_BETA).
#extension GL_GOOGLE_include_directive : require
#include "nn_common.glsl"
#include "nn_dtype.glsl"
layout(local_size_x = 64) in;

layout(std430, set = 0, binding = 0) readonly buffer Partial { float partial[]; };
layout(std430, set = 0, binding = 1) buffer Dgamma { NN_T dgamma[]; };
layout(std430, set = 0, binding = 2) buffer Dbeta { NN_T dbeta[]; };  // any buffer without beta
layout(push_constant) uniform Push {
    uint rows;
    uint n;
    uint block_rows;
    uint blocks;
    uint flags;
} pc;
#define NORM_HAS_BETA 1u

void main() {
    for (uint j = gl_GlobalInvocationID.x; j < pc.n; j += gl_NumWorkGroups.x * gl_WorkGroupSize.x) {
        float g = 0.0;
        for (uint b = 0u; b < pc.blocks; ++b) g += partial[b * pc.n + j];
        dgamma[j] = NN_STORE(NN_LOAD(dgamma[j]) + g);
        if ((pc.flags & NORM_HAS_BETA) != 0u) {
            float d = 0.0;
            for (uint b = 0u; b < pc.blocks; ++b) d += partial[(pc.blocks + b) * pc.n + j];
            dbeta[j] = NN_STORE(NN_LOAD(dbeta[j]) + d);
        }
    }
}
