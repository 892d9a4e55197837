#version 450
// Flash-style attention forward (online softmax) with register tiles, for attention() at
// head_dim <= 64 (a multiple of 4) on devices with subgroup shuffles (attention.cpp picks it;
// attention.comp covers the rest). Same tensors, push constants and results as attention.comp:
//
// q [B][q_len][Hq][D], k and v [B][kv_len][Hkv][D], out like q, lse [B][Hq][q_len] (f32) when
// ATTN_WRITE_LSE. Query t sits at position past + t and sees keys 0 .. past + q_len - 1 (causal:
// 0 .. past + t). Query head h reads kv head h / G, G = Hq / Hkv. A row without a visible key
// gives 0 and lse -inf.
//
// One workgroup of 128 invocations per (block of BR = 64 rows, kv head, batch); rows are the
// (t, head in group) pairs r = t * G + hg so the G query heads of a kv head share its tiles.
// Invocation (rg, cg) (rg < 16, cg < 8, numbered through the subgroups: lin = subgroup id *
// subgroup size + invocation id, so the 8 invocations of a row group are consecutive lanes of
// one subgroup; the host asks for a subgroup size >= 8 that divides 128) owns rows rg*4 .. +3:
// per tile of BC = 32 keys it computes their scores with keys cg*4 .. +3 (4 x 4 in registers:
// S = Q K^T from Q^T and K^T in shared memory, one vec4 of each per 16 products), the rows'
// maximum and sum by shuffles among the 8 (a fixed butterfly: deterministic), and then O += P V
// for columns cg*4 + 32c (c < 2) of its rows, P^T and V in shared memory. Q is scaled on load.
// Shared memory: Q^T 64 x D, K^T (then V) 32 x D, P^T 32 x 64 floats: 32 KiB at D = 64.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#include "nn_common.glsl"
#include "nn_dtype.glsl"
layout(local_size_x = 128) in;

#define BR 64u
#define BC 32u
#define RG (BR / 4u)  // vec4s per row of Q^T and P^T
// head_dim (specialization constant 1; the push constant `dim` holds the same): <= 64, % 4 == 0.
layout(constant_id = 1) const uint HEAD_DIM = 64u;

layout(std430, set = 0, binding = 0) readonly buffer QueryBuffer { NN_T q[]; };
layout(std430, set = 0, binding = 1) readonly buffer KeyBuffer { NN_T k[]; };
layout(std430, set = 0, binding = 2) readonly buffer ValueBuffer { NN_T v[]; };
layout(std430, set = 0, binding = 3) writeonly buffer OutBuffer { NN_T out_rows[]; };
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

shared vec4 q_t[HEAD_DIM * RG];          // q_t[d * RG + g]: rows 4g .. 4g+3 at element d, scaled
shared vec4 kv_tile[BC * HEAD_DIM / 4u];  // K^T: [d * (BC/4) + j/4] keys j; then V: [j * (D/4) + d/4]
shared vec4 p_t[BC * RG];                 // p_t[j * RG + g]: rows 4g .. 4g+3 at key j

void main() {
    const float neg_inf = -1.0 / 0.0;
    const uint tid = gl_LocalInvocationID.x;
    const uint lin = gl_SubgroupID * gl_SubgroupSize + gl_SubgroupInvocationID;
    const uint rg = lin / 8u;
    const uint cg = lin % 8u;
    const uint group = pc.heads_q / pc.heads_kv;
    const uint kv_head = gl_WorkGroupID.y;
    const uint b = gl_WorkGroupID.z;
    const uint total_rows = pc.q_len * group;
    const uint first_row = gl_WorkGroupID.x * BR;
    const uint keys_valid = pc.past + pc.q_len;
    const bool causal = (pc.flags & ATTN_CAUSAL) != 0u;

    // Q^T, scaled (lanes take consecutive rows: conflict-free shared writes).
    for (uint e = tid; e < BR * HEAD_DIM; e += 128u) {
        const uint rr = e % BR;
        const uint d = e / BR;
        const uint r = first_row + rr;
        float value = 0.0;
        if (r < total_rows) {
            const uint t = r / group;
            const uint h = kv_head * group + r % group;
            value = NN_LOAD(q[((b * pc.q_len + t) * pc.heads_q + h) * HEAD_DIM + d]) * pc.scale;
        }
        q_t[d * RG + rr / 4u][rr % 4u] = value;
    }

    // This invocation's rows.
    bool live[4];
    uint pos[4];
    [[unroll]] for (uint i = 0u; i < 4u; ++i) {
        const uint r = first_row + rg * 4u + i;
        live[i] = r < total_rows;
        pos[i] = pc.past + (live[i] ? r / group : 0u);
    }
    const uint last_row = min(total_rows, first_row + BR) - 1u;
    const uint key_end = causal ? min(keys_valid, pc.past + last_row / group + 1u) : keys_valid;

    float m[4], l[4];
    vec4 acc[4][2];
    [[unroll]] for (uint i = 0u; i < 4u; ++i) {
        m[i] = neg_inf;
        l[i] = 0.0;
        acc[i][0] = vec4(0.0);
        acc[i][1] = vec4(0.0);
    }

    for (uint key0 = 0u; key0 < key_end; key0 += BC) {
        barrier();  // the previous tile's readers are done with kv_tile and p_t
        for (uint e = tid; e < BC * HEAD_DIM; e += 128u) {
            const uint j = e % BC;
            const uint d = e / BC;
            const uint key = key0 + j;
            kv_tile[d * (BC / 4u) + j / 4u][j % 4u] =
                key < key_end ? NN_LOAD(k[((b * pc.kv_len + key) * pc.heads_kv + kv_head) * HEAD_DIM + d]) : 0.0;
        }
        barrier();
        vec4 s[4];
        [[unroll]] for (uint i = 0u; i < 4u; ++i) s[i] = vec4(0.0);
        for (uint d = 0u; d < HEAD_DIM; ++d) {
            const vec4 qv = q_t[d * RG + rg];
            const vec4 kv = kv_tile[d * (BC / 4u) + cg];
            s[0] += qv.x * kv;
            s[1] += qv.y * kv;
            s[2] += qv.z * kv;
            s[3] += qv.w * kv;
        }
        vec4 p[4];
        [[unroll]] for (uint i = 0u; i < 4u; ++i) {
            [[unroll]] for (uint c = 0u; c < 4u; ++c) {
                const uint key = key0 + cg * 4u + c;
                const bool visible = live[i] && key < keys_valid && (!causal || key <= pos[i]);
                if (!visible) s[i][c] = neg_inf;
            }
            float tile_max = max(max(s[i].x, s[i].y), max(s[i].z, s[i].w));
            tile_max = max(tile_max, subgroupShuffleXor(tile_max, 1u));
            tile_max = max(tile_max, subgroupShuffleXor(tile_max, 2u));
            tile_max = max(tile_max, subgroupShuffleXor(tile_max, 4u));
            const float m_new = max(m[i], tile_max);
            const float m_safe = m_new == neg_inf ? 0.0 : m_new;
            const float alpha = exp(m[i] - m_safe);  // 0 while m is -inf
            p[i] = exp(s[i] - m_safe);               // 0 where s is -inf
            float tile_sum = (p[i].x + p[i].y) + (p[i].z + p[i].w);
            tile_sum += subgroupShuffleXor(tile_sum, 1u);
            tile_sum += subgroupShuffleXor(tile_sum, 2u);
            tile_sum += subgroupShuffleXor(tile_sum, 4u);
            l[i] = l[i] * alpha + tile_sum;
            m[i] = m_new;
            acc[i][0] *= alpha;
            acc[i][1] *= alpha;
        }
        [[unroll]] for (uint c = 0u; c < 4u; ++c)
            p_t[(cg * 4u + c) * RG + rg] = vec4(p[0][c], p[1][c], p[2][c], p[3][c]);
        barrier();  // K^T read by everyone, P^T written
        for (uint e = tid; e < BC * HEAD_DIM; e += 128u) {
            const uint j = e / HEAD_DIM;
            const uint d = e % HEAD_DIM;
            const uint key = key0 + j;
            kv_tile[j * (HEAD_DIM / 4u) + d / 4u][d % 4u] =
                key < key_end ? NN_LOAD(v[((b * pc.kv_len + key) * pc.heads_kv + kv_head) * HEAD_DIM + d]) : 0.0;
        }
        barrier();
        for (uint j = 0u; j < BC; ++j) {
            const vec4 pj = p_t[j * RG + rg];
            [[unroll]] for (uint c = 0u; c < 2u; ++c) {
                const uint column = cg * 4u + 32u * c;
                if (column < HEAD_DIM) {
                    const vec4 vv = kv_tile[j * (HEAD_DIM / 4u) + column / 4u];
                    acc[0][c] += pj.x * vv;
                    acc[1][c] += pj.y * vv;
                    acc[2][c] += pj.z * vv;
                    acc[3][c] += pj.w * vv;
                }
            }
        }
    }

    [[unroll]] for (uint i = 0u; i < 4u; ++i) {
        if (!live[i]) continue;
        const uint r = first_row + rg * 4u + i;
        const uint t = r / group;
        const uint h = kv_head * group + r % group;
        const float inv = l[i] > 0.0 ? 1.0 / l[i] : 0.0;
        const uint base = ((b * pc.q_len + t) * pc.heads_q + h) * HEAD_DIM;
        [[unroll]] for (uint c = 0u; c < 2u; ++c) {
            const uint column = cg * 4u + 32u * c;
            if (column < HEAD_DIM) {
                [[unroll]] for (uint x = 0u; x < 4u; ++x) out_rows[base + column + x] = NN_STORE(acc[i][c][x] * inv);
            }
        }
        if ((pc.flags & ATTN_WRITE_LSE) != 0u && cg == 0u)
            lse[(b * pc.heads_q + h) * pc.q_len + t] = l[i] > 0.0 ? m[i] + log(l[i]) : neg_inf;
    }
}
