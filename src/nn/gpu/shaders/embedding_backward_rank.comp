#version 450
// embedding_backward, pass 1 of 5: workgroup w takes the tokens of span w (tokens w*span ..
// (w+1)*span - 1; span a multiple of 256) and writes span_counts[w][v] = how many of them have
// id v, and rank[t] = how many tokens before t in its span have t's id. Tokens go in chunks of
// 256, in order; within a chunk a token counts the equal ids before it. span_counts must be
// zero on entry. An id outside [0, vocab) is reported and skipped (rank unset).
#extension GL_GOOGLE_include_directive : require
#include "nn_common.glsl"
#define NN_KERNEL_EMBEDDING_BACKWARD 15u  // KernelId::embedding_backward (backend.hpp)
layout(local_size_x = 256) in;

layout(std430, set = 0, binding = 0) readonly buffer Ids { int ids[]; };
layout(std430, set = 0, binding = 1) coherent buffer SpanCounts { uint span_counts[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Rank { uint rank[]; };
layout(push_constant) uniform Push {
    uint tokens;
    uint vocab;
    uint dim;
    uint span;
} pc;

shared int chunk_ids[256];

void main() {
    uint i = gl_LocalInvocationID.x;
    const uint begin = gl_WorkGroupID.x * pc.span, end = min(pc.tokens, begin + pc.span);
    const uint counts = gl_WorkGroupID.x * pc.vocab;  // this span's row of span_counts
    for (uint first = begin; first < end; first += 256u) {
        uint t = first + i;
        int id = -1;
        if (t < end) {
            id = ids[t];
            if (id < 0 || uint(id) >= pc.vocab) {
                nn_report_error(NN_ERROR_ID_OUT_OF_RANGE, NN_KERNEL_EMBEDDING_BACKWARD, id, t, pc.vocab);
                id = -1;
            }
        }
        chunk_ids[i] = id;
        barrier();
        uint before = 0u;
        bool last = true;
        if (id >= 0) {
            for (uint j = 0u; j < i; ++j) before += chunk_ids[j] == id ? 1u : 0u;
            for (uint j = i + 1u; j < 256u; ++j) last = last && chunk_ids[j] != id;
        }
        uint base = id >= 0 ? span_counts[counts + uint(id)] : 0u;
        barrier();
        if (id >= 0) {
            rank[t] = base + before;
            if (last) span_counts[counts + uint(id)] = base + before + 1u;
        }
        memoryBarrierBuffer();
        barrier();
    }
}
