#version 450
#extension GL_GOOGLE_include_directive : require
// reduce_sum: y[o][c][i] (=|+=) sum over r in chunk c of x[o][r][i], the n rows cut into
// `chunks` chunks of `chunk_rows` (the last may be shorter; chunks = 1: the whole axis, y is
// [outer][inner]). A workgroup of COLS x LANES threads (specialization constants 0 and 1,
// COLS * LANES = 256) owns COLS consecutive i of one (o, c): lane l sums rows l, l + LANES, ...
// of the chunk in order, then the lanes' sums are added in a fixed tree in shared memory. The
// partition depends only on the shape and the constants (chosen by the host from the shape),
// never on the device: deterministic. x is NN_DTYPE, y NN_OUT_DTYPE (f32 partials).
#include "nn_dtype.glsl"
#include "nn_common.glsl"
layout(local_size_x_id = 0, local_size_y_id = 1) in;
layout(constant_id = 0) const uint COLS = 32;
layout(constant_id = 1) const uint LANES = 8;
layout(set = 0, binding = 0, std430) readonly buffer X { NN_T x[]; };
layout(set = 0, binding = 1, std430) buffer Y { NN_OUT_T y[]; };
layout(push_constant) uniform Push { uint outer; uint n; uint inner; uint accumulate; uint chunks; uint chunk_rows; } pc;

shared float partial[COLS * LANES];

void main() {
    const uint col = gl_LocalInvocationID.x;
    const uint lane = gl_LocalInvocationID.y;
    const uint i = gl_WorkGroupID.x * COLS + col;
    for (uint oc = gl_WorkGroupID.y; oc < pc.outer * pc.chunks; oc += gl_NumWorkGroups.y) {
        const uint o = oc / pc.chunks;
        const uint first = (oc % pc.chunks) * pc.chunk_rows;
        const uint end = min(pc.n, first + pc.chunk_rows);
        float sum = 0.0;
        if (i < pc.inner) {
            const uint base = o * pc.n * pc.inner + i;
            for (uint r = first + lane; r < end; r += LANES) sum += NN_LOAD(x[base + r * pc.inner]);
        }
        partial[lane * COLS + col] = sum;
        barrier();
        for (uint half_lanes = LANES / 2; half_lanes > 0; half_lanes /= 2) {
            if (lane < half_lanes) partial[lane * COLS + col] += partial[(lane + half_lanes) * COLS + col];
            barrier();
        }
        if (lane == 0 && i < pc.inner) {
            const uint at = oc * pc.inner + i;
            const float total = partial[col];
            y[at] = NN_OUT_STORE(pc.accumulate != 0u ? NN_OUT_LOAD(y[at]) + total : total);
        }
        barrier();
    }
}
