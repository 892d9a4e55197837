#version 450
// y = softmax(x) per row of x [rows][n] (max subtracted; -inf entries give 0, a row of only
// -inf gives zeros). y may be x itself. f32 arithmetic on any storage dtype.
#extension GL_GOOGLE_include_directive : require
#include "nn_common.glsl"
#include "nn_dtype.glsl"
#include "softmax_team.glsl"

layout(std430, set = 0, binding = 0) readonly buffer X { NN_T x[]; };
layout(std430, set = 0, binding = 1) buffer Y { NN_T y[]; };
layout(push_constant) uniform Push {
    uint rows;
    uint n;
    uint team;  // subgroups per row (power of two)
} pc;

void main() {
    Team tm = make_team(pc.team);
    uint team = tm.size;
    uint lane = tm.lane;
    uint rows_per_group = tm.rows_per_group;
    for (uint first = gl_WorkGroupID.x * rows_per_group; first < pc.rows;
         first += gl_NumWorkGroups.x * rows_per_group) {
        uint row = first + tm.slot;
        bool live = row < pc.rows && tm.slot < rows_per_group;
        uint base = row * pc.n;
        float m = -1.0 / 0.0;
        if (live)
            for (uint j = lane; j < pc.n; j += team) m = max(m, NN_LOAD(x[base + j]));
        m = team_max(m, tm);
        bool empty = isinf(m) && m < 0.0;  // only -inf: every probability 0
        float s = 0.0;
        if (live && !empty)
            for (uint j = lane; j < pc.n; j += team) s += exp(NN_LOAD(x[base + j]) - m);
        s = team_sum(s, tm);
        if (live) {
            float inv = empty ? 0.0 : 1.0 / s;
            for (uint j = lane; j < pc.n; j += team)
                y[base + j] = NN_STORE(empty ? 0.0 : exp(NN_LOAD(x[base + j]) - m) * inv);
        }
    }
}
