// Shared pieces of the tensor-core attention kernels (attention_coopmat*.comp): f16 16 x 16
// fragments (HALF), f32 16 x 16 accumulators (ACC), the padded shared-memory row layout of
// Q, K, V and dout tiles, and the per-subgroup score and probability tiles. Before including,
// declare HEAD_DIM (16, 32, 48 or 64) and shared arrays s_sh[4][16 * SLD] (float).
#ifndef NN_ATTENTION_COOPMAT_GLSL
#define NN_ATTENTION_COOPMAT_GLSL

#define ACC fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>
#define HALF fcoopmatNV<16, gl_ScopeSubgroup, 16, 16>

const uint DV = HEAD_DIM / 8u;   // uvec4s (8 halves) per row of Q, K, V, dout
const uint LD = DV + 1u;         // shared row stride in uvec4s: one of padding against bank conflicts
const uint DC = HEAD_DIM / 16u;  // 16-wide chunks of a row
const uint TILE = 32u;           // keys (or queries) per tile of the loop
const uint SLD = TILE + 4u;      // floats per row of a subgroup's 16 x TILE f32 tile
const uint PLD = TILE / 8u + 1u; // uvec4s per row of a subgroup's 16 x TILE f16 tile

// X(c) for each 16-wide chunk c < DC of a row: the accumulators and fragments per chunk are
// named variables (x0 .. x3), nothing indexed for the driver to put in local memory.
#define FOR_CHUNKS(X) X(0) if (DC > 1) { X(1) } if (DC > 2) { X(2) } if (DC > 3) { X(3) }

// `rows` rows of a [.][len][heads][HEAD_DIM] f16 tensor (row `first + i` of head `head` in
// batch `b`; zeros from row `valid` on, never read) into the padded shared tile `dst`.
#define NN_LOAD_ROWS(dst, src, rows, b, len, valid, heads, head, first)                 \
    for (uint i_ = gl_LocalInvocationID.x; i_ < (rows) * DV; i_ += gl_WorkGroupSize.x) { \
        const uint row_ = i_ / DV, c_ = i_ % DV, at_ = (first) + row_;                  \
        dst[row_ * LD + c_] = at_ < (valid) ? src[(((b) * (len) + at_) * (heads) + (head)) * DV + c_] : uvec4(0u); \
    }

// The same for a TILE-row tile in two steps: NN_FETCH_TILE into registers `regs`
// (uvec4[FETCH]; the global loads stay in flight while the current tile is multiplied), then
// NN_PUT_TILE into `dst`. The workgroup has 128 invocations.
const uint FETCH = (TILE * DV + 127u) / 128u;
#define NN_FETCH_TILE(regs, src, b, len, valid, heads, head, first)                     \
    [[unroll]] for (uint f_ = 0u; f_ < FETCH; ++f_) {                                   \
        const uint i_ = gl_LocalInvocationID.x + f_ * 128u;                             \
        const uint row_ = i_ / DV, c_ = i_ % DV, at_ = (first) + row_;                  \
        regs[f_] = i_ < TILE * DV && at_ < (valid) ? src[(((b) * (len) + at_) * (heads) + (head)) * DV + c_] : uvec4(0u); \
    }
#define NN_PUT_TILE(dst, regs)                                                          \
    [[unroll]] for (uint f_ = 0u; f_ < FETCH; ++f_) {                                   \
        const uint i_ = gl_LocalInvocationID.x + f_ * 128u;                             \
        if (i_ < TILE * DV) dst[(i_ / DV) * LD + i_ % DV] = regs[f_];                   \
    }

// Multiplies each row r of accumulator `acc` by scale[r] (a shared float[16]); `rows_of` holds
// each element's row (loaded once from a matrix of row numbers: every matrix of one type lays
// its elements out alike).
// The loop unrolls (length() is a constant to the driver): an accumulator indexed by a loop
// variable went to local memory (the forward kernel ran 1.6x slower than the f32 one).
#define NN_SCALE_ROWS(acc, scale)                                                       \
    [[unroll]] for (int i_ = 0; i_ < acc.length(); ++i_) acc[i_] *= scale[uint(rows_of[i_])];

// Sets `rows_of` from this subgroup's score tile s_sh[warp] (overwritten).
#define NN_ROWS_OF()                                                                    \
    for (uint e_ = lane; e_ < 256u; e_ += 32u) s_sh[warp][(e_ / 16u) * SLD + e_ % 16u] = float(e_ / 16u); \
    subgroupMemoryBarrierShared();                                                      \
    subgroupBarrier();                                                                  \
    coopMatLoadNV(rows_of, s_sh[warp], 0, SLD, false);                                 \
    subgroupMemoryBarrierShared();                                                      \
    subgroupBarrier();

// dst[row, chunk c] = NN_STORE(NN_LOAD(dst) + alpha acc) (or = alpha acc without ADD) for the
// 16 rows first .. first+15 of head `head` below `len`, through s_sh[warp].
#define NN_STORE_CHUNK(dst, acc, c, alpha, add, b, len, heads, head, first)             \
    coopMatStoreNV(acc, s_sh[warp], 0, SLD, false);                                     \
    subgroupMemoryBarrierShared();                                                      \
    subgroupBarrier();                                                                  \
    for (uint e_ = lane; e_ < 256u; e_ += 32u) {                                        \
        const uint row_ = (first) + e_ / 16u;                                           \
        if (row_ < (len)) {                                                             \
            const uint at_ = (((b) * (len) + row_) * (heads) + (head)) * HEAD_DIM + (c) * 16u + e_ % 16u; \
            const float value_ = (alpha) * s_sh[warp][(e_ / 16u) * SLD + e_ % 16u];    \
            dst[at_] = NN_STORE((add) ? NN_LOAD(dst[at_]) + value_ : value_);           \
        }                                                                               \
    }                                                                                   \
    subgroupMemoryBarrierShared();                                                      \
    subgroupBarrier();

#endif  // NN_ATTENTION_COOPMAT_GLSL
