#version 450
// Flash-style attention forward (online softmax) on tensor cores (VK_NV_cooperative_matrix,
// f16 x f16 -> f32, 16 x 16 x 16), for f16 tensors with head_dim a multiple of 16 up to 64 on
// devices with 32-wide subgroups (attention.cpp picks it). Same tensors, push constants and
// results as attention.comp:
//
// q [B][q_len][Hq][D], k and v [B][kv_len][Hkv][D], out like q, lse [B][Hq][q_len] (f32) when
// ATTN_WRITE_LSE. Query t sits at position past + t and sees keys 0 .. past + q_len - 1 (causal:
// 0 .. past + t). Query head h reads kv head h / G, G = Hq / Hkv. A row without a visible key
// gives 0 and lse -inf.
//
// One workgroup of 4 subgroups per (block of BR = 64 queries, query head, batch); subgroup w
// owns queries 16w .. 16w+15, its Q fragments in registers. Per tile of BC = 32 keys (K and V in
// shared memory, rows padded by 16 bytes against bank conflicts): S = Q K^T on tensor cores into
// two 16 x 16 f32 accumulators, through shared memory to the lanes (two per row, 16 keys each:
// scale, causal mask, online max and sum in f32 with one shuffle), P rounded to f16 back to
// shared memory, the row's rescale factor exp(m_old - m_new) applied to the O accumulators
// element by element (which row an accumulator element belongs to is learnt once, by loading a
// matrix whose entries are their row numbers: the element layout is the same for every matrix
// of one type), then O += P V on tensor cores. Finally O / l through shared memory to out.
#extension GL_GOOGLE_include_directive : require
#extension GL_NV_cooperative_matrix : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_control_flow_attributes : require
#include "nn_common.glsl"
#include "nn_dtype.glsl"
layout(local_size_x = 128) in;

// head_dim (specialization constant 1; the push constant `dim` holds the same): 16, 32, 48, 64.
layout(constant_id = 1) const uint HEAD_DIM = 64u;
#include "attention_coopmat.glsl"
const uint BR = 64u, BC = TILE;

layout(std430, set = 0, binding = 0) readonly buffer QueryBuffer { uvec4 q8[]; };
layout(std430, set = 0, binding = 1) readonly buffer KeyBuffer { uvec4 k8[]; };
layout(std430, set = 0, binding = 2) readonly buffer ValueBuffer { uvec4 v8[]; };
layout(std430, set = 0, binding = 3) buffer OutBuffer { NN_T out_rows[]; };  // written only
layout(std430, set = 0, binding = 4) writeonly buffer LseBuffer { float lse[]; };
layout(push_constant) uniform Push {
    uint q_len;
    uint kv_len;
    uint past;
    uint heads_q;
    uint heads_kv;
    uint dim;  // = HEAD_DIM
    uint flags;  // ATTN_CAUSAL | ATTN_WRITE_LSE
    float scale;
} pc;
#define ATTN_CAUSAL 1u
#define ATTN_WRITE_LSE 2u

shared uvec4 q_sh[BR * LD];
shared uvec4 k_sh[BC * LD];
shared uvec4 v_sh[BC * LD];
shared float s_sh[4][16 * SLD];   // a subgroup's scores (and, at the end, one O chunk)
shared uvec4 p_sh[4][16 * PLD];   // a subgroup's probabilities in f16
shared float row_scale[4][16];    // a subgroup's per-row factors for its O accumulators

void main() {
    const float neg_inf = -1.0 / 0.0;
    const uint tid = gl_LocalInvocationID.x;
    const uint warp = tid / 32u, lane = tid % 32u;
    const uint t0 = gl_WorkGroupID.x * BR, h = gl_WorkGroupID.y, b = gl_WorkGroupID.z;
    const uint hk = h / (pc.heads_q / pc.heads_kv);
    const bool causal = (pc.flags & ATTN_CAUSAL) != 0u;

    // The query block into shared memory (zeros past q_len), and the row-number matrix.
    NN_LOAD_ROWS(q_sh, q8, BR, b, pc.q_len, pc.q_len, pc.heads_q, h, t0)
    ACC rows_of;
    NN_ROWS_OF()
    barrier();
    HALF qa0, qa1, qa2, qa3;
    coopMatLoadNV(qa0, q_sh, warp * 16u * LD, LD, false);
    if (DC > 1) coopMatLoadNV(qa1, q_sh, warp * 16u * LD + 2u, LD, false);
    if (DC > 2) coopMatLoadNV(qa2, q_sh, warp * 16u * LD + 4u, LD, false);
    if (DC > 3) coopMatLoadNV(qa3, q_sh, warp * 16u * LD + 6u, LD, false);
    ACC o0 = ACC(0.0), o1 = ACC(0.0), o2 = ACC(0.0), o3 = ACC(0.0);

    // This lane's row of the subgroup's 16 and its half of a tile's keys.
    const uint r = lane / 2u, half_cols = (lane % 2u) * 16u;
    const uint t = t0 + warp * 16u + r, position = pc.past + t;
    float m_i = neg_inf, l_i = 0.0;

    const uint q_last = min(pc.q_len, t0 + BR);
    const uint keys_valid = pc.past + pc.q_len;  // keys from here on are never read
    const uint kv_end = causal ? min(keys_valid, pc.past + q_last) : keys_valid;
    uvec4 k_next[FETCH], v_next[FETCH];
    if (kv_end > 0u) {
        NN_FETCH_TILE(k_next, k8, b, pc.kv_len, keys_valid, pc.heads_kv, hk, 0u)
        NN_FETCH_TILE(v_next, v8, b, pc.kv_len, keys_valid, pc.heads_kv, hk, 0u)
    }
    for (uint j0 = 0u; j0 < kv_end; j0 += BC) {
        barrier();  // every subgroup is done with the previous tile
        NN_PUT_TILE(k_sh, k_next)
        NN_PUT_TILE(v_sh, v_next)
        barrier();
        if (j0 + BC < kv_end) {  // the next tile's loads, in flight during this one
            NN_FETCH_TILE(k_next, k8, b, pc.kv_len, keys_valid, pc.heads_kv, hk, j0 + BC)
            NN_FETCH_TILE(v_next, v8, b, pc.kv_len, keys_valid, pc.heads_kv, hk, j0 + BC)
        }

        // S = Q K^T for keys j0 .. j0+15 (s0) and j0+16 .. j0+31 (s1): K^T is K read column-major.
        ACC s0 = ACC(0.0), s1 = ACC(0.0);
        HALF kb;
#define NN_QK(c)                                                  \
        coopMatLoadNV(kb, k_sh, (c) * 2u, LD, true);              \
        s0 = coopMatMulAddNV(qa##c, kb, s0);                      \
        coopMatLoadNV(kb, k_sh, 16u * LD + (c) * 2u, LD, true);   \
        s1 = coopMatMulAddNV(qa##c, kb, s1);
        FOR_CHUNKS(NN_QK)
        coopMatStoreNV(s0, s_sh[warp], 0, SLD, false);
        coopMatStoreNV(s1, s_sh[warp], 16, SLD, false);
        subgroupMemoryBarrierShared();
        subgroupBarrier();

        // Online softmax of this lane's 16 scores; the row's two lanes combine by one shuffle.
        float s[16];
        float tile_max = neg_inf;
        [[unroll]] for (uint e = 0u; e < 16u; ++e) {
            const uint j = j0 + half_cols + e;
            const bool visible = j < keys_valid && (!causal || j <= position);
            s[e] = visible ? s_sh[warp][r * SLD + half_cols + e] * pc.scale : neg_inf;
            tile_max = max(tile_max, s[e]);
        }
        tile_max = max(tile_max, subgroupShuffleXor(tile_max, 1u));
        const float m_new = max(m_i, tile_max);
        const float alpha = m_new == neg_inf ? 1.0 : exp(m_i - m_new);
        float sum = 0.0;
        uint packed[8];
        [[unroll]] for (uint e = 0u; e < 16u; e += 2u) {
            const float p0 = s[e] == neg_inf ? 0.0 : exp(s[e] - m_new);
            const float p1 = s[e + 1u] == neg_inf ? 0.0 : exp(s[e + 1u] - m_new);
            sum += p0 + p1;
            packed[e / 2u] = packHalf2x16(vec2(p0, p1));
        }
        sum += subgroupShuffleXor(sum, 1u);
        l_i = l_i * alpha + sum;
        m_i = m_new;
        p_sh[warp][r * PLD + half_cols / 8u] = uvec4(packed[0], packed[1], packed[2], packed[3]);
        p_sh[warp][r * PLD + half_cols / 8u + 1u] = uvec4(packed[4], packed[5], packed[6], packed[7]);
        if (half_cols == 0u) row_scale[warp][r] = alpha;
        subgroupMemoryBarrierShared();
        subgroupBarrier();

        // O = diag(alpha) O + P V.
        HALF pa0, pa1, vb;
        coopMatLoadNV(pa0, p_sh[warp], 0, PLD, false);
        coopMatLoadNV(pa1, p_sh[warp], 2, PLD, false);
#define NN_PV(c)                                                                     \
        NN_SCALE_ROWS(o##c, row_scale[warp])                                         \
        coopMatLoadNV(vb, v_sh, (c) * 2u, LD, false);                                \
        o##c = coopMatMulAddNV(pa0, vb, o##c);                                       \
        coopMatLoadNV(vb, v_sh, 16u * LD + (c) * 2u, LD, false);                     \
        o##c = coopMatMulAddNV(pa1, vb, o##c);
        FOR_CHUNKS(NN_PV)
    }

    // O / l, lse = m + log l; a row that saw no key gives 0 and -inf.
    if (half_cols == 0u) {
        row_scale[warp][r] = l_i > 0.0 ? 1.0 / l_i : 0.0;
        if ((pc.flags & ATTN_WRITE_LSE) != 0u && t < pc.q_len)
            lse[(b * pc.heads_q + h) * pc.q_len + t] = l_i > 0.0 ? m_i + log(l_i) : neg_inf;
    }
    subgroupMemoryBarrierShared();
    subgroupBarrier();
#define NN_OUT(c)                                                                                    \
    NN_SCALE_ROWS(o##c, row_scale[warp])                                                             \
    NN_STORE_CHUNK(out_rows, o##c, c, 1.0, false, b, pc.q_len, pc.heads_q, h, t0 + warp * 16u)
    FOR_CHUNKS(NN_OUT)
}
