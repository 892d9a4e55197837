#version 450
// layer_norm and rms_norm forward per row of x [rows][n]:
//   layer: y = (x - mean) * rstd * gamma (+ beta), rstd = 1 / sqrt(biased var + eps)
//   rms:   y = x * rstd * gamma,                   rstd = 1 / sqrt(mean(x^2) + eps)
// mean (layer only) and rstd are f32 [rows]. y may be x itself.
#extension GL_GOOGLE_include_directive : require
#include "nn_common.glsl"
#include "nn_dtype.glsl"
#include "softmax_team.glsl"

layout(std430, set = 0, binding = 0) readonly buffer X { NN_T x[]; };
layout(std430, set = 0, binding = 1) readonly buffer Gamma { NN_T gamma[]; };
layout(std430, set = 0, binding = 2) readonly buffer Beta { NN_T beta[]; };  // any buffer without beta
layout(std430, set = 0, binding = 3) buffer Y { NN_T y[]; };
layout(std430, set = 0, binding = 4) writeonly buffer Mean { float mean_out[]; };  // unused for rms
layout(std430, set = 0, binding = 5) writeonly buffer Rstd { float rstd_out[]; };
layout(push_constant) uniform Push {
    uint rows;
    uint n;
    uint team;  // subgroups per row (power of two)
    uint flags;  // NORM_HAS_BETA | NORM_RMS
    float eps;
} pc;
#define NORM_HAS_BETA 1u
#define NORM_RMS 2u

void main() {
    Team tm = make_team(pc.team);
    uint team = tm.size;
    uint lane = tm.lane;
    uint rows_per_group = tm.rows_per_group;
    bool rms = (pc.flags & NORM_RMS) != 0u;
    bool has_beta = (pc.flags & NORM_HAS_BETA) != 0u;
    float inv_n = 1.0 / float(pc.n);
    for (uint first = gl_WorkGroupID.x * rows_per_group; first < pc.rows;
         first += gl_NumWorkGroups.x * rows_per_group) {
        uint row = first + tm.slot;
        bool live = row < pc.rows && tm.slot < rows_per_group;
        uint base = row * pc.n;
        float mean = 0.0;
        if (!rms) {
            float s = 0.0;
            if (live)
                for (uint j = lane; j < pc.n; j += team) s += NN_LOAD(x[base + j]);
            mean = team_sum(s, tm) * inv_n;
        }
        float sq = 0.0;
        if (live)
            for (uint j = lane; j < pc.n; j += team) {
                float d = NN_LOAD(x[base + j]) - mean;
                sq += d * d;
            }
        float rstd = 1.0 / sqrt(team_sum(sq, tm) * inv_n + pc.eps);
        if (live) {
            for (uint j = lane; j < pc.n; j += team) {
                float v = (NN_LOAD(x[base + j]) - mean) * rstd * NN_LOAD(gamma[j]);
                if (has_beta) v += NN_LOAD(beta[j]);
                y[base + j] = NN_STORE(v);
            }
            if (lane == 0u) {
                if (!rms) mean_out[row] = mean;
                rstd_out[row] = rstd;
            }
        }
    }
}
