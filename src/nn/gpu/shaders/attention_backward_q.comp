#version 450
// Attention backward (FlashAttention-2), dq: one workgroup per (block of QUERIES queries,
// query head, batch) loops over the blocks of KEYS keys its queries see, recomputing
//   P = exp(scale q.k - lse), dP = dout.v, dS = P (dP - delta), dq += scale dS k.
// Layouts as attention_backward_kv.comp. 128 invocations: 8 per query, each owning columns
// lane, lane + 8, ... of dq. KEYS (specialization constant 0, a multiple of 8) fits the
// device's shared memory. D <= 128.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "nn_common.glsl"
#include "nn_dtype.glsl"
layout(local_size_x = 128) in;

#define QUERIES 16u
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
layout(constant_id = 0) const uint KEYS = 16u;

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

shared float q_tile[QUERIES * PAD_DIM];
shared float do_tile[QUERIES * PAD_DIM];
shared float k_tile[KEYS * PAD_DIM];
shared float v_tile[KEYS * PAD_DIM];
shared float ds_tile[QUERIES * KEYS];

void main() {
    const float neg_inf = -1.0 / 0.0;
    uint tid = gl_LocalInvocationID.x;
    uint i = tid / LANES;  // this invocation's query in the block
    uint lane = tid % LANES;
    uint group = pc.heads_q / pc.heads_kv;
    uint h = gl_WorkGroupID.y;
    uint kv_head = h / group;
    uint b = gl_WorkGroupID.z;
    uint stride = HEAD_DIM + 1u;
    uint t0 = gl_WorkGroupID.x * QUERIES;
    uint t = t0 + i;
    bool live = t < pc.seq;
    bool causal = (pc.flags & ATTN_CAUSAL) != 0u;

    for (uint e = tid; e < QUERIES * HEAD_DIM; e += 128u) {
        uint ii = e / HEAD_DIM;
        uint d = e - ii * HEAD_DIM;
        uint tt = t0 + ii;
        uint index = ((b * pc.seq + tt) * pc.heads_q + h) * HEAD_DIM + d;
        q_tile[ii * stride + d] = tt < pc.seq ? NN_LOAD(q[index]) : 0.0;
        do_tile[ii * stride + d] = tt < pc.seq ? NN_LOAD(dout[index]) : 0.0;
    }
    float row_lse = live ? lse[(b * pc.heads_q + h) * pc.seq + t] : neg_inf;
    float row_delta = live ? delta[(b * pc.heads_q + h) * pc.seq + t] : 0.0;

    float acc[MAX_COLUMNS];
    for (uint c = 0u; c < MAX_COLUMNS; ++c) acc[c] = 0.0;

    uint last = min(pc.seq, t0 + QUERIES);  // exclusive bound of the block's queries
    uint key_end = causal ? last : pc.seq;
    for (uint key0 = 0u; key0 < key_end; key0 += KEYS) {
        barrier();  // the previous tile's readers are done
        for (uint e = tid; e < KEYS * HEAD_DIM; e += 128u) {
            uint jj = e / HEAD_DIM;
            uint d = e - jj * HEAD_DIM;
            uint kk = key0 + jj;
            uint index = ((b * pc.seq + kk) * pc.heads_kv + kv_head) * HEAD_DIM + d;
            k_tile[jj * stride + d] = kk < pc.seq ? NN_LOAD(k[index]) : 0.0;
            v_tile[jj * stride + d] = kk < pc.seq ? NN_LOAD(v[index]) : 0.0;
        }
        barrier();
        float dot_qk[MAX_PER_LANE];  // keys lane, lane + 8, ...
        float dot_dov[MAX_PER_LANE];
        [[unroll]] for (uint m = 0u; m < MAX_PER_LANE; ++m) {
                if (m >= KEYS / LANES) break;
            dot_qk[m] = 0.0;
            dot_dov[m] = 0.0;
        }
        for (uint d = 0u; d < HEAD_DIM; ++d) {
            float qd = q_tile[i * stride + d];
            float dod = do_tile[i * stride + d];
            [[unroll]] for (uint m = 0u; m < MAX_PER_LANE; ++m) {
                if (m >= KEYS / LANES) break;
                dot_qk[m] += qd * k_tile[(lane + m * LANES) * stride + d];
                dot_dov[m] += dod * v_tile[(lane + m * LANES) * stride + d];
            }
        }
        [[unroll]] for (uint m = 0u; m < MAX_PER_LANE; ++m) {
                if (m >= KEYS / LANES) break;
            uint j = lane + m * LANES;
            uint key = key0 + j;
            float s = dot_qk[m];
            float dp = dot_dov[m];
            bool visible = live && key < pc.seq && (!causal || key <= t) && row_lse != neg_inf;
            float p = visible ? exp(s * pc.scale - row_lse) : 0.0;
            ds_tile[i * KEYS + j] = p * (dp - row_delta);
        }
        barrier();
        for (uint j = 0u; j < KEYS; ++j) {
            float ds = ds_tile[i * KEYS + j];
            [[unroll]] for (uint c = 0u; c < MAX_COLUMNS; ++c) {
                uint d = lane + c * LANES;
                if (d < HEAD_DIM) acc[c] += ds * k_tile[j * stride + d];
            }
        }
    }

    if (!live) return;
    [[unroll]] for (uint c = 0u; c < MAX_COLUMNS; ++c) {
        uint d = lane + c * LANES;
        if (d >= HEAD_DIM) continue;
        uint index = ((b * pc.seq + t) * pc.heads_q + h) * HEAD_DIM + d;
        dq[index] = NN_STORE(NN_LOAD(dq[index]) + pc.scale * acc[c]);
    }
}
