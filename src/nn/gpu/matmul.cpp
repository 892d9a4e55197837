// The gpu backend's matmul: the tiled f32 kernel (shaders/matmul.comp) for every dtype, and
// the tensor-core kernel (shaders/matmul_coopmat.comp) for f16 A and B where the device has
// GL_NV_cooperative_matrix's f16 x f16 -> f32 shapes.
//
// Split-K (record_matmul): where C has too few blocks to fill a large GPU and K is long (the
// GPT weight gradients X^T dY: M, N = 384..1536, K = 16384), K is cut into slices whose f32
// partials are summed in order by matmul_split_sum.comp: deterministic.
//
// Tuning (bench/nn_gpu.sh): TAPEVM_NN_MATMUL_TILE="BMxBNxBK[xSTAGES]" picks the tiled kernel's block
// (default 128x128x16 for large C, 128x64x16 for tall C with N <= 512, 64x64x16 for small);
// TAPEVM_NN_COOPMAT_TILE="BMxBNxBKxWARPS_M[xWARPS_N]" the tensor-core kernel's (default
// 128x128x64x2x4, 8 subgroups; WARPS_N left out: 4 / WARPS_M),
// TAPEVM_NN_COOPMAT_STAGES its shared-memory stages (1 or 2).
#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "backend.hpp"
#include "tapevm/error.hpp"

namespace tapevm::nn::detail {
namespace {

std::uint32_t u32(std::size_t value) { return static_cast<std::uint32_t>(value); }

/// Push constants of both matmul shaders (the same block in GLSL).
struct MatmulPush {
    std::uint32_t m, n, k, batch;
    std::uint32_t stride_a, stride_b, stride_c;
    float alpha, beta;
    std::uint32_t vec_a, vec_b;
    std::uint32_t k_split;  // 0: no split-K
    std::uint32_t bias;     // 1: C += bias (binding 3)
};
static_assert(sizeof(MatmulPush) == 52);

/// Up to five unsigned numbers separated by 'x' from environment variable `name`.
std::array<std::uint32_t, 5> env_tile(const char* name) {
    std::array<std::uint32_t, 5> values{};
    const char* text = std::getenv(name);
    if (text != nullptr)
        std::sscanf(text, "%ux%ux%ux%ux%u", &values[0], &values[1], &values[2], &values[3], &values[4]);
    return values;
}

struct Geometry {
    std::size_t m, n, k, batch, stride_a, stride_b, stride_c;
};

Geometry geometry(const Tensor& a, const Tensor& b, const Tensor& c, const MatmulOptions& options) {
    Geometry g{};
    g.m = c.dim(-2);
    g.n = c.dim(-1);
    g.batch = c.rank() == 3 ? c.dim(0) : 1;
    g.k = options.transpose_a ? a.dim(-2) : a.dim(-1);
    g.stride_a = a.rank() == 3 ? g.m * g.k : 0;
    g.stride_b = b.rank() == 3 ? g.k * g.n : 0;
    g.stride_c = g.m * g.n;
    return g;
}

/// The push constants of the product `g` (no split, no bias: record_matmul sets those). vec_a
/// and vec_b are 1 where A's (B's) rows and batch strides are multiples of `vector` elements, so
/// the kernel may load `vector` at a time; `vector` 0: never.
MatmulPush matmul_push(const Geometry& g, const MatmulOptions& options, std::size_t vector) {
    const std::size_t lda = options.transpose_a ? g.m : g.k, ldb = options.transpose_b ? g.k : g.n;
    const auto aligned = [&](std::size_t leading, std::size_t stride) {
        return vector != 0 && leading % vector == 0 && stride % vector == 0 ? 1u : 0u;
    };
    return MatmulPush{u32(g.m),
                      u32(g.n),
                      u32(g.k),
                      u32(g.batch),
                      u32(g.stride_a),
                      u32(g.stride_b),
                      u32(g.stride_c),
                      static_cast<float>(options.alpha),
                      static_cast<float>(options.beta),
                      aligned(lda, g.stride_a),
                      aligned(ldb, g.stride_b),
                      0,
                      0};
}

/// Split-K slices for a C of `blocks` workgroups: 1 (none) unless C alone would leave most of a
/// large GPU idle (batch 1, fewer than 128 blocks) and K is long (512 or more); then up to 256
/// workgroups in all, slices of at least 128 k. (The small MLP's weight gradients, 64 x 64 over
/// K = 1,024, took 110 us in one workgroup on the H100.) Depends on the shape only, so results
/// stay deterministic. TAPEVM_NN_MATMUL_SPLIT=S forces S slices (1: never split) for measurements.
std::size_t split_slices(const Geometry& g, std::size_t blocks) {
    if (g.batch != 1) return 1;
    if (const char* env = std::getenv("TAPEVM_NN_MATMUL_SPLIT"); env != nullptr)
        return std::max<std::size_t>(1, std::strtoul(env, nullptr, 10));
    if (blocks >= 128 || g.k < 512) return 1;
    return std::min<std::size_t>({(256 + blocks - 1) / blocks, g.k / 128, 64});
}

/// Records `shader_prefix` + C's dtype with `push` (and split-K where split_slices() says: the
/// slices' f32 partials into scratch through `shader_prefix` + "f32", then matmul_split_sum).
void record_matmul(GpuBackend& gpu, const std::string& shader_prefix,
                   std::span<const std::uint32_t> constants, MatmulPush push, const Geometry& g,
                   std::uint32_t bm, std::uint32_t bn, std::uint32_t bk, const Tensor& a, const Tensor& b,
                   const Tensor& c, const Tensor& bias) {
    push.bias = bias.defined() ? 1u : 0u;
    const std::size_t blocks = ((g.m + bm - 1) / bm) * ((g.n + bn - 1) / bn);
    std::size_t slices = g.k == 0 ? 1 : std::min(split_slices(g, blocks), g.k);
    std::size_t k_split = 0;
    if (slices > 1) {
        k_split = ((g.k + slices - 1) / slices + bk - 1) / bk * bk;
        slices = (g.k + k_split - 1) / k_split;
    }
    const std::size_t partial_elements = slices * g.m * g.n;
    if (slices <= 1 || partial_elements >= (std::size_t{1} << 32) ||
        partial_elements * sizeof(float) > gpu.max_binding_bytes()) {
        gpu.dispatch(
            gpu.pipeline(shader_prefix + shader_suffix(c.dtype()), constants), {a, b, c, bias}, push,
            {u32((g.n + bn - 1) / bn), u32((g.m + bm - 1) / bm), u32(std::min<std::size_t>(g.batch, 65535))});
        return;
    }
    const Tensor partials = gpu.scratch({slices, g.m, g.n}, DType::f32);
    MatmulPush slice_push = push;
    slice_push.batch = u32(slices);
    slice_push.stride_a = slice_push.stride_b = 0;
    slice_push.stride_c = u32(g.m * g.n);
    slice_push.alpha = 1;
    slice_push.beta = 0;
    slice_push.k_split = u32(k_split);
    slice_push.bias = 0;  // added once, by matmul_split_sum
    gpu.dispatch(gpu.pipeline(shader_prefix + "f32", constants), {a, b, partials, Tensor()}, slice_push,
                 {u32((g.n + bn - 1) / bn), u32((g.m + bm - 1) / bm), u32(slices)});
    const struct {
        std::uint32_t mn, slices;
        float alpha, beta;
        std::uint32_t n, bias;
    } sum_push{u32(g.m * g.n), u32(slices), push.alpha, push.beta, u32(g.n), push.bias};
    gpu.dispatch(gpu.pipeline(std::string("matmul_split_sum_") + shader_suffix(c.dtype())),
                 {partials, c, bias}, sum_push, {GpuBackend::groups_for(g.m * g.n, 256, 4096), 1, 1});
}

}  // namespace

void GpuBackend::matmul(const Tensor& a, const Tensor& b, const Tensor& c, const MatmulOptions& options) {
    for (const DType dtype : {a.dtype(), c.dtype()})
        if (!supports(dtype) || dtype == DType::i32) unsupported(KernelId::matmul, dtype);
    const Geometry g = geometry(a, b, c, options);
    if (g.m == 0 || g.n == 0 || g.batch == 0) return;
    for (const Tensor* tensor : {&a, &b, &c}) {
        if (tensor->size() >= (std::size_t{1} << 32))
            throw Unsupported("matmul: " + tensor->describe() + " has 2^32 elements or more");
    }
    if (a.dtype() == DType::f16 && matmul_cooperative(a, b, c, options)) return;
    matmul_tiled(a, b, c, options);
}

void GpuBackend::matmul_tiled(const Tensor& a, const Tensor& b, const Tensor& c,
                              const MatmulOptions& options) {
    const Geometry g = geometry(a, b, c, options);
    std::uint32_t bm = 128, bn = 128, bk = 16;
    if (g.m * g.n <= 256 * 256 || g.m < 128 || g.n < 128) {
        bm = bn = 64;
    } else if (g.n <= 512 && g.m >= 4096) {
        bn = 64;  // the GPT shapes' N = 384: 20-25% faster than 128x128 on the H100 (bench/nn_tune.sh)
    }
    if (const auto tile = env_tile("TAPEVM_NN_MATMUL_TILE"); tile[0] != 0) {
        bm = tile[0];
        bn = tile[1];
        bk = tile[2];
    }
    // Shared-memory stages: TAPEVM_NN_MATMUL_TILE's fourth number (1 or 2). Two won at 4096^3
    // (31.4 against 29.7 TFLOP/s on the H100), one with the 128x64 tiles of the GPT shapes.
    std::uint32_t stages = bn == 64 && bm == 128 ? 1 : 2;
    if (4 * stages * bk * (bm + bn) > max_shared_memory()) stages = 1;  // a device with little shared memory
    if (const auto tile = env_tile("TAPEVM_NN_MATMUL_TILE"); tile[3] != 0) stages = tile[3];
    const std::uint32_t threads = bm * bn / 64;
    const bool valid = bm % 8 == 0 && bn % 8 == 0 && bk % 4 == 0 && threads >= 32 && threads <= 1024 &&
                       (bm * bk) % (4 * threads) == 0 && (bn * bk) % (4 * threads) == 0 &&
                       (stages == 1 || stages == 2) && 4 * stages * bk * (bm + bn) <= max_shared_memory();
    if (!valid)
        throw Error("matmul: tile " + std::to_string(bm) + "x" + std::to_string(bn) + "x" +
                    std::to_string(bk) + "x" + std::to_string(stages) +
                    " (TAPEVM_NN_MATMUL_TILE) is not one matmul.comp takes on this device");
    // f32 rows of A and B are read four floats at a time where they stay aligned.
    const MatmulPush push = matmul_push(g, options, a.dtype() == DType::f32 ? 4 : 0);
    if ((g.n + bn - 1) / bn > 65535 || (g.m + bm - 1) / bm > 65535)
        throw Unsupported("matmul: " + c.describe() + " is too large");
    const std::string prefix = std::string("matmul_") + shader_suffix(a.dtype()) + "_";
    const std::array<std::uint32_t, 7> constants{
        bm, bn, bk, options.transpose_a ? 1u : 0u, options.transpose_b ? 1u : 0u, threads, stages};
    record_matmul(*this, prefix, constants, push, g, bm, bn, bk, a, b, c, options.bias);
}

bool GpuBackend::matmul_cooperative(const Tensor& a, const Tensor& b, const Tensor& c,
                                    const MatmulOptions& options) {
    std::uint32_t mm = 16, nn = 16, kk = 16;
    if (!cooperative_shape(16, 16, 16)) {
        if (!cooperative_shape(16, 8, 16)) return false;
        nn = 8;
    }
    const Geometry g = geometry(a, b, c, options);
    // 8 subgroups of 64 x 32 each, K 64 at a time: on the H100 the fastest on 10 of the 12 GPT
    // shapes and 160 TFLOP/s at 4096^3 against 143 with K 32 (bench/nn_tune.sh, 2026-11-26;
    // 128x64, 64x64, 64x128, 256x128, 128x256, 4 x 2 subgroups and two shared-memory stages lost).
    std::uint32_t bm = 128, bn = 128, bk = 64, warps_m = 2, warps_n = 4;
    if (max_shared_memory() < 45 * 1024) bk = 32;  // the K-64 tiles take 44 KiB of shared memory
    if (const auto tile = env_tile("TAPEVM_NN_COOPMAT_TILE"); tile[0] != 0) {
        bm = tile[0];
        bn = tile[1];
        bk = tile[2];
        warps_m = tile[3];
        warps_n = tile[4] != 0 ? tile[4] : 4 / std::max(warps_m, 1u);
    }
    // Shared-memory stages of A and B: TAPEVM_NN_COOPMAT_STAGES (1 or 2; default 1).
    std::uint32_t stages = 1;
    if (const char* env = std::getenv("TAPEVM_NN_COOPMAT_STAGES"); env != nullptr)
        stages = std::strtoul(env, nullptr, 10);
    const std::uint32_t threads = 32 * warps_m * warps_n;  // subgroups of 32
    // Shared memory (matmul_coopmat.comp): A and B tiles with rows padded by 8 halves, and one
    // MM x NN f32 tile per subgroup for the epilogue.
    const std::uint32_t rows_a = options.transpose_a ? bk : bm, row_a = options.transpose_a ? bm : bk;
    const std::uint32_t rows_b = options.transpose_b ? bn : bk, row_b = options.transpose_b ? bk : bn;
    const std::size_t shared =
        2u * stages * (rows_a * (row_a + 8) + rows_b * (row_b + 8)) + 4u * (threads / 32) * mm * nn;
    const bool valid = warps_m > 0 && warps_n > 0 && threads <= 1024 && bm % (warps_m * mm) == 0 &&
                       bn % (warps_n * nn) == 0 && bm / (warps_m * mm) <= 4 &&
                       bn / (warps_n * nn) <= 8 &&  // the shader's named accumulators
                       bk % kk == 0 && bk % 8 == 0 && bm % 8 == 0 && bn % 8 == 0 &&
                       (bm * bk / 8) % threads == 0 && (bk * bn / 8) % threads == 0 &&
                       (stages == 1 || stages == 2) && shared <= max_shared_memory();
    if (!valid)
        throw Error("matmul: cooperative tile " + std::to_string(bm) + "x" + std::to_string(bn) + "x" +
                    std::to_string(bk) + "x" + std::to_string(warps_m) + "x" + std::to_string(warps_n) +
                    " (TAPEVM_NN_COOPMAT_TILE) is not valid");
    // f16 rows of A and B are read eight halves (16 bytes) at a time where they stay aligned.
    const MatmulPush push = matmul_push(g, options, 8);
    if ((g.n + bn - 1) / bn > 65535 || (g.m + bm - 1) / bm > 65535) return false;
    const std::array<std::uint32_t, 11> constants{
        bm, bn,      bk,    options.transpose_a ? 1u : 0u, options.transpose_b ? 1u : 0u, warps_m, mm, nn,
        kk, threads, stages};
    // A driver that refuses the tensor-core pipelines leaves f16 to the tiled kernel (said once on
    // stderr; has_cooperative_matrix() turns false, which test_nn_gpu_matmul reports).
    try {
        pipeline(std::string("matmul_coopmat_f16_") + shader_suffix(c.dtype()), constants);
        pipeline("matmul_coopmat_f16_f32", constants);
    } catch (const DeviceUnavailable& error) {
        std::fprintf(stderr,
                     "nn gpu: the tensor-core matmul is unavailable (%s); f16 matmul runs the f32 kernel\n",
                     error.what());
        cooperative_matrix_ = false;
        return false;
    }
    record_matmul(*this, "matmul_coopmat_f16_", constants, push, g, bm, bn, bk, a, b, c, options.bias);
    return true;
}

}  // namespace tapevm::nn::detail
