#version 450
// Attention backward (FlashAttention-2), dk and dv, on tensor cores (VK_NV_cooperative_matrix,
// f16 x f16 -> f32, 16 x 16 x 16): what attention_backward_kv.comp computes (same tensors, push
// constants, flags and accumulation: dk += scale dS^T q, dv += P^T dout) for f16 tensors with
// head_dim a multiple of 16 up to 64 on devices with 32-wide subgroups (attention.cpp).
//
// One workgroup of 4 subgroups per (block of 64 keys, kv head, batch); subgroup w owns keys
// 16w .. 16w+15 with their K and V fragments in registers and dK, dV accumulators. It loops,
// in a fixed order, over the query heads of the group and the tiles of 32 queries that see its
// keys (no two workgroups add into one element: deterministic, no atomics). Per tile (q and
// dout rows in shared memory, padded): S^T = K Q^T and dP^T = V dout^T on tensor cores, through
// shared memory to the lanes (two per key, 16 queries each) for P^T = exp(scale S^T - lse) and
// dS^T = P^T (dP^T - delta) in f32, both rounded to f16 into shared memory, then
// dV += P^T dout and dK += dS^T Q on tensor cores.
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
const uint BK = 64u, BQ = TILE;

layout(std430, set = 0, binding = 0) readonly buffer QueryBuffer { uvec4 q8[]; };
layout(std430, set = 0, binding = 1) readonly buffer KeyBuffer { uvec4 k8[]; };
layout(std430, set = 0, binding = 2) readonly buffer ValueBuffer { uvec4 v8[]; };
layout(std430, set = 0, binding = 3) readonly buffer DoutBuffer { uvec4 dout8[]; };
layout(std430, set = 0, binding = 4) readonly buffer LseBuffer { float lse[]; };
layout(std430, set = 0, binding = 5) readonly buffer DeltaBuffer { float delta[]; };
layout(std430, set = 0, binding = 6) buffer DkBuffer { NN_T dk[]; };
layout(std430, set = 0, binding = 7) buffer DvBuffer { NN_T dv[]; };
layout(push_constant) uniform Push {
    uint batch;
    uint seq;
    uint heads_q;
    uint heads_kv;
    uint dim;  // = HEAD_DIM
    uint flags;  // ATTN_CAUSAL | ATTN_WRITE_DK | ATTN_WRITE_DV
    float scale;
} pc;
#define ATTN_CAUSAL 1u
#define ATTN_WRITE_DK 4u
#define ATTN_WRITE_DV 8u

shared uvec4 kv_sh[BK * LD];      // K, then V, of the block: only to fill the fragments
shared uvec4 q_sh[BQ * LD];
shared uvec4 do_sh[BQ * LD];
shared float lse_sh[BQ], delta_sh[BQ];
shared float s_sh[4][16 * SLD];   // a subgroup's S^T, then dP^T (and, at the end, one output chunk)
shared uvec4 p_sh[4][16 * PLD];   // P^T in f16
shared uvec4 ds_sh[4][16 * PLD];  // dS^T in f16

void main() {
    const float neg_inf = -1.0 / 0.0;
    const uint tid = gl_LocalInvocationID.x;
    const uint warp = tid / 32u, lane = tid % 32u;
    const uint key0 = gl_WorkGroupID.x * BK, kv_head = gl_WorkGroupID.y, b = gl_WorkGroupID.z;
    const uint group = pc.heads_q / pc.heads_kv;
    const bool causal = (pc.flags & ATTN_CAUSAL) != 0u;
    const uint wrow = warp * 16u * LD;

    HALF kf0, kf1, kf2, kf3, vf0, vf1, vf2, vf3;
    NN_LOAD_ROWS(kv_sh, k8, BK, b, pc.seq, pc.seq, pc.heads_kv, kv_head, key0)
    barrier();
#define NN_LOAD_K(c) coopMatLoadNV(kf##c, kv_sh, wrow + (c) * 2u, LD, false);
    FOR_CHUNKS(NN_LOAD_K)
    barrier();
    NN_LOAD_ROWS(kv_sh, v8, BK, b, pc.seq, pc.seq, pc.heads_kv, kv_head, key0)
    barrier();
#define NN_LOAD_V(c) coopMatLoadNV(vf##c, kv_sh, wrow + (c) * 2u, LD, false);
    FOR_CHUNKS(NN_LOAD_V)
    ACC dk0 = ACC(0.0), dk1 = ACC(0.0), dk2 = ACC(0.0), dk3 = ACC(0.0);
    ACC dv0 = ACC(0.0), dv1 = ACC(0.0), dv2 = ACC(0.0), dv3 = ACC(0.0);

    // This lane's key (row of the subgroup's 16) and its half of a tile's queries.
    const uint r = lane / 2u, half_cols = (lane % 2u) * 16u;
    const uint key = key0 + warp * 16u + r;

    // The (query head, query tile) pairs in order; each tile's q and dout rows are fetched into
    // registers during the tile before.
    const uint query_begin = causal ? (key0 / BQ) * BQ : 0u;
    const uint tiles_per_head = (pc.seq - min(query_begin, pc.seq) + BQ - 1u) / BQ;
    const uint tiles = group * tiles_per_head;
    uvec4 q_next[FETCH], do_next[FETCH];
    if (tiles > 0u) {
        NN_FETCH_TILE(q_next, q8, b, pc.seq, pc.seq, pc.heads_q, kv_head * group, query_begin)
        NN_FETCH_TILE(do_next, dout8, b, pc.seq, pc.seq, pc.heads_q, kv_head * group, query_begin)
    }
    for (uint tile = 0u; tile < tiles; ++tile) {
        const uint h = kv_head * group + tile / tiles_per_head;
        const uint t0 = query_begin + (tile % tiles_per_head) * BQ;
        {
            barrier();  // the previous tile's readers are done
            NN_PUT_TILE(q_sh, q_next)
            NN_PUT_TILE(do_sh, do_next)
            if (tid < BQ) {
                const uint t = t0 + tid;
                lse_sh[tid] = t < pc.seq ? lse[(b * pc.heads_q + h) * pc.seq + t] : neg_inf;
                delta_sh[tid] = t < pc.seq ? delta[(b * pc.heads_q + h) * pc.seq + t] : 0.0;
            }
            barrier();
            if (tile + 1u < tiles) {
                const uint h_next = kv_head * group + (tile + 1u) / tiles_per_head;
                const uint t_next = query_begin + ((tile + 1u) % tiles_per_head) * BQ;
                NN_FETCH_TILE(q_next, q8, b, pc.seq, pc.seq, pc.heads_q, h_next, t_next)
                NN_FETCH_TILE(do_next, dout8, b, pc.seq, pc.seq, pc.heads_q, h_next, t_next)
            }

            // S^T = K Q^T (queries t0 .. +15 in s0, +16 .. +31 in s1): Q^T is q read column-major.
            ACC s0 = ACC(0.0), s1 = ACC(0.0);
            HALF fb;
#define NN_KQ(c)                                                   \
            coopMatLoadNV(fb, q_sh, (c) * 2u, LD, true);           \
            s0 = coopMatMulAddNV(kf##c, fb, s0);                   \
            coopMatLoadNV(fb, q_sh, 16u * LD + (c) * 2u, LD, true); \
            s1 = coopMatMulAddNV(kf##c, fb, s1);
            FOR_CHUNKS(NN_KQ)
            coopMatStoreNV(s0, s_sh[warp], 0, SLD, false);
            coopMatStoreNV(s1, s_sh[warp], 16, SLD, false);
            subgroupMemoryBarrierShared();
            subgroupBarrier();

            float p[16];
            uint packed[8];
            [[unroll]] for (uint e = 0u; e < 16u; ++e) {
                const uint col = half_cols + e, t = t0 + col;
                const bool visible = t < pc.seq && key < pc.seq && (!causal || key <= t) && lse_sh[col] != neg_inf;
                p[e] = visible ? exp(s_sh[warp][r * SLD + col] * pc.scale - lse_sh[col]) : 0.0;
            }
            [[unroll]] for (uint e = 0u; e < 16u; e += 2u) packed[e / 2u] = packHalf2x16(vec2(p[e], p[e + 1u]));
            p_sh[warp][r * PLD + half_cols / 8u] = uvec4(packed[0], packed[1], packed[2], packed[3]);
            p_sh[warp][r * PLD + half_cols / 8u + 1u] = uvec4(packed[4], packed[5], packed[6], packed[7]);

            // dP^T = V dout^T.
            ACC dp0 = ACC(0.0), dp1 = ACC(0.0);
#define NN_VDO(c)                                                    \
            coopMatLoadNV(fb, do_sh, (c) * 2u, LD, true);            \
            dp0 = coopMatMulAddNV(vf##c, fb, dp0);                   \
            coopMatLoadNV(fb, do_sh, 16u * LD + (c) * 2u, LD, true); \
            dp1 = coopMatMulAddNV(vf##c, fb, dp1);
            FOR_CHUNKS(NN_VDO)
            subgroupMemoryBarrierShared();
            subgroupBarrier();  // every lane has read its scores
            coopMatStoreNV(dp0, s_sh[warp], 0, SLD, false);
            coopMatStoreNV(dp1, s_sh[warp], 16, SLD, false);
            subgroupMemoryBarrierShared();
            subgroupBarrier();
            [[unroll]] for (uint e = 0u; e < 16u; e += 2u) {
                const uint col = half_cols + e;
                const float ds0 = p[e] * (s_sh[warp][r * SLD + col] - delta_sh[col]);
                const float ds1 = p[e + 1u] * (s_sh[warp][r * SLD + col + 1u] - delta_sh[col + 1u]);
                packed[e / 2u] = packHalf2x16(vec2(ds0, ds1));
            }
            ds_sh[warp][r * PLD + half_cols / 8u] = uvec4(packed[0], packed[1], packed[2], packed[3]);
            ds_sh[warp][r * PLD + half_cols / 8u + 1u] = uvec4(packed[4], packed[5], packed[6], packed[7]);
            subgroupMemoryBarrierShared();
            subgroupBarrier();

            // dV += P^T dout, dK += dS^T Q (queries as the inner dimension, two chunks of 16).
            HALF pa0, pa1, da0, da1;
            coopMatLoadNV(pa0, p_sh[warp], 0, PLD, false);
            coopMatLoadNV(pa1, p_sh[warp], 2, PLD, false);
            coopMatLoadNV(da0, ds_sh[warp], 0, PLD, false);
            coopMatLoadNV(da1, ds_sh[warp], 2, PLD, false);
#define NN_ACCUMULATE(c)                                              \
            coopMatLoadNV(fb, do_sh, (c) * 2u, LD, false);            \
            dv##c = coopMatMulAddNV(pa0, fb, dv##c);                  \
            coopMatLoadNV(fb, do_sh, 16u * LD + (c) * 2u, LD, false); \
            dv##c = coopMatMulAddNV(pa1, fb, dv##c);                  \
            coopMatLoadNV(fb, q_sh, (c) * 2u, LD, false);             \
            dk##c = coopMatMulAddNV(da0, fb, dk##c);                  \
            coopMatLoadNV(fb, q_sh, 16u * LD + (c) * 2u, LD, false);  \
            dk##c = coopMatMulAddNV(da1, fb, dk##c);
            FOR_CHUNKS(NN_ACCUMULATE)
        }
    }

    const bool write_dk = (pc.flags & ATTN_WRITE_DK) != 0u, write_dv = (pc.flags & ATTN_WRITE_DV) != 0u;
#define NN_OUT_K(c) NN_STORE_CHUNK(dk, dk##c, c, pc.scale, true, b, pc.seq, pc.heads_kv, kv_head, key0 + warp * 16u)
#define NN_OUT_V(c) NN_STORE_CHUNK(dv, dv##c, c, 1.0, true, b, pc.seq, pc.heads_kv, kv_head, key0 + warp * 16u)
    if (write_dk) {
        FOR_CHUNKS(NN_OUT_K)
    }
    if (write_dv) {
        FOR_CHUNKS(NN_OUT_V)
    }
}
