#version 450
// Attention backward (FlashAttention-2), dk and dv: one workgroup per (block of KEYS keys, kv
// head, batch) owns those keys' gradients and loops, in a fixed order, over the query heads
// of its group and the blocks of QUERIES queries that see the keys, recomputing
//   P = exp(scale q.k - lse), dP = dout.v, dS = P (dP - delta)
//   dv += P^T dout, dk += scale dS^T q
// so no two workgroups add into one element (deterministic, no atomics). q, dout
// [B][T][Hq][D], k, v, dk, dv [B][T][Hkv][D], lse and delta [B][Hq][T] f32. D <= 128.
// 128 invocations: 8 per key, each owning columns lane, lane + 8, ... of dk and dv.
// QUERIES (specialization constant 0, a multiple of 8) fits the device's shared memory.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "nn_common.glsl"
#include "nn_dtype.glsl"
layout(local_size_x = 128) in;

#define KEYS 16u
#define LANES 8u
// Register arrays have a fixed size (the loops over them unroll): an array sized by a
// specialization constant and indexed in a loop went to local memory on NVIDIA's driver.
#define MAX_PER_LANE 2u  // 16 / LANES: the largest specialization constant 0 the host picks
#define MAX_DIM 128u
#define MAX_COLUMNS (MAX_DIM / LANES)
// head_dim (specialization constant 1; the push constant `dim` holds the same): loops over the
// head's elements and this invocation's columns unroll with known bounds.
layout(constant_id = 1) const uint HEAD_DIM = 64u;
#define PAD_DIM (MAX_DIM + 1u)
layout(constant_id = 0) const uint QUERIES = 16u;

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

shared float k_tile[KEYS * PAD_DIM];
shared float v_tile[KEYS * PAD_DIM];
shared float q_tile[QUERIES * PAD_DIM];
shared float do_tile[QUERIES * PAD_DIM];
shared float p_tile[QUERIES * KEYS];
shared float ds_tile[QUERIES * KEYS];
shared float lse_tile[QUERIES];
shared float delta_tile[QUERIES];

void main() {
    const float neg_inf = -1.0 / 0.0;
    uint tid = gl_LocalInvocationID.x;
    uint j = tid / LANES;  // this invocation's key in the block
    uint lane = tid % LANES;
    uint group = pc.heads_q / pc.heads_kv;
    uint kv_head = gl_WorkGroupID.y;
    uint b = gl_WorkGroupID.z;
    uint stride = HEAD_DIM + 1u;
    uint key0 = gl_WorkGroupID.x * KEYS;
    uint key = key0 + j;
    bool causal = (pc.flags & ATTN_CAUSAL) != 0u;

    for (uint e = tid; e < KEYS * HEAD_DIM; e += 128u) {
        uint jj = e / HEAD_DIM;
        uint d = e - jj * HEAD_DIM;
        uint kk = key0 + jj;
        uint index = ((b * pc.seq + kk) * pc.heads_kv + kv_head) * HEAD_DIM + d;
        k_tile[jj * stride + d] = kk < pc.seq ? NN_LOAD(k[index]) : 0.0;
        v_tile[jj * stride + d] = kk < pc.seq ? NN_LOAD(v[index]) : 0.0;
    }

    float dk_acc[MAX_COLUMNS];
    float dv_acc[MAX_COLUMNS];
    [[unroll]] for (uint c = 0u; c < MAX_COLUMNS; ++c) {
        dk_acc[c] = 0.0;
        dv_acc[c] = 0.0;
    }

    uint query_begin = causal ? (key0 / QUERIES) * QUERIES : 0u;
    for (uint hg = 0u; hg < group; ++hg) {
        uint h = kv_head * group + hg;
        for (uint t0 = query_begin; t0 < pc.seq; t0 += QUERIES) {
            barrier();  // the previous block's readers are done
            for (uint e = tid; e < QUERIES * HEAD_DIM; e += 128u) {
                uint ii = e / HEAD_DIM;
                uint d = e - ii * HEAD_DIM;
                uint t = t0 + ii;
                uint index = ((b * pc.seq + t) * pc.heads_q + h) * HEAD_DIM + d;
                q_tile[ii * stride + d] = t < pc.seq ? NN_LOAD(q[index]) : 0.0;
                do_tile[ii * stride + d] = t < pc.seq ? NN_LOAD(dout[index]) : 0.0;
            }
            for (uint ii = tid; ii < QUERIES; ii += 128u) {
                uint t = t0 + ii;
                lse_tile[ii] = t < pc.seq ? lse[(b * pc.heads_q + h) * pc.seq + t] : neg_inf;
                delta_tile[ii] = t < pc.seq ? delta[(b * pc.heads_q + h) * pc.seq + t] : 0.0;
            }
            barrier();
            float dot_qk[MAX_PER_LANE];  // queries lane, lane + 8, ...
            float dot_dov[MAX_PER_LANE];
            [[unroll]] for (uint m = 0u; m < MAX_PER_LANE; ++m) {
                if (m >= QUERIES / LANES) break;
                dot_qk[m] = 0.0;
                dot_dov[m] = 0.0;
            }
            for (uint d = 0u; d < HEAD_DIM; ++d) {
                float kd = k_tile[j * stride + d];
                float vd = v_tile[j * stride + d];
                [[unroll]] for (uint m = 0u; m < MAX_PER_LANE; ++m) {
                if (m >= QUERIES / LANES) break;
                    dot_qk[m] += q_tile[(lane + m * LANES) * stride + d] * kd;
                    dot_dov[m] += do_tile[(lane + m * LANES) * stride + d] * vd;
                }
            }
            [[unroll]] for (uint m = 0u; m < MAX_PER_LANE; ++m) {
                if (m >= QUERIES / LANES) break;
                uint i = lane + m * LANES;
                uint t = t0 + i;
                float s = dot_qk[m];
                float dp = dot_dov[m];
                bool visible = t < pc.seq && key < pc.seq && (!causal || key <= t) && lse_tile[i] != neg_inf;
                float p = visible ? exp(s * pc.scale - lse_tile[i]) : 0.0;
                p_tile[i * KEYS + j] = p;
                ds_tile[i * KEYS + j] = p * (dp - delta_tile[i]);
            }
            barrier();
            for (uint i = 0u; i < QUERIES; ++i) {
                float p = p_tile[i * KEYS + j];
                float ds = ds_tile[i * KEYS + j];
                [[unroll]] for (uint c = 0u; c < MAX_COLUMNS; ++c) {
                    uint d = lane + c * LANES;
                    if (d < HEAD_DIM) {
                        dv_acc[c] += p * do_tile[i * stride + d];
                        dk_acc[c] += ds * q_tile[i * stride + d];
                    }
                }
            }
        }
    }

    if (key >= pc.seq) return;
    [[unroll]] for (uint c = 0u; c < MAX_COLUMNS; ++c) {
        uint d = lane + c * LANES;
        if (d >= HEAD_DIM) continue;
        uint index = ((b * pc.seq + key) * pc.heads_kv + kv_head) * HEAD_DIM + d;
        if ((pc.flags & ATTN_WRITE_DK) != 0u) dk[index] = NN_STORE(NN_LOAD(dk[index]) + pc.scale * dk_acc[c]);
        if ((pc.flags & ATTN_WRITE_DV) != 0u) dv[index] = NN_STORE(NN_LOAD(dv[index]) + dv_acc[c]);
    }
}
