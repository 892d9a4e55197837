#version 450
// embedding_backward, pass 4 of 5: order[offsets[ids[t]] + span_counts[t / span][ids[t]] +
// rank[t]] = t, so order lists the tokens grouped by id, each group in token order.
#extension GL_GOOGLE_include_directive : require
#include "nn_common.glsl"
layout(local_size_x = 256) in;

layout(std430, set = 0, binding = 0) readonly buffer Ids { int ids[]; };
layout(std430, set = 0, binding = 1) readonly buffer Offsets { uint offsets[]; };
layout(std430, set = 0, binding = 2) readonly buffer Rank { uint rank[]; };
layout(std430, set = 0, binding = 3) writeonly buffer Order { uint order[]; };
layout(std430, set = 0, binding = 4) readonly buffer SpanCounts { uint span_counts[]; };
layout(push_constant) uniform Push {
    uint tokens;
    uint vocab;
    uint dim;
    uint span;
} pc;

void main() {
    for (uint t = gl_GlobalInvocationID.x; t < pc.tokens; t += gl_NumWorkGroups.x * gl_WorkGroupSize.x) {
        int id = ids[t];
        if (id >= 0 && uint(id) < pc.vocab)
            order[offsets[uint(id)] + span_counts[(t / pc.span) * pc.vocab + uint(id)] + rank[t]] = t;
    }
}
