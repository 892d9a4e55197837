// tapevm compiled kernel: jvp, double, 9 instructions, 2 inputs, 1 outputs
#version 450
#extension GL_GOOGLE_include_directive : require
#define REAL double
#define REAL_IS_DOUBLE 1
#include "ops.glsl"
layout(local_size_x = 64) in;
#include "push_constants.h"
layout(std430, set = 0, binding = 4) readonly buffer Inputs { REAL inputs[]; };
layout(std430, set = 0, binding = 4) readonly buffer Inputs4 { dvec4 inputs4[]; };
layout(std430, set = 0, binding = 5) readonly buffer Params { REAL params[]; };
layout(std430, set = 0, binding = 6) readonly buffer Extra0 { REAL extra0[]; };
layout(std430, set = 0, binding = 7) readonly buffer Extra1 { REAL extra1[]; };
layout(std430, set = 0, binding = 8) writeonly buffer Results { REAL results[]; };
layout(std430, set = 0, binding = 9) writeonly buffer Values { REAL values[]; };
shared REAL tile[192];
bool tvc_truth(REAL x) { return !(x == REAL(0)); }

void main() {
    uint tv_hide = pc.points >> 31u;
    uint local_lane = gl_LocalInvocationID.x;
    uint group_first = gl_WorkGroupID.x * 64u;
    uint group_points = min(64u, pc.points - group_first);
    bool in_chunk = local_lane < group_points;
    uint lane = group_first + min(local_lane, group_points - 1u);
    for (uint q = local_lane; q < group_points * 2u / 4u; q += 64u) {
        dvec4 quad = inputs4[group_first * 2u / 4u + q];
        for (uint k = 0u; k < 4u; ++k) {
            uint i = 4u * q + k, row = i / 2u, column = i - row * 2u;
            tile[row * 3u + column] = quad[k];
        }
    }
    for (uint i = group_points * 2u / 4u * 4u + local_lane; i < group_points * 2u; i += 64u) {
        uint row = i / 2u, column = i - row * 2u;
        tile[row * 3u + column] = inputs[group_first * 2u + i];
    }
    barrier();
    uint in_base = local_lane * 3u;
    REAL v0 = tile[in_base + 0u];
    REAL v1 = tile[in_base + 1u];
    REAL sin0, cos0;
    tv_sincos(v0, sin0, cos0);
    REAL v2 = sin0;
    REAL v3 = cos0;
    REAL v4 = tv_value_mul(v2, v3);
    REAL v5 = packDouble2x32(uvec2((0x00000000u ^ tv_hide), (0x40000000u ^ tv_hide))) /* 2 */;
    REAL v6 = tv_value_add(v0, v5);
    REAL v7 = tv_value_div(v1, v6);
    REAL v8 = tv_value_add(v4, v7);
    REAL t0_0 = extra0[lane * 2u + 0u];
    REAL t0_1 = extra0[lane * 2u + 1u];
    REAL p2_0 = cos0;
    precise REAL t0_2 = tv_contribution(p2_0, t0_0);
    REAL p3_0 = -sin0;
    precise REAL t0_3 = tv_contribution(p3_0, t0_0);
    REAL p4_0, p4_1;
    tv_partials_mul(v2, v3, REAL(0), p4_0, p4_1);
    precise REAL t0_4 = tv_contribution(p4_0, t0_2) + tv_contribution(p4_1, t0_3);
    REAL p6_0, p6_1;
    tv_partials_add(REAL(0), REAL(0), REAL(0), p6_0, p6_1);
    precise REAL t0_6 = tv_contribution(p6_0, t0_0);
    REAL p7_0, p7_1;
    tv_partials_div(REAL(0), v6, v7, p7_0, p7_1);
    precise REAL t0_7 = tv_contribution(p7_0, t0_1) + tv_contribution(p7_1, t0_6);
    REAL p8_0, p8_1;
    tv_partials_add(REAL(0), REAL(0), REAL(0), p8_0, p8_1);
    precise REAL t0_8 = tv_contribution(p8_0, t0_4) + tv_contribution(p8_1, t0_7);
    if (in_chunk) results[lane * 1u + 0u] = t0_8;
}
