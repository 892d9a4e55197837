#version 450
// Attention backward, pass 1: delta[b][h][t] (f32) = sum over d of dout * out, for the rows
// of out and dout [B][T][Hq][D]. One invocation per row.
#extension GL_GOOGLE_include_directive : require
#include "nn_common.glsl"
#include "nn_dtype.glsl"
layout(local_size_x = 64) in;

layout(std430, set = 0, binding = 0) readonly buffer OutBuffer { NN_T out_rows[]; };
layout(std430, set = 0, binding = 1) readonly buffer DoutBuffer { NN_T dout[]; };
layout(std430, set = 0, binding = 2) writeonly buffer DeltaBuffer { float delta[]; };
layout(push_constant) uniform Push {
    uint batch;
    uint seq;
    uint heads_q;
    uint heads_kv;
    uint dim;
    uint flags;
    float scale;
} pc;

void main() {
    uint rows = pc.batch * pc.seq * pc.heads_q;
    for (uint r = gl_GlobalInvocationID.x; r < rows; r += gl_NumWorkGroups.x * gl_WorkGroupSize.x) {
        uint h = r % pc.heads_q;
        uint t = (r / pc.heads_q) % pc.seq;
        uint b = r / (pc.heads_q * pc.seq);
        float sum = 0.0;
        for (uint d = 0u; d < pc.dim; ++d) sum += NN_LOAD(dout[r * pc.dim + d]) * NN_LOAD(out_rows[r * pc.dim + d]);
        delta[(b * pc.heads_q + h) * pc.seq + t] = sum;
    }
}
