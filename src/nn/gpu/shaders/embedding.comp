#version 450
// out[t][c] = table[ids[t]][c] for ids i32 [tokens], table [vocab][dim], out [tokens][dim].
// An id outside [0, vocab) leaves its row zero, reads nothing, and reports the error.
#extension GL_GOOGLE_include_directive : require
#include "nn_common.glsl"
#define NN_KERNEL_EMBEDDING 14u  // KernelId::embedding (backend.hpp)
#include "nn_dtype.glsl"
layout(local_size_x = 256) in;

layout(std430, set = 0, binding = 0) readonly buffer Ids { int ids[]; };
layout(std430, set = 0, binding = 1) readonly buffer Table { NN_T table[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Out { NN_T out_rows[]; };
layout(push_constant) uniform Push {
    uint tokens;
    uint vocab;
    uint dim;
} pc;

void main() {
    uint total = pc.tokens * pc.dim;
    for (uint e = gl_GlobalInvocationID.x; e < total; e += gl_NumWorkGroups.x * gl_WorkGroupSize.x) {
        uint t = e / pc.dim;
        uint c = e - t * pc.dim;
        int id = ids[t];
        if (id < 0 || uint(id) >= pc.vocab) {
            out_rows[e] = NN_STORE(0.0);
            if (c == 0u) nn_report_error(NN_ERROR_ID_OUT_OF_RANGE, NN_KERNEL_EMBEDDING, id, t, pc.vocab);
        } else {
            out_rows[e] = table[uint(id) * pc.dim + c];
        }
    }
}
