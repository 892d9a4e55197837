#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
// matmul: C[z] = alpha op(A[z]) op(B[z]) + beta C[z] (+ bias in every row) in f32 (true f32: every product and sum in
// f32; f16/bf16 storage converted on load, C rounded on store). A, B of NN_DTYPE, C of
// NN_OUT_DTYPE.
//
// Tiling: a workgroup computes a BM x BN block of C with THREADS = (BM/8)(BN/8) threads, each an
// 8 x 8 register block split in two 4-row and two 4-column halves (rows ty*4+i and BM/2+ty*4+i,
// columns tx*4+j and BN/2+tx*4+j) so that the shared-memory reads of a warp are consecutive.
// K advances BK at a time: the next tiles of A and B are loaded into registers (4-wide vector
// loads where aligned: push constant vec_a/vec_b) while the current ones, in shared memory
// k-major (As[k][m], Bs[k][n], held as vec4s so reads are 16 bytes), are multiplied; shared
// memory holds two stages (STAGES = 2), so the registers go to the other stage after the
// multiply and one barrier per tile suffices. Layouts by specialization constants TRANS_A ([K][M] storage) and
// TRANS_B ([N][K]); batches by workgroup z, strides in elements (0: the operand is shared by
// every batch). Constraints the host keeps (matmul.cpp): BM, BN multiples of 8 with BM*BK and
// BN*BK multiples of 4*THREADS, and two stages within the device's shared memory.
// Registers: the accumulators are named variables and the loops over the load registers
// (ra, rb) unroll: on NVIDIA's driver an array indexed in a loop it did not unroll went to
// local memory (TAPEVM_GPU_PIPELINE_STATS: 256 bytes) and the kernel ran at 2.3 TFLOP/s.
#include "nn_dtype.glsl"
#include "nn_common.glsl"

layout(local_size_x_id = 5) in;
layout(constant_id = 0) const uint BM = 128;
layout(constant_id = 1) const uint BN = 128;
layout(constant_id = 2) const uint BK = 16;
layout(constant_id = 3) const bool TRANS_A = false;
layout(constant_id = 4) const bool TRANS_B = false;
layout(constant_id = 5) const uint THREADS = 256;
layout(constant_id = 6) const uint STAGES = 2;  // 1: one stage of shared memory, two barriers per tile

layout(set = 0, binding = 0, std430) readonly buffer A { NN_T a[]; };
layout(set = 0, binding = 1, std430) readonly buffer B { NN_T b[]; };
layout(set = 0, binding = 2, std430) buffer C { NN_OUT_T c[]; };
layout(set = 0, binding = 3, std430) readonly buffer Bias { NN_OUT_T bias[]; };  // [N], when pc.bias != 0
#if NN_DTYPE == 0
layout(set = 0, binding = 0, std430) readonly buffer A4 { vec4 a4[]; };
layout(set = 0, binding = 1, std430) readonly buffer B4 { vec4 b4[]; };
#endif

layout(push_constant) uniform Push {
    uint M, N, K, batch;
    uint stride_a, stride_b, stride_c;
    float alpha, beta;
    uint vec_a, vec_b;  // 1: 4-wide loads are aligned (leading dimension and stride multiples of 4)
    uint k_split;       // split-K (matmul.cpp): workgroup z sums k in [z k_split, (z+1) k_split); 0: none
    uint bias;          // 1: C += bias[col] (binding 3) after alpha and beta
} pc;

const uint QA = BM * BK / (4 * THREADS);  // quads of A each thread loads per tile
const uint QB = BN * BK / (4 * THREADS);
const uint STAGE_A = BK * BM / 4, STAGE_B = BK * BN / 4;  // vec4s per stage
// STAGES stages; As[k][m] of stage s: element k * BM + m is As[s * STAGE_A + (k * BM + m) / 4][m % 4].
shared vec4 As[STAGES * STAGE_A];
shared vec4 Bs[STAGES * STAGE_B];

vec4 load_a_quad(uint base, uint row, uint col, uint rows, uint cols, uint ld) {
    // Four consecutive elements along the stored rows of A: (row, col .. col+3) of a rows x cols
    // matrix with leading dimension ld, zero outside.
    const uint at = base + row * ld + col;
#if NN_DTYPE == 0
    if (pc.vec_a != 0u && row < rows && col + 3 < cols) return a4[at / 4];
#endif
    vec4 v = vec4(0.0);
    if (row < rows) {
        [[unroll]] for (uint e = 0; e < 4; ++e)
            if (col + e < cols) v[e] = NN_LOAD(a[at + e]);
    }
    return v;
}

vec4 load_b_quad(uint base, uint row, uint col, uint rows, uint cols, uint ld) {
    const uint at = base + row * ld + col;
#if NN_DTYPE == 0
    if (pc.vec_b != 0u && row < rows && col + 3 < cols) return b4[at / 4];
#endif
    vec4 v = vec4(0.0);
    if (row < rows) {
        [[unroll]] for (uint e = 0; e < 4; ++e)
            if (col + e < cols) v[e] = NN_LOAD(b[at + e]);
    }
    return v;
}

// C[c_base + row * N + col] = alpha v + beta C (beta 0: C not read) + bias[col] (pc.bias), inside
// M x N only.
void store_one(uint c_base, uint row, uint col, float v) {
    if (col >= pc.N) return;
    const uint at = c_base + row * pc.N + col;
    float value = pc.alpha * v;
    if (pc.beta != 0.0) value += pc.beta * NN_OUT_LOAD(c[at]);
    if (pc.bias != 0u) value += NN_OUT_LOAD(bias[col]);
    c[at] = NN_OUT_STORE(value);
}

// Row `row` of the register block: columns col_lo .. col_lo+3 from lo, col_hi .. col_hi+3 from hi.
void store_row(uint c_base, uint row, uint col_lo, uint col_hi, vec4 lo, vec4 hi) {
    if (row >= pc.M) return;
    store_one(c_base, row, col_lo + 0, lo.x);
    store_one(c_base, row, col_lo + 1, lo.y);
    store_one(c_base, row, col_lo + 2, lo.z);
    store_one(c_base, row, col_lo + 3, lo.w);
    store_one(c_base, row, col_hi + 0, hi.x);
    store_one(c_base, row, col_hi + 1, hi.y);
    store_one(c_base, row, col_hi + 2, hi.z);
    store_one(c_base, row, col_hi + 3, hi.w);
}

void main() {
    const uint tid = gl_LocalInvocationID.x;
    const uint tx = tid % (BN / 8), ty = tid / (BN / 8);
    const uint m0 = gl_WorkGroupID.y * BM, n0 = gl_WorkGroupID.x * BN;
    const uint M = pc.M, N = pc.N, K = pc.K;

    for (uint z = gl_WorkGroupID.z; z < pc.batch; z += gl_NumWorkGroups.z) {
        const uint a_base = z * pc.stride_a, b_base = z * pc.stride_b, c_base = z * pc.stride_c;
        // Split-K: this workgroup's slice of K (C is then the f32 partials [slice][M][N]).
        const uint k_begin = pc.k_split != 0u ? z * pc.k_split : 0u;
        const uint k_end = pc.k_split != 0u ? min(K, k_begin + pc.k_split) : K;
        const uint tiles = (k_end - k_begin + BK - 1) / BK;
        // The 8 x 8 register block as 16 named vec4s (rows i = 0..7, column halves h = 0, 1):
        // no array, so no index the compiler could fail to resolve and put in local memory.
        vec4 acc0_0 = vec4(0.0), acc0_1 = vec4(0.0), acc1_0 = vec4(0.0), acc1_1 = vec4(0.0);
        vec4 acc2_0 = vec4(0.0), acc2_1 = vec4(0.0), acc3_0 = vec4(0.0), acc3_1 = vec4(0.0);
        vec4 acc4_0 = vec4(0.0), acc4_1 = vec4(0.0), acc5_0 = vec4(0.0), acc5_1 = vec4(0.0);
        vec4 acc6_0 = vec4(0.0), acc6_1 = vec4(0.0), acc7_0 = vec4(0.0), acc7_1 = vec4(0.0);
        vec4 ra[QA];
        vec4 rb[QB];

        // Tile t's quads into registers.
#define LOAD_TILES(t)                                                                           \
        [[unroll]] for (uint q = 0; q < QA; ++q) {                                              \
            const uint quad = tid + q * THREADS;                                                \
            if (!TRANS_A) {                                                                     \
                const uint m = quad / (BK / 4), k = (quad % (BK / 4)) * 4;                      \
                ra[q] = load_a_quad(a_base, m0 + m, k_begin + (t) * BK + k, M, k_end, K);       \
            } else {                                                                            \
                const uint k = quad / (BM / 4), m = (quad % (BM / 4)) * 4;                      \
                ra[q] = load_a_quad(a_base, k_begin + (t) * BK + k, m0 + m, k_end, M, M);       \
            }                                                                                   \
        }                                                                                       \
        [[unroll]] for (uint q = 0; q < QB; ++q) {                                              \
            const uint quad = tid + q * THREADS;                                                \
            if (!TRANS_B) {                                                                     \
                const uint k = quad / (BN / 4), n = (quad % (BN / 4)) * 4;                      \
                rb[q] = load_b_quad(b_base, k_begin + (t) * BK + k, n0 + n, k_end, N, N);       \
            } else {                                                                            \
                const uint n = quad / (BK / 4), k = (quad % (BK / 4)) * 4;                      \
                rb[q] = load_b_quad(b_base, n0 + n, k_begin + (t) * BK + k, N, k_end, K);       \
            }                                                                                   \
        }
        // Registers into shared memory, k-major.
#define STORE_TILES(s)                                                                           \
        [[unroll]] for (uint q = 0; q < QA; ++q) {                                              \
            const uint quad = tid + q * THREADS;                                                \
            if (!TRANS_A) {                                                                     \
                const uint m = quad / (BK / 4), k = (quad % (BK / 4)) * 4;                      \
                [[unroll]] for (uint e = 0; e < 4; ++e) As[(s) * STAGE_A + ((k + e) * BM + m) / 4][m % 4] = ra[q][e]; \
            } else {                                                                            \
                const uint k = quad / (BM / 4), m = (quad % (BM / 4)) * 4;                      \
                As[(s) * STAGE_A + (k * BM + m) / 4] = ra[q];                                                   \
            }                                                                                   \
        }                                                                                       \
        [[unroll]] for (uint q = 0; q < QB; ++q) {                                              \
            const uint quad = tid + q * THREADS;                                                \
            if (!TRANS_B) {                                                                     \
                const uint k = quad / (BN / 4), n = (quad % (BN / 4)) * 4;                      \
                Bs[(s) * STAGE_B + (k * BN + n) / 4] = rb[q];                                                   \
            } else {                                                                            \
                const uint n = quad / (BK / 4), k = (quad % (BK / 4)) * 4;                      \
                [[unroll]] for (uint e = 0; e < 4; ++e) Bs[(s) * STAGE_B + ((k + e) * BN + n) / 4][n % 4] = rb[q][e]; \
            }                                                                                   \
        }

        if (tiles > 0) {
            LOAD_TILES(0)
            STORE_TILES(0)
        }
        barrier();
        for (uint t = 0; t < tiles; ++t) {
            if (t + 1 < tiles) {
                LOAD_TILES(t + 1)
            }
            const uint stage = STAGES == 2u ? (t & 1u) : 0u;
            const uint sa = stage * STAGE_A, sb = stage * STAGE_B;
            [[unroll]] for (uint k = 0; k < BK; ++k) {
                const uint ar = sa + (k * BM) / 4 + ty, br = sb + (k * BN) / 4 + tx;
                const vec4 a_lo = As[ar], a_hi = As[ar + BM / 8];
                const vec4 b_lo = Bs[br], b_hi = Bs[br + BN / 8];
#define NN_FMA_ROW(lo, hi, a) lo += (a) * b_lo; hi += (a) * b_hi;
                NN_FMA_ROW(acc0_0, acc0_1, a_lo.x)
                NN_FMA_ROW(acc1_0, acc1_1, a_lo.y)
                NN_FMA_ROW(acc2_0, acc2_1, a_lo.z)
                NN_FMA_ROW(acc3_0, acc3_1, a_lo.w)
                NN_FMA_ROW(acc4_0, acc4_1, a_hi.x)
                NN_FMA_ROW(acc5_0, acc5_1, a_hi.y)
                NN_FMA_ROW(acc6_0, acc6_1, a_hi.z)
                NN_FMA_ROW(acc7_0, acc7_1, a_hi.w)
            }
            // The next tile goes to the other stage: every thread finished reading it at the
            // barrier that ended the previous tile. With one stage, after a barrier.
            if (STAGES == 1u) barrier();
            if (t + 1 < tiles) {
                STORE_TILES(STAGES == 2u ? ((t + 1) & 1u) : 0u)
            }
            barrier();
        }

        // C = alpha acc + beta C (C is not read when beta is 0, as in BLAS).
        const uint col_lo = n0 + tx * 4, col_hi = n0 + BN / 2 + tx * 4;
        store_row(c_base, m0 + ty * 4 + 0, col_lo, col_hi, acc0_0, acc0_1);
        store_row(c_base, m0 + ty * 4 + 1, col_lo, col_hi, acc1_0, acc1_1);
        store_row(c_base, m0 + ty * 4 + 2, col_lo, col_hi, acc2_0, acc2_1);
        store_row(c_base, m0 + ty * 4 + 3, col_lo, col_hi, acc3_0, acc3_1);
        store_row(c_base, m0 + BM / 2 + ty * 4 + 0, col_lo, col_hi, acc4_0, acc4_1);
        store_row(c_base, m0 + BM / 2 + ty * 4 + 1, col_lo, col_hi, acc5_0, acc5_1);
        store_row(c_base, m0 + BM / 2 + ty * 4 + 2, col_lo, col_hi, acc6_0, acc6_1);
        store_row(c_base, m0 + BM / 2 + ty * 4 + 3, col_lo, col_hi, acc7_0, acc7_1);
    }
}
