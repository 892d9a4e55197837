#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_NV_cooperative_matrix : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_control_flow_attributes : require
// matmul on tensor cores (VK_NV_cooperative_matrix): f16 A and B, f32 accumulation, C of
// NN_OUT_DTYPE; the same contract and push constants as matmul.comp. Used only where the
// device lists the f16 x f16 -> f32 subgroup shape (MM x NN x KK: specialization constants
// 6..8, 16x16x16 or 16x8x16) and GpuOptions::cooperative_matrix allows it.
//
// A workgroup of WARPS_M x WARPS_N subgroups (of 32 invocations: NVIDIA) computes a BM x BN
// block; each subgroup a (BM/WARPS_M) x (BN/WARPS_N) block as a grid of MM x NN accumulators.
// K advances BK at a time through shared memory (A and B tiles kept in their stored layout;
// coopMatLoadNV's column-major flag handles TRANS_A / TRANS_B), loaded with 8-wide (uvec4)
// global reads where aligned (vec_a / vec_b), else element by element with zeros outside; the
// next tiles are read into registers while the current ones multiply (STAGES = 2: into the
// other of two shared-memory stages, one barrier per tile). Each shared row is
// padded by 8 halves (16 bytes): without it the rows of a 16 x 16 fragment load (row strides of
// 64 or 256 bytes) fell on the same banks, 4- to 8-way conflicts.
// Results go through a per-subgroup shared tile to C with alpha, beta, bounds and rounding.
#include "nn_dtype.glsl"
#include "nn_common.glsl"

layout(local_size_x_id = 9) in;
layout(constant_id = 0) const uint BM = 128;
layout(constant_id = 1) const uint BN = 128;
layout(constant_id = 2) const uint BK = 32;
layout(constant_id = 3) const bool TRANS_A = false;
layout(constant_id = 4) const bool TRANS_B = false;
layout(constant_id = 5) const uint WARPS_M = 2;
layout(constant_id = 6) const uint MM = 16;
layout(constant_id = 7) const uint NN = 16;
layout(constant_id = 8) const uint KK = 16;
layout(constant_id = 9) const uint THREADS = 128;  // WARPS_M * WARPS_N * 32
layout(constant_id = 10) const uint STAGES = 1;    // shared-memory stages of A and B: 1 or 2
const uint WARPS_N = THREADS / 32 / WARPS_M;
const uint WM = BM / WARPS_M, WN = BN / WARPS_N;  // a subgroup's block
const uint TILES_M = WM / MM, TILES_N = WN / NN;
const uint VA = BM * BK / 8 / THREADS, VB = BK * BN / 8 / THREADS;  // uvec4s per thread and tile
// Shared rows in uvec4s: stored row length plus one uvec4 of padding.
const uint ROW_A = (TRANS_A ? BM : BK) / 8, ROW_B = (TRANS_B ? BK : BN) / 8;
const uint LD_A = ROW_A + 1, LD_B = ROW_B + 1;
const uint ROWS_A = TRANS_A ? BK : BM, ROWS_B = TRANS_B ? BN : BK;

layout(set = 0, binding = 0, std430) readonly buffer A { uint16_t a[]; };
layout(set = 0, binding = 1, std430) readonly buffer B { uint16_t b[]; };
layout(set = 0, binding = 2, std430) buffer C { NN_OUT_T c[]; };
layout(set = 0, binding = 3, std430) readonly buffer Bias { NN_OUT_T bias[]; };  // [N], when pc.bias != 0
layout(set = 0, binding = 0, std430) readonly buffer A8 { uvec4 a8[]; };
layout(set = 0, binding = 1, std430) readonly buffer B8 { uvec4 b8[]; };
#if NN_OUT_DTYPE == 1
layout(set = 0, binding = 2, std430) buffer C16 { float16_t c16[]; };
#endif

layout(push_constant) uniform Push {
    uint M, N, K, batch;
    uint stride_a, stride_b, stride_c;
    float alpha, beta;
    uint vec_a, vec_b;  // 1: 8-wide loads are aligned (leading dimension and stride multiples of 8)
    uint k_split;       // split-K (matmul.cpp): workgroup z sums k in [z k_split, (z+1) k_split); 0: none
    uint bias;          // 1: C += bias[col] (binding 3) after alpha and beta
} pc;

// Tiles in their stored layout: A [BM][BK] (TRANS_A: [BK][BM]), B [BK][BN] (TRANS_B: [BN][BK]),
// as uvec4s of 8 halves, rows LD_A / LD_B uvec4s apart.
const uint STAGE_A = ROWS_A * LD_A, STAGE_B = ROWS_B * LD_B;  // uvec4s per stage
shared uvec4 As[STAGES * STAGE_A];
shared uvec4 Bs[STAGES * STAGE_B];
shared float Cs[THREADS / 32][MM * NN];

// Eight stored elements (row, col .. col+7) of a rows x cols matrix with leading dimension ld
// at base, zero outside.
uvec4 load8_a(uint base, uint row, uint col, uint rows, uint cols, uint ld) {
    const uint at = base + row * ld + col;
    if (pc.vec_a != 0u && row < rows && col + 7 < cols) return a8[at / 8];
    uint h[8];
    [[unroll]] for (uint e = 0; e < 8; ++e) h[e] = (row < rows && col + e < cols) ? uint(a[at + e]) : 0u;
    return uvec4(h[0] | (h[1] << 16), h[2] | (h[3] << 16), h[4] | (h[5] << 16), h[6] | (h[7] << 16));
}
uvec4 load8_b(uint base, uint row, uint col, uint rows, uint cols, uint ld) {
    const uint at = base + row * ld + col;
    if (pc.vec_b != 0u && row < rows && col + 7 < cols) return b8[at / 8];
    uint h[8];
    [[unroll]] for (uint e = 0; e < 8; ++e) h[e] = (row < rows && col + e < cols) ? uint(b[at + e]) : 0u;
    return uvec4(h[0] | (h[1] << 16), h[2] | (h[3] << 16), h[4] | (h[5] << 16), h[6] | (h[7] << 16));
}

#define NN_ACC fcoopmatNV<32, gl_ScopeSubgroup, MM, NN>

// Fragment i of A (j of B) of the k step at kk, where i < TILES_M (j < TILES_N).
#define NN_LOAD_FA(fa, i)                                                                       \
    if (TILES_M > i) {                                                                          \
        const uint m = wm * WM + i * MM;                                                        \
        if (!TRANS_A) coopMatLoadNV(fa, As, sa + m * LD_A + kk / 8, LD_A, false);               \
        else coopMatLoadNV(fa, As, sa + kk * LD_A + m / 8, LD_A, true);                         \
    }
#define NN_LOAD_FB(fb, j)                                                                       \
    if (TILES_N > j) {                                                                          \
        const uint n = wn * WN + j * NN;                                                        \
        if (!TRANS_B) coopMatLoadNV(fb, Bs, sb + kk * LD_B + n / 8, LD_B, false);               \
        else coopMatLoadNV(fb, Bs, sb + n * LD_B + kk / 8, LD_B, true);                         \
    }
#define NN_MMA(acc, fa, fb, i, j) \
    if (TILES_M > i && TILES_N > j) acc = coopMatMulAddNV(fa, fb, acc);
// Accumulator (i, j) to C: straight from registers (NN_STORE_DIRECT) where the tile lies inside
// C and C is f32 or f16 with aligned rows (direct), else through this subgroup's shared tile with
// alpha, beta, bounds and rounding element by element.
#define NN_STORE_ACC(acc, i, j)                                                                 \
    if (TILES_M > i && TILES_N > j) {                                                           \
        const uint row0 = m0 + wm * WM + i * MM, col0 = n0 + wn * WN + j * NN;                  \
        if (direct && row0 + MM <= M && col0 + NN <= N) {                                       \
            NN_STORE_DIRECT(acc, c_base + row0 * N + col0)                                      \
        } else {                                                                                \
            NN_STORE_SHARED(acc, row0, col0)                                                    \
        }                                                                                       \
    }
// r[i] += bias[column of element i] (cols_of: each element's column within the tile, learnt
// once from a matrix of column numbers: every matrix of one type lays its elements out alike).
#define NN_ADD_BIAS(r)                                                                          \
        if (pc.bias != 0u) {                                                                    \
            [[unroll]] for (int i = 0; i < r.length(); ++i)                                     \
                r[i] += NN_OUT_LOAD(bias[col0 + uint(cols_of[i])]);                             \
        }
#if NN_OUT_DTYPE == 0
// C = alpha acc + beta C (+ bias) in f32, in registers.
#define NN_STORE_DIRECT(acc, at)                                                                \
    {                                                                                           \
        NN_ACC r = acc * pc.alpha;                                                              \
        if (pc.beta != 0.0) {                                                                   \
            NN_ACC old;                                                                         \
            coopMatLoadNV(old, c, at, N, false);                                                \
            r += old * pc.beta;                                                                 \
        }                                                                                       \
        NN_ADD_BIAS(r)                                                                          \
        coopMatStoreNV(r, c, at, N, false);                                                     \
    }
#elif NN_OUT_DTYPE == 1
// The same in f32, rounded to f16 (round to nearest even, as nn_f32_to_f16) on the way out.
#define NN_STORE_DIRECT(acc, at)                                                                \
    {                                                                                           \
        NN_ACC r = acc * pc.alpha;                                                              \
        if (pc.beta != 0.0) {                                                                   \
            fcoopmatNV<16, gl_ScopeSubgroup, MM, NN> old;                                       \
            coopMatLoadNV(old, c16, at, N, false);                                              \
            r += NN_ACC(old) * pc.beta;                                                         \
        }                                                                                       \
        NN_ADD_BIAS(r)                                                                          \
        coopMatStoreNV(fcoopmatNV<16, gl_ScopeSubgroup, MM, NN>(r), c16, at, N, false);         \
    }
#else
#define NN_STORE_DIRECT(acc, at) NN_STORE_SHARED(acc, row0, col0)
#endif
#define NN_STORE_SHARED(acc, row0, col0)                                                        \
    {                                                                                           \
        coopMatStoreNV(acc, Cs[warp], 0, NN, false);                                            \
        subgroupMemoryBarrierShared();                                                          \
        subgroupBarrier();                                                                      \
        for (uint e = lane; e < MM * NN; e += 32) {                                             \
            const uint row = row0 + e / NN, col = col0 + e % NN;                                \
            if (row < M && col < N) {                                                           \
                const uint at = c_base + row * N + col;                                         \
                float value = pc.alpha * Cs[warp][e];                                           \
                if (pc.beta != 0.0) value += pc.beta * NN_OUT_LOAD(c[at]);                      \
                if (pc.bias != 0u) value += NN_OUT_LOAD(bias[col]);                             \
                c[at] = NN_OUT_STORE(value);                                                    \
            }                                                                                   \
        }                                                                                       \
        subgroupMemoryBarrierShared();                                                          \
        subgroupBarrier();                                                                      \
    }

void main() {
    const uint tid = gl_LocalInvocationID.x;
    const uint warp = tid / 32, lane = tid % 32;
    const uint wm = warp % WARPS_M, wn = warp / WARPS_M;
    const uint m0 = gl_WorkGroupID.y * BM, n0 = gl_WorkGroupID.x * BN;
    const uint M = pc.M, N = pc.N, K = pc.K;
    // Direct stores (NN_STORE_ACC) need 16-byte aligned rows and batch strides.
    const bool direct = NN_OUT_DTYPE <= 1 && N % 8 == 0 && pc.stride_c % 8 == 0;
    // Each accumulator element's column (NN_ADD_BIAS), through this subgroup's shared tile.
    NN_ACC cols_of = NN_ACC(0.0);
    if (direct && pc.bias != 0u) {
        for (uint e = lane; e < MM * NN; e += 32) Cs[warp][e] = float(e % NN);
        subgroupMemoryBarrierShared();
        subgroupBarrier();
        coopMatLoadNV(cols_of, Cs[warp], 0, NN, false);
        subgroupMemoryBarrierShared();
        subgroupBarrier();
    }

    for (uint z = gl_WorkGroupID.z; z < pc.batch; z += gl_NumWorkGroups.z) {
        const uint a_base = z * pc.stride_a, b_base = z * pc.stride_b, c_base = z * pc.stride_c;
        // Split-K: this workgroup's slice of K (C is then the f32 partials [slice][M][N]).
        const uint k_begin = pc.k_split != 0u ? z * pc.k_split : 0u;
        const uint k_end = pc.k_split != 0u ? min(K, k_begin + pc.k_split) : K;
        const uint tiles = (k_end - k_begin + BK - 1) / BK;
        // The TILES_M x TILES_N accumulators (at most 4 x 8, matmul.cpp) as named variables, and
        // the fragments below too: no array, so nothing indexed the driver could put in local
        // memory (it did with arrays: 640 bytes, 32 TFLOP/s on an H200).
        NN_ACC acc00 = NN_ACC(0.0), acc01 = NN_ACC(0.0), acc02 = NN_ACC(0.0), acc03 = NN_ACC(0.0);
        NN_ACC acc04 = NN_ACC(0.0), acc05 = NN_ACC(0.0), acc06 = NN_ACC(0.0), acc07 = NN_ACC(0.0);
        NN_ACC acc10 = NN_ACC(0.0), acc11 = NN_ACC(0.0), acc12 = NN_ACC(0.0), acc13 = NN_ACC(0.0);
        NN_ACC acc14 = NN_ACC(0.0), acc15 = NN_ACC(0.0), acc16 = NN_ACC(0.0), acc17 = NN_ACC(0.0);
        NN_ACC acc20 = NN_ACC(0.0), acc21 = NN_ACC(0.0), acc22 = NN_ACC(0.0), acc23 = NN_ACC(0.0);
        NN_ACC acc24 = NN_ACC(0.0), acc25 = NN_ACC(0.0), acc26 = NN_ACC(0.0), acc27 = NN_ACC(0.0);
        NN_ACC acc30 = NN_ACC(0.0), acc31 = NN_ACC(0.0), acc32 = NN_ACC(0.0), acc33 = NN_ACC(0.0);
        NN_ACC acc34 = NN_ACC(0.0), acc35 = NN_ACC(0.0), acc36 = NN_ACC(0.0), acc37 = NN_ACC(0.0);

        // Tile t's uvec4s into registers (the next tile loads while the current one multiplies).
        uvec4 ra[VA];
        uvec4 rb[VB];
#define LOAD_TILES(t)                                                                           \
        [[unroll]] for (uint q = 0; q < VA; ++q) {                                              \
            const uint v = tid + q * THREADS;                                                   \
            if (!TRANS_A) {                                                                     \
                const uint m = v / (BK / 8), k = (v % (BK / 8)) * 8;                            \
                ra[q] = load8_a(a_base, m0 + m, k_begin + (t) * BK + k, M, k_end, K);           \
            } else {                                                                            \
                const uint k = v / (BM / 8), m = (v % (BM / 8)) * 8;                            \
                ra[q] = load8_a(a_base, k_begin + (t) * BK + k, m0 + m, k_end, M, M);           \
            }                                                                                   \
        }                                                                                       \
        [[unroll]] for (uint q = 0; q < VB; ++q) {                                              \
            const uint v = tid + q * THREADS;                                                   \
            if (!TRANS_B) {                                                                     \
                const uint k = v / (BN / 8), n = (v % (BN / 8)) * 8;                            \
                rb[q] = load8_b(b_base, k_begin + (t) * BK + k, n0 + n, k_end, N, N);           \
            } else {                                                                            \
                const uint n = v / (BK / 8), k = (v % (BK / 8)) * 8;                            \
                rb[q] = load8_b(b_base, n0 + n, k_begin + (t) * BK + k, N, k_end, K);           \
            }                                                                                   \
        }
#define STORE_TILES(stage)                                                                      \
        [[unroll]] for (uint q = 0; q < VA; ++q) {                                              \
            const uint v = tid + q * THREADS;                                                   \
            As[(stage) * STAGE_A + (v / ROW_A) * LD_A + v % ROW_A] = ra[q];                     \
        }                                                                                       \
        [[unroll]] for (uint q = 0; q < VB; ++q) {                                              \
            const uint v = tid + q * THREADS;                                                   \
            Bs[(stage) * STAGE_B + (v / ROW_B) * LD_B + v % ROW_B] = rb[q];                     \
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
            [[unroll]] for (uint kk = 0; kk < BK; kk += KK) {
                fcoopmatNV<16, gl_ScopeSubgroup, MM, KK> fa0, fa1, fa2, fa3;
                fcoopmatNV<16, gl_ScopeSubgroup, KK, NN> fb0, fb1, fb2, fb3, fb4, fb5, fb6, fb7;
                NN_LOAD_FA(fa0, 0)
                NN_LOAD_FA(fa1, 1)
                NN_LOAD_FA(fa2, 2)
                NN_LOAD_FA(fa3, 3)
                NN_LOAD_FB(fb0, 0)
                NN_LOAD_FB(fb1, 1)
                NN_LOAD_FB(fb2, 2)
                NN_LOAD_FB(fb3, 3)
                NN_LOAD_FB(fb4, 4)
                NN_LOAD_FB(fb5, 5)
                NN_LOAD_FB(fb6, 6)
                NN_LOAD_FB(fb7, 7)
                NN_MMA(acc00, fa0, fb0, 0, 0)
                NN_MMA(acc01, fa0, fb1, 0, 1)
                NN_MMA(acc02, fa0, fb2, 0, 2)
                NN_MMA(acc03, fa0, fb3, 0, 3)
                NN_MMA(acc04, fa0, fb4, 0, 4)
                NN_MMA(acc05, fa0, fb5, 0, 5)
                NN_MMA(acc06, fa0, fb6, 0, 6)
                NN_MMA(acc07, fa0, fb7, 0, 7)
                NN_MMA(acc10, fa1, fb0, 1, 0)
                NN_MMA(acc11, fa1, fb1, 1, 1)
                NN_MMA(acc12, fa1, fb2, 1, 2)
                NN_MMA(acc13, fa1, fb3, 1, 3)
                NN_MMA(acc14, fa1, fb4, 1, 4)
                NN_MMA(acc15, fa1, fb5, 1, 5)
                NN_MMA(acc16, fa1, fb6, 1, 6)
                NN_MMA(acc17, fa1, fb7, 1, 7)
                NN_MMA(acc20, fa2, fb0, 2, 0)
                NN_MMA(acc21, fa2, fb1, 2, 1)
                NN_MMA(acc22, fa2, fb2, 2, 2)
                NN_MMA(acc23, fa2, fb3, 2, 3)
                NN_MMA(acc24, fa2, fb4, 2, 4)
                NN_MMA(acc25, fa2, fb5, 2, 5)
                NN_MMA(acc26, fa2, fb6, 2, 6)
                NN_MMA(acc27, fa2, fb7, 2, 7)
                NN_MMA(acc30, fa3, fb0, 3, 0)
                NN_MMA(acc31, fa3, fb1, 3, 1)
                NN_MMA(acc32, fa3, fb2, 3, 2)
                NN_MMA(acc33, fa3, fb3, 3, 3)
                NN_MMA(acc34, fa3, fb4, 3, 4)
                NN_MMA(acc35, fa3, fb5, 3, 5)
                NN_MMA(acc36, fa3, fb6, 3, 6)
                NN_MMA(acc37, fa3, fb7, 3, 7)
            }
            // Two stages: the next tile goes to the other one, which every subgroup finished
            // reading at the barrier that ended the previous tile. One stage: after a barrier.
            if (STAGES == 1u) barrier();
            if (t + 1 < tiles) {
                STORE_TILES(STAGES == 2u ? ((t + 1) & 1u) : 0u)
            }
            barrier();
        }

        // Each accumulator through this subgroup's shared tile to C.
        NN_STORE_ACC(acc00, 0, 0)
        NN_STORE_ACC(acc01, 0, 1)
        NN_STORE_ACC(acc02, 0, 2)
        NN_STORE_ACC(acc03, 0, 3)
        NN_STORE_ACC(acc04, 0, 4)
        NN_STORE_ACC(acc05, 0, 5)
        NN_STORE_ACC(acc06, 0, 6)
        NN_STORE_ACC(acc07, 0, 7)
        NN_STORE_ACC(acc10, 1, 0)
        NN_STORE_ACC(acc11, 1, 1)
        NN_STORE_ACC(acc12, 1, 2)
        NN_STORE_ACC(acc13, 1, 3)
        NN_STORE_ACC(acc14, 1, 4)
        NN_STORE_ACC(acc15, 1, 5)
        NN_STORE_ACC(acc16, 1, 6)
        NN_STORE_ACC(acc17, 1, 7)
        NN_STORE_ACC(acc20, 2, 0)
        NN_STORE_ACC(acc21, 2, 1)
        NN_STORE_ACC(acc22, 2, 2)
        NN_STORE_ACC(acc23, 2, 3)
        NN_STORE_ACC(acc24, 2, 4)
        NN_STORE_ACC(acc25, 2, 5)
        NN_STORE_ACC(acc26, 2, 6)
        NN_STORE_ACC(acc27, 2, 7)
        NN_STORE_ACC(acc30, 3, 0)
        NN_STORE_ACC(acc31, 3, 1)
        NN_STORE_ACC(acc32, 3, 2)
        NN_STORE_ACC(acc33, 3, 3)
        NN_STORE_ACC(acc34, 3, 4)
        NN_STORE_ACC(acc35, 3, 5)
        NN_STORE_ACC(acc36, 3, 6)
        NN_STORE_ACC(acc37, 3, 7)
    }
}
