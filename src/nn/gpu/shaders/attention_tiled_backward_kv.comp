#version 450
// Attention backward (FlashAttention-2), dk and dv, with register tiles: what
// attention_backward_kv.comp computes (same tensors, push constants, flags and accumulation:
// dk += scale dS^T q, dv += P^T dout), for head_dim a power of two <= 64 where the device has
// subgroup shuffles (attention.cpp picks it).
//
// One workgroup of 128 invocations per (block of BK = 32 keys, kv head, batch) loops, in a fixed
// order, over the query heads of its group and the blocks of BQ = 32 queries that see its keys
// (no two workgroups add into one element: deterministic, no atomics). Invocation (kg, qg)
// (kg < 16, qg < 8; numbered through the subgroups as in attention_tiled.comp, so the 8 of one
// kg are consecutive lanes) owns keys 2kg, 2kg+1: per query block it computes S^T and dP^T for
// them and queries 4qg .. +3 (2 x 4 each), then P^T and dS^T, and adds over the block's 32
// queries into its keys' dk and dv at columns 4qg .. +3 and 32 + 4qg .. +3, fetching each
// query's P and dS from the invocation that holds it by a subgroup shuffle.
// Shared memory: K^T and V^T (D x 32 each, read as vec2 per key pair), the block's q and dout
// rows (32 x D each, element d of row r at d ^ (r % min(D, 32)): both the row-wise and the
// column-wise reads are free of bank conflicts): 32 KiB at D = 64.
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

shared vec2 k_t[HEAD_DIM * (BK / 2u)];  // k_t[d * 16 + kg]: keys 2kg, 2kg+1 at element d
shared vec2 v_t[HEAD_DIM * (BK / 2u)];
shared float q_rows[BQ * HEAD_DIM];     // [r * D + (d ^ (r & SWIZZLE))]
shared float do_rows[BQ * HEAD_DIM];

uint at(uint r, uint d) { return r * HEAD_DIM + (d ^ (r & SWIZZLE)); }

void main() {
    const float neg_inf = -1.0 / 0.0;
    const uint tid = gl_LocalInvocationID.x;
    const uint lin = gl_SubgroupID * gl_SubgroupSize + gl_SubgroupInvocationID;
    const uint kg = lin / 8u;
    const uint qg = lin % 8u;
    const uint lane_base = gl_SubgroupInvocationID & ~7u;
    const uint group = pc.heads_q / pc.heads_kv;
    const uint kv_head = gl_WorkGroupID.y;
    const uint b = gl_WorkGroupID.z;
    const uint key0 = gl_WorkGroupID.x * BK;
    const bool causal = (pc.flags & ATTN_CAUSAL) != 0u;

    for (uint e = tid; e < BK * HEAD_DIM; e += 128u) {
        const uint j = e % BK;
        const uint d = e / BK;
        const uint key = key0 + j;
        const uint index = ((b * pc.seq + key) * pc.heads_kv + kv_head) * HEAD_DIM + d;
        k_t[d * (BK / 2u) + j / 2u][j % 2u] = key < pc.seq ? NN_LOAD(k[index]) : 0.0;
        v_t[d * (BK / 2u) + j / 2u][j % 2u] = key < pc.seq ? NN_LOAD(v[index]) : 0.0;
    }

    vec4 dk_acc[2][2], dv_acc[2][2];  // [key][column group]
    [[unroll]] for (uint x = 0u; x < 2u; ++x) {
        [[unroll]] for (uint c = 0u; c < 2u; ++c) {
            dk_acc[x][c] = vec4(0.0);
            dv_acc[x][c] = vec4(0.0);
        }
    }
    const uint my_key[2] = uint[2](key0 + 2u * kg, key0 + 2u * kg + 1u);

    const uint query_begin = causal ? (key0 / BQ) * BQ : 0u;
    for (uint hg = 0u; hg < group; ++hg) {
        const uint h = kv_head * group + hg;
        for (uint t0 = query_begin; t0 < pc.seq; t0 += BQ) {
            barrier();  // the previous block's readers are done
            for (uint e = tid; e < BQ * HEAD_DIM; e += 128u) {
                const uint r = e / HEAD_DIM;
                const uint d = e % HEAD_DIM;
                const uint t = t0 + r;
                const uint index = ((b * pc.seq + t) * pc.heads_q + h) * HEAD_DIM + d;
                q_rows[at(r, d)] = t < pc.seq ? NN_LOAD(q[index]) : 0.0;
                do_rows[at(r, d)] = t < pc.seq ? NN_LOAD(dout[index]) : 0.0;
            }
            float row_lse[4], row_delta[4];
            [[unroll]] for (uint i = 0u; i < 4u; ++i) {
                const uint t = t0 + qg * 4u + i;
                row_lse[i] = t < pc.seq ? lse[(b * pc.heads_q + h) * pc.seq + t] : neg_inf;
                row_delta[i] = t < pc.seq ? delta[(b * pc.heads_q + h) * pc.seq + t] : 0.0;
            }
            barrier();
            vec4 s[2], dp[2];  // [key] over queries 4qg .. +3
            s[0] = s[1] = dp[0] = dp[1] = vec4(0.0);
            for (uint d = 0u; d < HEAD_DIM; ++d) {
                const vec2 kd = k_t[d * (BK / 2u) + kg];
                const vec2 vd = v_t[d * (BK / 2u) + kg];
                const vec4 qd = vec4(q_rows[at(qg * 4u, d)], q_rows[at(qg * 4u + 1u, d)],
                                     q_rows[at(qg * 4u + 2u, d)], q_rows[at(qg * 4u + 3u, d)]);
                const vec4 dod = vec4(do_rows[at(qg * 4u, d)], do_rows[at(qg * 4u + 1u, d)],
                                      do_rows[at(qg * 4u + 2u, d)], do_rows[at(qg * 4u + 3u, d)]);
                s[0] += kd.x * qd;
                s[1] += kd.y * qd;
                dp[0] += vd.x * dod;
                dp[1] += vd.y * dod;
            }
            vec4 p[2], ds[2];
            [[unroll]] for (uint x = 0u; x < 2u; ++x) {
                [[unroll]] for (uint i = 0u; i < 4u; ++i) {
                    const uint t = t0 + qg * 4u + i;
                    const bool visible =
                        t < pc.seq && my_key[x] < pc.seq && (!causal || my_key[x] <= t) && row_lse[i] != neg_inf;
                    p[x][i] = visible ? exp(s[x][i] * pc.scale - row_lse[i]) : 0.0;
                    ds[x][i] = p[x][i] * (dp[x][i] - row_delta[i]);
                }
            }
            // Queries r4 .. r4+3 come from one invocation's p and ds, components 0..3: constant
            // indices (a component indexed by r % 4 put them in local memory, 208 bytes, on
            // NVIDIA's driver).
            for (uint r4 = 0u; r4 < BQ; r4 += 4u) {
                const uint source = lane_base | (r4 / 4u);
                [[unroll]] for (uint component = 0u; component < 4u; ++component) {
                    const uint r = r4 + component;
                    const float p0 = subgroupShuffle(p[0][component], source);
                    const float p1 = subgroupShuffle(p[1][component], source);
                    const float ds0 = subgroupShuffle(ds[0][component], source);
                    const float ds1 = subgroupShuffle(ds[1][component], source);
                    [[unroll]] for (uint c = 0u; c < 2u; ++c) {
                        const uint column = qg * 4u + 32u * c;
                        if (column < HEAD_DIM) {
                            const vec4 dor = vec4(do_rows[at(r, column)], do_rows[at(r, column + 1u)],
                                                  do_rows[at(r, column + 2u)], do_rows[at(r, column + 3u)]);
                            const vec4 qr = vec4(q_rows[at(r, column)], q_rows[at(r, column + 1u)],
                                                 q_rows[at(r, column + 2u)], q_rows[at(r, column + 3u)]);
                            dv_acc[0][c] += p0 * dor;
                            dv_acc[1][c] += p1 * dor;
                            dk_acc[0][c] += ds0 * qr;
                            dk_acc[1][c] += ds1 * qr;
                        }
                    }
                }
            }
        }
    }

    [[unroll]] for (uint x = 0u; x < 2u; ++x) {
        if (my_key[x] >= pc.seq) continue;
        const uint base = ((b * pc.seq + my_key[x]) * pc.heads_kv + kv_head) * HEAD_DIM;
        [[unroll]] for (uint c = 0u; c < 2u; ++c) {
            const uint column = qg * 4u + 32u * c;
            if (column >= HEAD_DIM) continue;
            [[unroll]] for (uint y = 0u; y < 4u; ++y) {
                const uint index = base + column + y;
                if ((pc.flags & ATTN_WRITE_DK) != 0u)
                    dk[index] = NN_STORE(NN_LOAD(dk[index]) + pc.scale * dk_acc[x][c][y]);
                if ((pc.flags & ATTN_WRITE_DV) != 0u) dv[index] = NN_STORE(NN_LOAD(dv[index]) + dv_acc[x][c][y]);
            }
        }
    }
}
