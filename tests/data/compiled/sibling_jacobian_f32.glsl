// tapevm compiled kernel: jacobian-reverse, float, 22 instructions, 3 inputs, 3 outputs
#version 450
#extension GL_GOOGLE_include_directive : require
#define REAL float
#define REAL_IS_DOUBLE 0
#include "ops.glsl"
layout(local_size_x = 64) in;
#include "push_constants.h"
layout(std430, set = 0, binding = 4) readonly buffer Inputs { REAL inputs[]; };
layout(std430, set = 0, binding = 4) readonly buffer Inputs4 { vec4 inputs4[]; };
layout(std430, set = 0, binding = 5) readonly buffer Params { REAL params[]; };
layout(std430, set = 0, binding = 6) readonly buffer Extra0 { REAL extra0[]; };
layout(std430, set = 0, binding = 7) readonly buffer Extra1 { REAL extra1[]; };
layout(std430, set = 0, binding = 8) writeonly buffer Results { REAL results[]; };
layout(std430, set = 0, binding = 8) writeonly buffer Results4 { vec4 results4[]; };
layout(std430, set = 0, binding = 9) writeonly buffer Values { REAL values[]; };
layout(std430, set = 0, binding = 10) buffer Flags { uint diverged[]; };
shared REAL tile[576];
bool tvc_truth(REAL x) { return !(x == REAL(0)); }

void main() {
    uint tv_hide = pc.points >> 31u;
    uint local_lane = gl_LocalInvocationID.x;
    uint group_first = gl_WorkGroupID.x * 64u;
    uint group_points = min(64u, pc.points - group_first);
    bool in_chunk = local_lane < group_points;
    uint lane = group_first + min(local_lane, group_points - 1u);
    for (uint q = local_lane; q < group_points * 3u / 4u; q += 64u) {
        vec4 quad = inputs4[group_first * 3u / 4u + q];
        for (uint k = 0u; k < 4u; ++k) {
            uint i = 4u * q + k, row = i / 3u, column = i - row * 3u;
            tile[row * 3u + column] = quad[k];
        }
    }
    for (uint i = group_points * 3u / 4u * 4u + local_lane; i < group_points * 3u; i += 64u) {
        uint row = i / 3u, column = i - row * 3u;
        tile[row * 3u + column] = inputs[group_first * 3u + i];
    }
    barrier();
    uint in_base = local_lane * 3u;
    uint par_base = pc.params_per_point != 0u ? lane * 1u : 0u;
    precise REAL g0_17 = REAL(1);
    precise REAL g1_20 = REAL(1);
    REAL v0 = tile[in_base + 0u];
    REAL v1 = tile[in_base + 1u];
    REAL v2 = tile[in_base + 2u];
    REAL v3 = params[par_base + 0u];
    REAL sin0, cos0;
    tv_sincos(v0, sin0, cos0);
    REAL v4 = sin0;
    REAL v5 = cos0;
    REAL p17_0, p17_1;
    tv_partials_add(REAL(0), REAL(0), REAL(0), p17_0, p17_1);
    precise REAL g0_11 = tv_contribution(p17_0, g0_17);
    precise REAL g0_16 = tv_contribution(p17_1, g0_17);
    REAL p11_0, p11_1;
    tv_partials_sub(REAL(0), REAL(0), REAL(0), p11_0, p11_1);
    precise REAL g0_10 = tv_contribution(p11_0, g0_11);
    precise REAL g0_7 = tv_contribution(p11_1, g0_11);
    REAL p10_0, p10_1;
    tv_partials_add(REAL(0), REAL(0), REAL(0), p10_0, p10_1);
    precise REAL g0_8 = tv_contribution(p10_0, g0_10);
    precise REAL g0_9 = tv_contribution(p10_1, g0_10);
    REAL p8_0, p8_1;
    tv_partials_mul(v4, v5, REAL(0), p8_0, p8_1);
    precise REAL g0_4 = tv_contribution(p8_0, g0_8);
    precise REAL g0_5 = tv_contribution(p8_1, g0_8);
    REAL p5_0 = -sin0;
    precise REAL g0_0 = tv_contribution(p5_0, g0_5);
    REAL p4_0 = cos0;
    g0_0 += tv_contribution(p4_0, g0_4);
    REAL v6 = tv_value_sinh(v1);
    REAL p9_0, p9_1;
    tv_partials_mul(v3, v6, REAL(0), p9_0, p9_1);
    precise REAL g0_6 = tv_contribution(p9_1, g0_9);
    REAL p7_0 = v6;
    precise REAL g0_1 = tv_contribution(p7_0, g0_7);
    REAL v7 = tv_value_cosh(v1);
    REAL p6_0 = v7;
    g0_1 += tv_contribution(p6_0, g0_6);
    REAL v8 = tv_value_mul(v4, v5);
    REAL v9 = tv_value_mul(v3, v6);
    REAL v10 = tv_value_add(v8, v9);
    REAL v11 = tv_value_sub(v10, v7);
    REAL v12 = uintBitsToFloat((0x00000000u ^ tv_hide)) /* 0 */;
    REAL v13 = tv_value_gt(v2, v12);
    REAL sin2, cos2;
    tv_sincos(v2, sin2, cos2);
    REAL v14 = cos2;
    REAL v15 = sin2;
    REAL p16_0, p16_1;
    tv_partials_mul(v14, v15, REAL(0), p16_0, p16_1);
    precise REAL g0_14 = tv_contribution(p16_0, g0_16);
    precise REAL g0_15 = tv_contribution(p16_1, g0_16);
    REAL p15_0 = cos2;
    precise REAL g0_2 = tv_contribution(p15_0, g0_15);
    REAL p14_0 = -sin2;
    g0_2 += tv_contribution(p14_0, g0_14);
    REAL v16 = tv_value_mul(v14, v15);
    REAL v17 = tv_value_add(v11, v16);
    REAL v18 = tv_value_abs(v1);
    REAL v19 = tv_value_signum(v1);
    REAL p20_0, p20_1;
    tv_partials_add(REAL(0), REAL(0), REAL(0), p20_0, p20_1);
    precise REAL g1_18 = tv_contribution(p20_0, g1_20);
    precise REAL g1_19 = tv_contribution(p20_1, g1_20);
    REAL p18_0 = v19;
    precise REAL g1_1 = tv_contribution(p18_0, g1_18);
    REAL v20 = tv_value_add(v18, v19);
    REAL v21 = uintBitsToFloat((0x40400000u ^ tv_hide)) /* 3 */;
    barrier();
    tile[local_lane * 9u + 0u] = g0_0;
    tile[local_lane * 9u + 1u] = g0_1;
    tile[local_lane * 9u + 2u] = g0_2;
    tile[local_lane * 9u + 3u] = REAL(0);
    tile[local_lane * 9u + 4u] = g1_1;
    tile[local_lane * 9u + 5u] = REAL(0);
    tile[local_lane * 9u + 6u] = REAL(0);
    tile[local_lane * 9u + 7u] = REAL(0);
    tile[local_lane * 9u + 8u] = REAL(0);
    barrier();
    for (uint q = local_lane; q < group_points * 9u / 4u; q += 64u) {
        vec4 quad;
        for (uint k = 0u; k < 4u; ++k) {
            uint i = 4u * q + k, row = i / 9u, column = i - row * 9u;
            quad[k] = tile[row * 9u + column];
        }
        results4[group_first * 9u / 4u + q] = quad;
    }
    for (uint i = group_points * 9u / 4u * 4u + local_lane; i < group_points * 9u; i += 64u) {
        uint row = i / 9u, column = i - row * 9u;
        results[group_first * 9u + i] = tile[row * 9u + column];
    }
    uint failed = (tvc_truth(v13) != true) ? 1u : 0u;
    if (in_chunk) diverged[lane] = failed;
    if (in_chunk && failed != 0u) atomicAdd(diverged[pc.lanes], 1u);
}
