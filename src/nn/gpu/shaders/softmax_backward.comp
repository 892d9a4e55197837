#version 450
// dx += y * (dy - sum(dy * y)) per row of [rows][n], y softmax's output.
#extension GL_GOOGLE_include_directive : require
#include "nn_common.glsl"
#include "nn_dtype.glsl"
#include "softmax_team.glsl"

layout(std430, set = 0, binding = 0) readonly buffer Yb { NN_T y[]; };
layout(std430, set = 0, binding = 1) readonly buffer Dy { NN_T dy[]; };
layout(std430, set = 0, binding = 2) buffer Dx { NN_T dx[]; };
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
        float dot_part = 0.0;
        if (live)
            for (uint j = lane; j < pc.n; j += team) dot_part += NN_LOAD(dy[base + j]) * NN_LOAD(y[base + j]);
        float dot_total = team_sum(dot_part, tm);
        if (live)
            for (uint j = lane; j < pc.n; j += team) {
                float yj = NN_LOAD(y[base + j]);
                dx[base + j] = NN_STORE(NN_LOAD(dx[base + j]) + yj * (NN_LOAD(dy[base + j]) - dot_total));
            }
    }
}
