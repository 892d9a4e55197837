#version 450
// embedding_backward, pass 2 of 5: for each id v, span_counts[w][v] becomes the number of
// tokens with id v in the spans before w (an exclusive scan over the spans, in order) and
// counts[v] the number in all of them.
#extension GL_GOOGLE_include_directive : require
#include "nn_common.glsl"
layout(local_size_x = 256) in;

layout(std430, set = 0, binding = 0) buffer SpanCounts { uint span_counts[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Counts { uint counts[]; };
layout(push_constant) uniform Push {
    uint tokens;
    uint vocab;
    uint dim;
    uint span;
} pc;

void main() {
    const uint spans = (pc.tokens + pc.span - 1u) / pc.span;
    for (uint v = gl_GlobalInvocationID.x; v < pc.vocab; v += gl_NumWorkGroups.x * gl_WorkGroupSize.x) {
        uint running = 0u;
        for (uint w = 0u; w < spans; ++w) {
            const uint count = span_counts[w * pc.vocab + v];
            span_counts[w * pc.vocab + v] = running;
            running += count;
        }
        counts[v] = running;
    }
}
