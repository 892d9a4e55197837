#version 450
// Attention backward (FlashAttention-2), dq, on tensor cores (VK_NV_cooperative_matrix, f16 x
// f16 -> f32, 16 x 16 x 16): what attention_backward_q.comp computes (same tensors and push
// constants; dq += scale dS K) for f16 tensors with head_dim a multiple of 16 up to 64 on
// devices with 32-wide subgroups (attention.cpp).
//
// One workgroup of 4 subgroups per (block of 64 queries, query head, batch); subgroup w owns
// queries 16w .. 16w+15 with their q and dout fragments in registers and a dQ accumulator per
// 16 columns. Per tile of 32 keys (K and V rows in shared memory, padded): S = Q K^T and
// dP = dout V^T on tensor cores, through shared memory to the lanes (two per query, 16 keys
// each) for P = exp(scale S - lse) and dS = P (dP - delta) in f32, dS rounded to f16 into shared
// memory, then dQ += dS K on tensor cores.
#extension GL_GOOGLE_include_directive : require
#extension GL_NV_cooperative_matrix : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_control_flow_attributes : require
#include "nn_common.glsl"
#include "nn_dtype.glsl"
layout(local_size_x = 128) in;

layout(constant_id = 1) const uint HEAD_DIM = 64u;  // 16, 32, 48 or 64
#include "attention_coopmat.glsl"
const uint BR = 64u, BC = TILE;

layout(std430, set = 0, binding = 0) readonly buffer QueryBuffer { uvec4 q8[]; };
layout(std430, set = 0, binding = 1) readonly buffer KeyBuffer { uvec4 k8[]; };
layout(std430, set = 0, binding = 2) readonly buffer ValueBuffer { uvec4 v8[]; };
layout(std430, set = 0, binding = 3) readonly buffer DoutBuffer { uvec4 dout8[]; };
layout(std430, set = 0, binding = 4) readonly buffer LseBuffer { float lse[]; };
layout(std430, set = 0, binding = 5) readonly buffer DeltaBuffer { float delta[]; };
layout(std430, set = 0, binding = 6) buffer DqBuffer { NN_T dq[]; };
layout(push_constant) uniform Push {
    uint batch;
    uint seq;
    uint heads_q;
    uint heads_kv;
    uint dim;  // = HEAD_DIM
    uint flags;  // ATTN_CAUSAL
    float scale;
} pc;
#define ATTN_CAUSAL 1u

shared uvec4 qd_sh[BR * LD];      // q, then dout, of the block: only to fill the fragments
shared uvec4 k_sh[BC * LD];
shared uvec4 v_sh[BC * LD];
shared float s_sh[4][16 * SLD];   // a subgroup's S, then dP (and, at the end, one dq chunk)
shared uvec4 ds_sh[4][16 * PLD];  // dS in f16

void main() {
    const float neg_inf = -1.0 / 0.0;
    const uint tid = gl_LocalInvocationID.x;
    const uint warp = tid / 32u, lane = tid % 32u;
    const uint t0 = gl_WorkGroupID.x * BR, h = gl_WorkGroupID.y, b = gl_WorkGroupID.z;
    const uint hk = h / (pc.heads_q / pc.heads_kv);
    const bool causal = (pc.flags & ATTN_CAUSAL) != 0u;
    const uint wrow = warp * 16u * LD;

    HALF qf0, qf1, qf2, qf3, of0, of1, of2, of3;
    NN_LOAD_ROWS(qd_sh, q8, BR, b, pc.seq, pc.seq, pc.heads_q, h, t0)
    barrier();
#define NN_LOAD_Q(c) coopMatLoadNV(qf##c, qd_sh, wrow + (c) * 2u, LD, false);
    FOR_CHUNKS(NN_LOAD_Q)
    barrier();
    NN_LOAD_ROWS(qd_sh, dout8, BR, b, pc.seq, pc.seq, pc.heads_q, h, t0)
    barrier();
#define NN_LOAD_DO(c) coopMatLoadNV(of##c, qd_sh, wrow + (c) * 2u, LD, false);
    FOR_CHUNKS(NN_LOAD_DO)
    ACC dq0 = ACC(0.0), dq1 = ACC(0.0), dq2 = ACC(0.0), dq3 = ACC(0.0);

    // This lane's query (row of the subgroup's 16), its lse and delta, and its half of a tile's keys.
    const uint r = lane / 2u, half_cols = (lane % 2u) * 16u;
    const uint t = t0 + warp * 16u + r;
    const float row_lse = t < pc.seq ? lse[(b * pc.heads_q + h) * pc.seq + t] : neg_inf;
    const float row_delta = t < pc.seq ? delta[(b * pc.heads_q + h) * pc.seq + t] : 0.0;

    const uint kv_end = causal ? min(pc.seq, t0 + BR) : pc.seq;
    uvec4 k_next[FETCH], v_next[FETCH];
    if (kv_end > 0u) {
        NN_FETCH_TILE(k_next, k8, b, pc.seq, pc.seq, pc.heads_kv, hk, 0u)
        NN_FETCH_TILE(v_next, v8, b, pc.seq, pc.seq, pc.heads_kv, hk, 0u)
    }
    for (uint j0 = 0u; j0 < kv_end; j0 += BC) {
        barrier();  // the previous tile's readers are done
        NN_PUT_TILE(k_sh, k_next)
        NN_PUT_TILE(v_sh, v_next)
        barrier();
        if (j0 + BC < kv_end) {  // the next tile's loads, in flight during this one
            NN_FETCH_TILE(k_next, k8, b, pc.seq, pc.seq, pc.heads_kv, hk, j0 + BC)
            NN_FETCH_TILE(v_next, v8, b, pc.seq, pc.seq, pc.heads_kv, hk, j0 + BC)
        }

        // S = Q K^T and dP = dout V^T (keys j0 .. +15 in x0, +16 .. +31 in x1).
        ACC s0 = ACC(0.0), s1 = ACC(0.0), dp0 = ACC(0.0), dp1 = ACC(0.0);
        HALF fb;
#define NN_QK_DOV(c)                                               \
        coopMatLoadNV(fb, k_sh, (c) * 2u, LD, true);               \
        s0 = coopMatMulAddNV(qf##c, fb, s0);                       \
        coopMatLoadNV(fb, k_sh, 16u * LD + (c) * 2u, LD, true);    \
        s1 = coopMatMulAddNV(qf##c, fb, s1);                       \
        coopMatLoadNV(fb, v_sh, (c) * 2u, LD, true);               \
        dp0 = coopMatMulAddNV(of##c, fb, dp0);                     \
        coopMatLoadNV(fb, v_sh, 16u * LD + (c) * 2u, LD, true);    \
        dp1 = coopMatMulAddNV(of##c, fb, dp1);
        FOR_CHUNKS(NN_QK_DOV)
        coopMatStoreNV(s0, s_sh[warp], 0, SLD, false);
        coopMatStoreNV(s1, s_sh[warp], 16, SLD, false);
        subgroupMemoryBarrierShared();
        subgroupBarrier();
        float p[16];
        [[unroll]] for (uint e = 0u; e < 16u; ++e) {
            const uint j = j0 + half_cols + e;
            const bool visible = j < pc.seq && t < pc.seq && (!causal || j <= t) && row_lse != neg_inf;
            p[e] = visible ? exp(s_sh[warp][r * SLD + half_cols + e] * pc.scale - row_lse) : 0.0;
        }
        subgroupMemoryBarrierShared();
        subgroupBarrier();  // every lane has read its scores
        coopMatStoreNV(dp0, s_sh[warp], 0, SLD, false);
        coopMatStoreNV(dp1, s_sh[warp], 16, SLD, false);
        subgroupMemoryBarrierShared();
        subgroupBarrier();
        uint packed[8];
        [[unroll]] for (uint e = 0u; e < 16u; e += 2u) {
            const float ds0 = p[e] * (s_sh[warp][r * SLD + half_cols + e] - row_delta);
            const float ds1 = p[e + 1u] * (s_sh[warp][r * SLD + half_cols + e + 1u] - row_delta);
            packed[e / 2u] = packHalf2x16(vec2(ds0, ds1));
        }
        ds_sh[warp][r * PLD + half_cols / 8u] = uvec4(packed[0], packed[1], packed[2], packed[3]);
        ds_sh[warp][r * PLD + half_cols / 8u + 1u] = uvec4(packed[4], packed[5], packed[6], packed[7]);
        subgroupMemoryBarrierShared();
        subgroupBarrier();

        // dQ += dS K (keys as the inner dimension, two chunks of 16).
        HALF da0, da1;
        coopMatLoadNV(da0, ds_sh[warp], 0, PLD, false);
        coopMatLoadNV(da1, ds_sh[warp], 2, PLD, false);
#define NN_DQ(c)                                                  \
        coopMatLoadNV(fb, k_sh, (c) * 2u, LD, false);             \
        dq##c = coopMatMulAddNV(da0, fb, dq##c);                  \
        coopMatLoadNV(fb, k_sh, 16u * LD + (c) * 2u, LD, false);  \
        dq##c = coopMatMulAddNV(da1, fb, dq##c);
        FOR_CHUNKS(NN_DQ)
    }

#define NN_OUT_Q(c) NN_STORE_CHUNK(dq, dq##c, c, pc.scale, true, b, pc.seq, pc.heads_q, h, t0 + warp * 16u)
    FOR_CHUNKS(NN_OUT_Q)
}
