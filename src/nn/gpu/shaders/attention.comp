#version 450
// Flash-style attention forward (online softmax), for attention and kv_attention.
//
// q [B][q_len][Hq][D], k and v [B][kv_len][Hkv][D] (kv_len: the tensor's extent, T for
// attention, Tmax for a cache), out like q; lse [B][Hq][q_len] (f32) when ATTN_WRITE_LSE.
// Query t sits at position past + t and sees keys 0 .. past + q_len - 1 (causal: 0 .. past + t).
// Query head h reads kv head h / G, G = Hq / Hkv.
//
// One workgroup per (block of ROWS query rows, kv head, batch): its rows are the (t, head in
// group) pairs r = t * G + hg, so the G query heads sharing a kv head share its K/V tiles.
// 128 invocations: 8 per row. Per tile of KEYS keys: K into shared, scores, the online softmax
// update, V into the same shared tile, then P V into per-invocation accumulators (columns
// lane, lane + 8, ...). A row without a visible key gives 0 and lse -inf. D <= 128.
#extension GL_GOOGLE_include_directive : require
#include "nn_common.glsl"
#include "nn_dtype.glsl"
layout(local_size_x = 128) in;

#define ROWS 16u
#define KEYS 32u
#define LANES 8u
#define MAX_DIM 128u
#define MAX_COLUMNS (MAX_DIM / LANES)
// head_dim (specialization constant 1; the push constant `dim` holds the same): loops over the
// head's elements and this invocation's columns unroll with known bounds.
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

shared float q_tile[ROWS * (MAX_DIM + 1u)];
shared float kv_tile[KEYS * (MAX_DIM + 1u)];
shared float scores[ROWS * KEYS];
shared float probs[ROWS * KEYS];

void main() {
    const float neg_inf = -1.0 / 0.0;
    uint tid = gl_LocalInvocationID.x;
    uint row = tid / LANES;
    uint lane = tid % LANES;
    uint group = pc.heads_q / pc.heads_kv;
    uint kv_head = gl_WorkGroupID.y;
    uint b = gl_WorkGroupID.z;
    uint stride = HEAD_DIM + 1u;  // padded shared rows: no bank conflicts across rows
    uint total_rows = pc.q_len * group;
    uint first_row = gl_WorkGroupID.x * ROWS;
    uint keys_valid = pc.past + pc.q_len;

    // This invocation's row: query t, head h, position pos.
    uint r = first_row + row;
    bool live = r < total_rows;
    uint t = live ? r / group : 0u;
    uint h = kv_head * group + (live ? r % group : 0u);
    uint pos = pc.past + t;
    bool causal = (pc.flags & ATTN_CAUSAL) != 0u;

    for (uint e = tid; e < ROWS * HEAD_DIM; e += 128u) {
        uint rr = e / HEAD_DIM;
        uint d = e - rr * HEAD_DIM;
        uint gr = first_row + rr;
        float value = 0.0;
        if (gr < total_rows) {
            uint tt = gr / group;
            uint hh = kv_head * group + gr % group;
            value = NN_LOAD(q[((b * pc.q_len + tt) * pc.heads_q + hh) * HEAD_DIM + d]);
        }
        q_tile[rr * stride + d] = value;
    }

    // The last key any row of the block sees (exclusive bound).
    uint last_row = min(total_rows, first_row + ROWS) - 1u;
    uint key_end = causal ? min(keys_valid, pc.past + last_row / group + 1u) : keys_valid;

    float m = neg_inf;  // running max of the row's scaled scores
    float l = 0.0;      // running sum of exp(score - m)
    float acc[MAX_COLUMNS];
    for (uint c = 0u; c < MAX_COLUMNS; ++c) acc[c] = 0.0;

    for (uint key0 = 0u; key0 < key_end; key0 += KEYS) {
        barrier();  // the previous tile's readers are done with kv_tile and probs
        for (uint e = tid; e < KEYS * HEAD_DIM; e += 128u) {
            uint j = e / HEAD_DIM;
            uint d = e - j * HEAD_DIM;
            uint key = key0 + j;
            kv_tile[j * stride + d] =
                key < key_end ? NN_LOAD(k[((b * pc.kv_len + key) * pc.heads_kv + kv_head) * HEAD_DIM + d]) : 0.0;
        }
        barrier();
        float dot[KEYS / LANES];  // keys lane, lane + 8, ...: each q element loaded once
        for (uint jj = 0u; jj < KEYS / LANES; ++jj) dot[jj] = 0.0;
        for (uint d = 0u; d < HEAD_DIM; ++d) {
            float qd = q_tile[row * stride + d];
            for (uint jj = 0u; jj < KEYS / LANES; ++jj) dot[jj] += qd * kv_tile[(lane + jj * LANES) * stride + d];
        }
        for (uint jj = 0u; jj < KEYS / LANES; ++jj) {
            uint j = lane + jj * LANES;
            uint key = key0 + j;
            bool visible = live && key < keys_valid && (!causal || key <= pos);
            scores[row * KEYS + j] = visible ? dot[jj] * pc.scale : neg_inf;
        }
        barrier();
        // Online softmax: every lane of a row computes the same max from the same values.
        float tile_max = neg_inf;
        for (uint j = 0u; j < KEYS; ++j) tile_max = max(tile_max, scores[row * KEYS + j]);
        float m_new = max(m, tile_max);
        float m_safe = m_new == neg_inf ? 0.0 : m_new;
        float alpha = exp(m - m_safe);  // 0 while m is -inf
        for (uint jj = 0u; jj < KEYS / LANES; ++jj) {
            uint j = lane + jj * LANES;
            probs[row * KEYS + j] = exp(scores[row * KEYS + j] - m_safe);
        }
        for (uint e = tid; e < KEYS * HEAD_DIM; e += 128u) {
            uint j = e / HEAD_DIM;
            uint d = e - j * HEAD_DIM;
            uint key = key0 + j;
            kv_tile[j * stride + d] =
                key < key_end ? NN_LOAD(v[((b * pc.kv_len + key) * pc.heads_kv + kv_head) * HEAD_DIM + d]) : 0.0;
        }
        barrier();
        float tile_sum = 0.0;
        for (uint j = 0u; j < KEYS; ++j) tile_sum += probs[row * KEYS + j];
        l = l * alpha + tile_sum;
        m = m_new;
        for (uint c = 0u; c < MAX_COLUMNS; ++c) acc[c] *= alpha;
        for (uint j = 0u; j < KEYS; ++j) {
            float p = probs[row * KEYS + j];
            for (uint c = 0u; c < MAX_COLUMNS; ++c) {
                uint d = lane + c * LANES;
                if (d < HEAD_DIM) acc[c] += p * kv_tile[j * stride + d];
            }
        }
    }

    if (!live) return;
    float inv = l > 0.0 ? 1.0 / l : 0.0;
    for (uint c = 0u; c < MAX_COLUMNS; ++c) {
        uint d = lane + c * LANES;
        if (d < HEAD_DIM) out_rows[((b * pc.q_len + t) * pc.heads_q + h) * HEAD_DIM + d] = NN_STORE(acc[c] * inv);
    }
    if ((pc.flags & ATTN_WRITE_LSE) != 0u && lane == 0u)
        lse[(b * pc.heads_q + h) * pc.q_len + t] = l > 0.0 ? m + log(l) : neg_inf;
}
