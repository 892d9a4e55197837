// tapevm compiled kernel: gradient+values, double, 2 instructions, 1 inputs, 1 outputs
#version 450
#extension GL_GOOGLE_include_directive : require
#define REAL double
#define REAL_IS_DOUBLE 1
#include "ops.glsl"
layout(local_size_x = 64) in;
#include "push_constants.h"
layout(std430, set = 0, binding = 4) readonly buffer Inputs { REAL inputs[]; };
layout(std430, set = 0, binding = 5) readonly buffer Params { REAL params[]; };
layout(std430, set = 0, binding = 6) readonly buffer Extra0 { REAL extra0[]; };
layout(std430, set = 0, binding = 7) readonly buffer Extra1 { REAL extra1[]; };
layout(std430, set = 0, binding = 8) writeonly buffer Results { REAL results[]; };
layout(std430, set = 0, binding = 9) writeonly buffer Values { REAL values[]; };
bool tvc_truth(REAL x) { return !(x == REAL(0)); }

void main() {
    uint tv_hide = pc.points >> 31u;
    uint local_lane = gl_LocalInvocationID.x;
    uint group_first = gl_WorkGroupID.x * 64u;
    uint group_points = min(64u, pc.points - group_first);
    bool in_chunk = local_lane < group_points;
    uint lane = group_first + min(local_lane, group_points - 1u);
    uint in_base = lane * 1u;
    precise REAL g0_1 = REAL(1);
    REAL v0 = inputs[in_base + 0u];
    REAL v1 = tv_value_exp(v0);
    REAL p1_0;
    tv_partials_exp(REAL(0), v1, p1_0);
    precise REAL g0_0 = tv_contribution(p1_0, g0_1);
    if (in_chunk) values[lane * 1u + 0u] = v1;
    if (in_chunk) results[lane * 1u + 0u] = g0_0;
}
