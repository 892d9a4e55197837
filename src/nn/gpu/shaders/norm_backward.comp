#version 450
// dx of layer_norm and rms_norm per row of [rows][n], from the saved mean and rstd:
//   xhat = (x - mean) * rstd (rms: x * rstd), g = dy * gamma
//   layer: dx += (g - mean(g) - xhat * mean(g * xhat)) * rstd
//   rms:   dx += (g - xhat * mean(g * xhat)) * rstd
#extension GL_GOOGLE_include_directive : require
#include "nn_common.glsl"
#include "nn_dtype.glsl"
#include "softmax_team.glsl"

layout(std430, set = 0, binding = 0) readonly buffer Dy { NN_T dy[]; };
layout(std430, set = 0, binding = 1) readonly buffer X { NN_T x[]; };
layout(std430, set = 0, binding = 2) readonly buffer Gamma { NN_T gamma[]; };
layout(std430, set = 0, binding = 3) readonly buffer Mean { float mean_in[]; };  // unused for rms
layout(std430, set = 0, binding = 4) readonly buffer Rstd { float rstd_in[]; };
layout(std430, set = 0, binding = 5) buffer Dx { NN_T dx[]; };
layout(push_constant) uniform Push {
    uint rows;
    uint n;
    uint team;  // subgroups per row (power of two)
    uint flags;  // NORM_RMS
} pc;
#define NORM_RMS 2u

void main() {
    Team tm = make_team(pc.team);
    uint team = tm.size;
    uint lane = tm.lane;
    uint rows_per_group = tm.rows_per_group;
    bool rms = (pc.flags & NORM_RMS) != 0u;
    float inv_n = 1.0 / float(pc.n);
    for (uint first = gl_WorkGroupID.x * rows_per_group; first < pc.rows;
         first += gl_NumWorkGroups.x * rows_per_group) {
        uint row = first + tm.slot;
        bool live = row < pc.rows && tm.slot < rows_per_group;
        uint base = row * pc.n;
        float mean = (live && !rms) ? mean_in[row] : 0.0;
        float rstd = live ? rstd_in[row] : 0.0;
        float g_sum = 0.0;
        float gx_sum = 0.0;
        if (live)
            for (uint j = lane; j < pc.n; j += team) {
                float g = NN_LOAD(dy[base + j]) * NN_LOAD(gamma[j]);
                g_sum += g;
                gx_sum += g * (NN_LOAD(x[base + j]) - mean) * rstd;
            }
        float g_mean = rms ? 0.0 : team_sum(g_sum, tm) * inv_n;
        float gx_mean = team_sum(gx_sum, tm) * inv_n;
        if (live)
            for (uint j = lane; j < pc.n; j += team) {
                float g = NN_LOAD(dy[base + j]) * NN_LOAD(gamma[j]);
                float xhat = (NN_LOAD(x[base + j]) - mean) * rstd;
                dx[base + j] = NN_STORE(NN_LOAD(dx[base + j]) + (g - g_mean - xhat * gx_mean) * rstd);
            }
    }
}
