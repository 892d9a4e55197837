// tapevm compiled kernel: hvp, float, 9 instructions, 2 inputs, 1 outputs
#version 450
#extension GL_GOOGLE_include_directive : require
#define REAL float
#define REAL_IS_DOUBLE 0
#include "ops.glsl"
#include "dual_ops.glsl"
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
        vec4 quad = inputs4[group_first * 2u / 4u + q];
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
    Dual v0 = Dual(tile[in_base + 0u], extra1[lane * 2u + 0u]);
    Dual v1 = Dual(tile[in_base + 1u], extra1[lane * 2u + 1u]);
    REAL sin0, cos0;
    tv_sincos(v0.v, sin0, cos0);
    Dual v2 = Dual(sin0, tv_contribution(cos0, v0.t));
    Dual v3 = Dual(cos0, tv_contribution(-sin0, v0.t));
    Dual v4 = td_value_mul(v2, v3, td_const(REAL(0)), 0);
    Dual v5 = td_const(uintBitsToFloat((0x40000000u ^ tv_hide)) /* 2 */);
    Dual v6 = td_value_add(v0, v5, td_const(REAL(0)), 0);
    Dual v7 = td_value_div(v1, v6, td_const(REAL(0)), 0);
    Dual v8 = td_value_add(v4, v7, td_const(REAL(0)), 0);
    Dual g8 = td_const(REAL(0));
    g8 = td_add(g8, td_const(extra0[lane * 1u + 0u]));
    Dual g4 = td_const(REAL(0));
    Dual g7 = td_const(REAL(0));
    bool z8 = td_is_zero(g8);
    Dual q8_0, q8_1, q8_2;
    td_partials_add(v4, v7, td_const(REAL(0)), 0, v8, q8_0, q8_1, q8_2);
    g4 = z8 ? g4 : td_add(g4, td_contribution(q8_0, g8));
    g7 = z8 ? g7 : td_add(g7, td_contribution(q8_1, g8));
    Dual g1 = td_const(REAL(0));
    Dual g6 = td_const(REAL(0));
    bool z7 = td_is_zero(g7);
    Dual q7_0, q7_1, q7_2;
    td_partials_div(v1, v6, td_const(REAL(0)), 0, v7, q7_0, q7_1, q7_2);
    g1 = z7 ? g1 : td_add(g1, td_contribution(q7_0, g7));
    g6 = z7 ? g6 : td_add(g6, td_contribution(q7_1, g7));
    Dual g0 = td_const(REAL(0));
    bool z6 = td_is_zero(g6);
    Dual q6_0, q6_1, q6_2;
    td_partials_add(v0, v5, td_const(REAL(0)), 0, v6, q6_0, q6_1, q6_2);
    g0 = z6 ? g0 : td_add(g0, td_contribution(q6_0, g6));
    Dual g2 = td_const(REAL(0));
    Dual g3 = td_const(REAL(0));
    bool z4 = td_is_zero(g4);
    Dual q4_0, q4_1, q4_2;
    td_partials_mul(v2, v3, td_const(REAL(0)), 0, v4, q4_0, q4_1, q4_2);
    g2 = z4 ? g2 : td_add(g2, td_contribution(q4_0, g4));
    g3 = z4 ? g3 : td_add(g3, td_contribution(q4_1, g4));
    bool z3 = td_is_zero(g3);
    Dual q3_0 = td_neg(Dual(sin0, tv_contribution(cos0, v0.t)));
    g0 = z3 ? g0 : td_add(g0, td_contribution(q3_0, g3));
    bool z2 = td_is_zero(g2);
    Dual q2_0 = Dual(cos0, tv_contribution(-sin0, v0.t));
    g0 = z2 ? g0 : td_add(g0, td_contribution(q2_0, g2));
    barrier();
    tile[local_lane * 3u + 0u] = g0.t;
    tile[local_lane * 3u + 1u] = g1.t;
    barrier();
    for (uint q = local_lane; q < group_points * 2u / 4u; q += 64u) {
        vec4 quad;
        for (uint k = 0u; k < 4u; ++k) {
            uint i = 4u * q + k, row = i / 2u, column = i - row * 2u;
            quad[k] = tile[row * 3u + column];
        }
        results4[group_first * 2u / 4u + q] = quad;
    }
    for (uint i = group_points * 2u / 4u * 4u + local_lane; i < group_points * 2u; i += 64u) {
        uint row = i / 2u, column = i - row * 2u;
        results[group_first * 2u + i] = tile[row * 3u + column];
    }
}
