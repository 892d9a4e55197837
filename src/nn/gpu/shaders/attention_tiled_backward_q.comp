#version 450
// Attention backward (FlashAttention-2), dq, with register tiles: what
// attention_backward_q.comp computes (same tensors and push constants; dq += scale dS k), for
// head_dim a power of two <= 64 where the device has subgroup shuffles (attention.cpp picks it).
//
// One workgroup of 128 invocations per (block of BQ = 32 queries, query head, batch) loops over
// the blocks of BK = 32 keys its queries see. Invocation (qg, kg) (qg < 16, kg < 8; numbered
// through the subgroups as in attention_tiled.comp) owns queries 2qg, 2qg+1: per key block it
// computes S and dP for them and keys 4kg .. +3 (2 x 4 each), then P and dS, and adds over the
// block's 32 keys into its queries' dq at columns 4kg .. +3 and 32 + 4kg .. +3, fetching each
// key's dS from the invocation that holds it by a subgroup shuffle.
// Shared memory: q^T and dout^T (D x 32, read as vec2 per query pair), the block's k and v rows
// (32 x D, swizzled as in attention_tiled_backward_kv.comp): 32 KiB at D = 64.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#include "nn_common.glsl"
#include "nn_dtype.glsl"
layout(local_size_x = 128) in;

#define BK 32u
#define BQ 32u
layout(constant_id = 1) const uint HEAD_DIM = 64u;  // a power of two <= 64
const uint SWIZZLE = (HEAD_DIM - 1u) & 31u;  // min(D, 32) - 1 for a power of two D

layout(std430, set = 0, binding = 0) readonly buffer QueryBuffer { NN_T q[]; };
layout(std430, set = 0, binding = 1) readonly buffer KeyBuffer { NN_T k[]; };
layout(std430, set = 0, binding = 2) readonly buffer ValueBuffer { NN_T v[]; };
layout(std430, set = 0, binding = 3) readonly buffer DoutBuffer { NN_T dout[]; };
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

shared vec2 q_t[HEAD_DIM * (BQ / 2u)];  // q_t[d * 16 + qg]: queries 2qg, 2qg+1 at element d
shared vec2 do_t[HEAD_DIM * (BQ / 2u)];
shared float k_rows[BK * HEAD_DIM];     // [j * D + (d ^ (j & SWIZZLE))]
shared float v_rows[BK * HEAD_DIM];

uint at(uint j, uint d) { return j * HEAD_DIM + (d ^ (j & SWIZZLE)); }

void main() {
    const float neg_inf = -1.0 / 0.0;
    const uint tid = gl_LocalInvocationID.x;
    const uint lin = gl_SubgroupID * gl_SubgroupSize + gl_SubgroupInvocationID;
    const uint qg = lin / 8u;
    const uint kg = lin % 8u;
    const uint lane_base = gl_SubgroupInvocationID & ~7u;
    const uint group = pc.heads_q / pc.heads_kv;
    const uint h = gl_WorkGroupID.y;
    const uint kv_head = h / group;
    const uint b = gl_WorkGroupID.z;
    const uint t0 = gl_WorkGroupID.x * BQ;
    const bool causal = (pc.flags & ATTN_CAUSAL) != 0u;

    for (uint e = tid; e < BQ * HEAD_DIM; e += 128u) {
        const uint i = e % BQ;
        const uint d = e / BQ;
        const uint t = t0 + i;
        const uint index = ((b * pc.seq + t) * pc.heads_q + h) * HEAD_DIM + d;
        q_t[d * (BQ / 2u) + i / 2u][i % 2u] = t < pc.seq ? NN_LOAD(q[index]) : 0.0;
        do_t[d * (BQ / 2u) + i / 2u][i % 2u] = t < pc.seq ? NN_LOAD(dout[index]) : 0.0;
    }
    const uint my_t[2] = uint[2](t0 + 2u * qg, t0 + 2u * qg + 1u);
    float row_lse[2], row_delta[2];
    [[unroll]] for (uint x = 0u; x < 2u; ++x) {
        row_lse[x] = my_t[x] < pc.seq ? lse[(b * pc.heads_q + h) * pc.seq + my_t[x]] : neg_inf;
        row_delta[x] = my_t[x] < pc.seq ? delta[(b * pc.heads_q + h) * pc.seq + my_t[x]] : 0.0;
    }

    vec4 acc[2][2];  // [query][column group]
    [[unroll]] for (uint x = 0u; x < 2u; ++x) acc[x][0] = acc[x][1] = vec4(0.0);

    const uint key_end = causal ? min(pc.seq, t0 + BQ) : pc.seq;
    for (uint key0 = 0u; key0 < key_end; key0 += BK) {
        barrier();  // the previous tile's readers are done
        for (uint e = tid; e < BK * HEAD_DIM; e += 128u) {
            const uint j = e / HEAD_DIM;
            const uint d = e % HEAD_DIM;
            const uint key = key0 + j;
            const uint index = ((b * pc.seq + key) * pc.heads_kv + kv_head) * HEAD_DIM + d;
            k_rows[at(j, d)] = key < pc.seq ? NN_LOAD(k[index]) : 0.0;
            v_rows[at(j, d)] = key < pc.seq ? NN_LOAD(v[index]) : 0.0;
        }
        barrier();
        vec4 s[2], dp[2];  // [query] over keys 4kg .. +3
        s[0] = s[1] = dp[0] = dp[1] = vec4(0.0);
        for (uint d = 0u; d < HEAD_DIM; ++d) {
            const vec2 qd = q_t[d * (BQ / 2u) + qg];
            const vec2 dod = do_t[d * (BQ / 2u) + qg];
            const vec4 kd = vec4(k_rows[at(kg * 4u, d)], k_rows[at(kg * 4u + 1u, d)], k_rows[at(kg * 4u + 2u, d)],
                                 k_rows[at(kg * 4u + 3u, d)]);
            const vec4 vd = vec4(v_rows[at(kg * 4u, d)], v_rows[at(kg * 4u + 1u, d)], v_rows[at(kg * 4u + 2u, d)],
                                 v_rows[at(kg * 4u + 3u, d)]);
            s[0] += qd.x * kd;
            s[1] += qd.y * kd;
            dp[0] += dod.x * vd;
            dp[1] += dod.y * vd;
        }
        vec4 ds[2];
        [[unroll]] for (uint x = 0u; x < 2u; ++x) {
            [[unroll]] for (uint y = 0u; y < 4u; ++y) {
                const uint key = key0 + kg * 4u + y;
                const bool visible =
                    my_t[x] < pc.seq && key < pc.seq && (!causal || key <= my_t[x]) && row_lse[x] != neg_inf;
                const float p = visible ? exp(s[x][y] * pc.scale - row_lse[x]) : 0.0;
                ds[x][y] = p * (dp[x][y] - row_delta[x]);
            }
        }
        // Keys j4 .. j4+3 come from one invocation's ds, components 0..3: constant indices (a
        // component indexed by j % 4 put ds in local memory, 112 bytes, on NVIDIA's driver).
        for (uint j4 = 0u; j4 < BK; j4 += 4u) {
            const uint source = lane_base | (j4 / 4u);
            [[unroll]] for (uint y = 0u; y < 4u; ++y) {
                const uint j = j4 + y;
                const float ds0 = subgroupShuffle(ds[0][y], source);
                const float ds1 = subgroupShuffle(ds[1][y], source);
                [[unroll]] for (uint c = 0u; c < 2u; ++c) {
                    const uint column = kg * 4u + 32u * c;
                    if (column < HEAD_DIM) {
                        const vec4 kr = vec4(k_rows[at(j, column)], k_rows[at(j, column + 1u)],
                                             k_rows[at(j, column + 2u)], k_rows[at(j, column + 3u)]);
                        acc[0][c] += ds0 * kr;
                        acc[1][c] += ds1 * kr;
                    }
                }
            }
        }
    }

    [[unroll]] for (uint x = 0u; x < 2u; ++x) {
        if (my_t[x] >= pc.seq) continue;
        const uint base = ((b * pc.seq + my_t[x]) * pc.heads_q + h) * HEAD_DIM;
        [[unroll]] for (uint c = 0u; c < 2u; ++c) {
            const uint column = kg * 4u + 32u * c;
            if (column >= HEAD_DIM) continue;
            [[unroll]] for (uint y = 0u; y < 4u; ++y)
                dq[base + column + y] = NN_STORE(NN_LOAD(dq[base + column + y]) + pc.scale * acc[x][c][y]);
        }
    }
}
