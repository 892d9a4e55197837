#version 450
// embedding_backward, pass 3 of 5 (ONE workgroup): offsets[v] = sum of counts[0 .. v)
// (offsets has vocab + 1 entries; offsets[vocab] = the number of valid tokens).
#extension GL_GOOGLE_include_directive : require
#include "nn_common.glsl"
layout(local_size_x = 256) in;

layout(std430, set = 0, binding = 0) readonly buffer Counts { uint counts[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Offsets { uint offsets[]; };
layout(push_constant) uniform Push {
    uint tokens;
    uint vocab;
    uint dim;
} pc;

shared uint segment_start[256];

void main() {
    uint i = gl_LocalInvocationID.x;
    uint per = (pc.vocab + 255u) / 256u;
    uint begin = min(pc.vocab, i * per);
    uint end = min(pc.vocab, begin + per);
    uint sum = 0u;
    for (uint v = begin; v < end; ++v) sum += counts[v];
    segment_start[i] = sum;
    barrier();
    if (i == 0u) {
        uint running = 0u;
        for (uint s = 0u; s < 256u; ++s) {
            uint c = segment_start[s];
            segment_start[s] = running;
            running += c;
        }
        offsets[pc.vocab] = running;
    }
    barrier();
    uint running = segment_start[i];
    for (uint v = begin; v < end; ++v) {
        offsets[v] = running;
        running += counts[v];
    }
}
