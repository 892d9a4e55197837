#version 450
#extension GL_GOOGLE_include_directive : require
// transpose_2d: y[b][j][i] = x[b][i][j], x [batch][rows][cols]. 32 x 32 tiles through shared
// memory (padded against bank conflicts), 32 x 8 threads; workgroups (cols/32, rows/32, batch),
// z looping over batches beyond the dispatch.
#include "nn_dtype.glsl"
#include "nn_common.glsl"
layout(local_size_x = 32, local_size_y = 8) in;
layout(set = 0, binding = 0, std430) readonly buffer X { NN_T x[]; };
layout(set = 0, binding = 1, std430) writeonly buffer Y { NN_T y[]; };
layout(push_constant) uniform Push { uint batch; uint rows; uint cols; } pc;

shared float tile[32][33];  // f16/bf16 values are exact in float

void main() {
    const uint tx = gl_LocalInvocationID.x, ty = gl_LocalInvocationID.y;
    const uint col0 = gl_WorkGroupID.x * 32, row0 = gl_WorkGroupID.y * 32;
    const uint plane = pc.rows * pc.cols;
    for (uint b = gl_WorkGroupID.z; b < pc.batch; b += gl_NumWorkGroups.z) {
        for (uint r = ty; r < 32; r += 8) {
            const uint row = row0 + r, col = col0 + tx;
            if (row < pc.rows && col < pc.cols) tile[r][tx] = NN_LOAD(x[b * plane + row * pc.cols + col]);
        }
        barrier();
        for (uint c = ty; c < 32; c += 8) {
            const uint col = col0 + c, row = row0 + tx;  // y[b][col][row]
            if (row < pc.rows && col < pc.cols) y[b * plane + col * pc.rows + row] = NN_STORE(tile[tx][c]);
        }
        barrier();
    }
}
