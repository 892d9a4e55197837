#version 450
// Fused softmax cross-entropy per row of logits [rows][n] with targets i32 [rows]:
//   losses[r] (f32) = logsumexp(row) - logits[r][target], 0 for pad rows (target == pad_id);
//   dlogits (when CE_WRITE_GRAD; may be logits itself) = (softmax(row) - onehot) * dloss,
//   0 for pad rows. A target outside [0, n) other than pad_id is reported; its row gets loss
//   0 and gradient 0.
#extension GL_GOOGLE_include_directive : require
#include "nn_common.glsl"
#define NN_KERNEL_CROSS_ENTROPY 16u  // KernelId::cross_entropy (backend.hpp)
#include "nn_dtype.glsl"
#include "softmax_team.glsl"

layout(std430, set = 0, binding = 0) readonly buffer Logits { NN_T logits[]; };
layout(std430, set = 0, binding = 1) readonly buffer Targets { int targets[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Losses { float losses[]; };
layout(std430, set = 0, binding = 3) buffer Dlogits { NN_T dlogits[]; };
layout(push_constant) uniform Push {
    uint rows;
    uint n;
    uint team;  // subgroups per row (power of two)
    uint flags;  // CE_WRITE_GRAD
    int pad_id;
    float dloss;
} pc;
#define CE_WRITE_GRAD 1u

void main() {
    Team tm = make_team(pc.team);
    uint team = tm.size;
    uint lane = tm.lane;
    uint rows_per_group = tm.rows_per_group;
    bool write_grad = (pc.flags & CE_WRITE_GRAD) != 0u;
    for (uint first = gl_WorkGroupID.x * rows_per_group; first < pc.rows;
         first += gl_NumWorkGroups.x * rows_per_group) {
        uint row = first + tm.slot;
        bool live = row < pc.rows && tm.slot < rows_per_group;
        uint base = row * pc.n;
        int target = live ? targets[row] : pc.pad_id;
        bool skip = target == pc.pad_id;
        if (!skip && (target < 0 || uint(target) >= pc.n)) {
            if (lane == 0u) nn_report_error(NN_ERROR_TARGET_OUT_OF_RANGE, NN_KERNEL_CROSS_ENTROPY, target, row, pc.n);
            skip = true;
        }
        // Read the target's logit before any dlogits (possibly the same memory) is written.
        float target_logit = skip ? 0.0 : NN_LOAD(logits[base + uint(target)]);
        float m = -1.0 / 0.0;
        if (!skip)
            for (uint j = lane; j < pc.n; j += team) m = max(m, NN_LOAD(logits[base + j]));
        m = team_max(m, tm);
        float s = 0.0;
        if (!skip)
            for (uint j = lane; j < pc.n; j += team) s += exp(NN_LOAD(logits[base + j]) - m);
        s = team_sum(s, tm);
        if (live) {
            float lse = m + log(s);
            if (lane == 0u) losses[row] = skip ? 0.0 : lse - target_logit;
            if (write_grad) {
                float inv = 1.0 / s;
                for (uint j = lane; j < pc.n; j += team) {
                    float g = 0.0;
                    if (!skip) {
                        float p = exp(NN_LOAD(logits[base + j]) - m) * inv;
                        g = (p - (j == uint(target) ? 1.0 : 0.0)) * pc.dloss;
                    }
                    dlogits[base + j] = NN_STORE(g);
                }
            }
        }
    }
}
