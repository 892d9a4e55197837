#version 450
// Pass 1 of dgamma / dbeta for layer_norm and rms_norm: one invocation per (column j, block b
// of block_rows consecutive rows) writes
//   partial[b][j]          = sum over the block's rows, in order, of dy * xhat
//   partial[blocks + b][j] = sum of dy (layer_norm with beta only)
// Blocks depend on the row count only, so the result does not depend on the dispatch.
#extension GL_GOOGLE_include_directive : require
#include "nn_common.glsl"
#include "nn_dtype.glsl"
layout(local_size_x = 64) in;

layout(std430, set = 0, binding = 0) readonly buffer Dy { NN_T dy[]; };
layout(std430, set = 0, binding = 1) readonly buffer X { NN_T x[]; };
layout(std430, set = 0, binding = 2) readonly buffer Mean { float mean_in[]; };  // unused for rms
layout(std430, set = 0, binding = 3) readonly buffer Rstd { float rstd_in[]; };
layout(std430, set = 0, binding = 4) writeonly buffer Partial { float partial[]; };
layout(push_constant) uniform Push {
    uint rows;
    uint n;
    uint block_rows;
    uint blocks;
    uint flags;  // NORM_HAS_BETA | NORM_RMS
} pc;
#define NORM_HAS_BETA 1u
#define NORM_RMS 2u

void main() {
    bool rms = (pc.flags & NORM_RMS) != 0u;
    // Grid-stride over columns and blocks: the dispatch may be capped at 65535 groups per axis.
    for (uint b = gl_GlobalInvocationID.y; b < pc.blocks; b += gl_NumWorkGroups.y) {
        uint end = min(pc.rows, (b + 1u) * pc.block_rows);
        for (uint j = gl_GlobalInvocationID.x; j < pc.n; j += gl_NumWorkGroups.x * gl_WorkGroupSize.x) {
            float g = 0.0;
            float d = 0.0;
            for (uint r = b * pc.block_rows; r < end; ++r) {
                float dyv = NN_LOAD(dy[r * pc.n + j]);
                float mean = rms ? 0.0 : mean_in[r];
                g += dyv * (NN_LOAD(x[r * pc.n + j]) - mean) * rstd_in[r];
                d += dyv;
            }
            partial[b * pc.n + j] = g;
            if ((pc.flags & NORM_HAS_BETA) != 0u) partial[(pc.blocks + b) * pc.n + j] = d;
        }
    }
}
