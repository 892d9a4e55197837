// The gpu device's matmul (src/nn/gpu/matmul.cpp, shaders/matmul.comp) against the f64
// product of the (rounded) inputs: NN/NT/TN/TT, alpha and beta, batches with either operand
// shared, K not a multiple of any tile, both block sizes, vec4 and scalar loads, f32/f16/bf16
// inputs and outputs; determinism. The tensor-core kernel (matmul_coopmat.comp) cannot run on
// lavapipe: its SPIR-V is checked with spirv-val, and f16 there runs the tiled kernel.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "context.hpp"
#include "gpu/backend.hpp"
#include "gpu/pipelines.hpp"
#include "tapevm/error.hpp"
#include "tapevm/nn/device.hpp"
#include "tapevm/nn/kernels.hpp"
#include "tapevm/nn/tensor.hpp"

#include "nn_gpu_device.hpp"
using namespace tapevm::nn;

namespace {

Device gpu() { return tapevm::nn::test::gpu_device(); }

double unit(DType dtype) {
    switch (dtype) {
        case DType::f16: return std::ldexp(1.0, -11);
        case DType::bf16: return std::ldexp(1.0, -8);
        default: return std::ldexp(1.0, -24);
    }
}

std::vector<double> random_values(std::size_t n, DType dtype, std::uint64_t seed) {
    std::uint64_t state = seed * 0x9e3779b97f4a7c15ull + 5;
    std::vector<double> values(n);
    for (double& value : values) {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        value = round_to(dtype, -1 + 2 * static_cast<double>(state >> 11) * std::ldexp(1.0, -53));
    }
    return values;
}

struct Case {
    std::size_t batch, m, n, k;
    bool batched_a, batched_b, transpose_a, transpose_b;
    double alpha, beta;
};

/// Runs one case and checks C elementwise within 2 K u32 sum|a||b| (f32 accumulation) plus the
/// rounding of C to its dtype. Returns C's bytes.
std::vector<std::byte> run_case(const Case& c, DType in, DType out) {
    CAPTURE(c.batch);
    CAPTURE(c.m);
    CAPTURE(c.n);
    CAPTURE(c.k);
    CAPTURE(c.transpose_a);
    CAPTURE(c.transpose_b);
    CAPTURE(c.batched_a);
    CAPTURE(c.batched_b);
    CAPTURE(dtype_name(in));
    CAPTURE(dtype_name(out));
    const bool batched_c = c.batched_a || c.batched_b || c.batch > 1;
    const std::size_t batch_a = c.batched_a ? c.batch : 1, batch_b = c.batched_b ? c.batch : 1;
    const auto a = random_values(batch_a * c.m * c.k, in, c.m * 7 + c.k);
    const auto b = random_values(batch_b * c.k * c.n, in, c.n * 5 + c.k + 1);
    const auto c0 = random_values(c.batch * c.m * c.n, out, 99);
    Shape a_shape = c.transpose_a ? Shape{c.k, c.m} : Shape{c.m, c.k};
    Shape b_shape = c.transpose_b ? Shape{c.n, c.k} : Shape{c.k, c.n};
    Shape c_shape = {c.m, c.n};
    if (c.batched_a) a_shape.insert(a_shape.begin(), c.batch);
    if (c.batched_b) b_shape.insert(b_shape.begin(), c.batch);
    if (batched_c) c_shape.insert(c_shape.begin(), c.batch);
    const Tensor ta = gpu().upload(a_shape, std::span<const double>(a), in);
    const Tensor tb = gpu().upload(b_shape, std::span<const double>(b), in);
    const Tensor tc = gpu().upload(c_shape, std::span<const double>(c0), out);
    MatmulOptions options;
    options.transpose_a = c.transpose_a;
    options.transpose_b = c.transpose_b;
    options.alpha = c.alpha;
    options.beta = c.beta;
    matmul(ta, tb, tc, options);
    const auto got = tc.to_double();
    for (std::size_t z = 0; z < c.batch; ++z) {
        const std::size_t za = c.batched_a ? z : 0, zb = c.batched_b ? z : 0;
        for (std::size_t i = 0; i < c.m; ++i) {
            for (std::size_t j = 0; j < c.n; ++j) {
                double sum = 0, magnitude = 0;
                for (std::size_t l = 0; l < c.k; ++l) {
                    const double av =
                        c.transpose_a ? a[(za * c.k + l) * c.m + i] : a[(za * c.m + i) * c.k + l];
                    const double bv =
                        c.transpose_b ? b[(zb * c.n + j) * c.k + l] : b[(zb * c.k + l) * c.n + j];
                    sum += av * bv;
                    magnitude += std::abs(av * bv);
                }
                const std::size_t at = (z * c.m + i) * c.n + j;
                const double want = c.alpha * sum + c.beta * c0[at];
                const double tolerance = (2.0 * static_cast<double>(c.k) + 4) * std::ldexp(1.0, -24) *
                                             (std::abs(c.alpha) * magnitude + std::abs(c.beta * c0[at])) +
                                         unit(out) * std::abs(want) + 1e-30;
                INFO("C[" << z << "][" << i << "][" << j << "] = " << got[at] << ", want " << want << " +- "
                          << tolerance);
                REQUIRE(std::abs(got[at] - want) <= tolerance);
            }
        }
    }
    return tc.to_bytes();
}

}  // namespace

TEST_CASE("gpu matmul f32: layouts, alpha and beta, awkward shapes") {
    for (const bool ta : {false, true}) {
        for (const bool tb : {false, true}) {
            run_case({1, 1, 1, 1, false, false, ta, tb, 1, 0}, DType::f32, DType::f32);
            run_case({1, 7, 13, 5, false, false, ta, tb, 0.5, 1}, DType::f32, DType::f32);
            run_case({1, 65, 33, 129, false, false, ta, tb, -1, 0.25}, DType::f32, DType::f32);
            run_case({1, 64, 68, 40, false, false, ta, tb, 1, 0}, DType::f32, DType::f32);  // vec4 loads
        }
    }
    run_case({1, 5, 3, 0, false, false, false, false, 1, 0.5}, DType::f32, DType::f32);  // K = 0: C = beta C
}

TEST_CASE("gpu matmul f32: the 128 x 128 block and a partial edge") {
    run_case({1, 260, 257, 20, false, false, false, false, 1, 0}, DType::f32, DType::f32);
    run_case({1, 260, 132, 24, false, false, true, true, 1, 1}, DType::f32, DType::f32);
}

TEST_CASE("gpu matmul f32: one shared-memory stage (TAPEVM_NN_MATMUL_TILE's fourth number)") {
    setenv("TAPEVM_NN_MATMUL_TILE", "64x64x16x1", 1);
    run_case({1, 130, 70, 50, false, false, false, true, 1, 0.5}, DType::f32, DType::f32);
    run_case({2, 65, 66, 33, false, true, true, false, 1, 0}, DType::f32, DType::f32);
    unsetenv("TAPEVM_NN_MATMUL_TILE");
}

TEST_CASE("gpu matmul: batches, with A or B shared") {
    run_case({3, 9, 10, 11, true, true, false, false, 1, 0}, DType::f32, DType::f32);
    run_case({3, 9, 10, 11, true, false, false, true, 1, 1}, DType::f32, DType::f32);
    run_case({2, 16, 8, 12, false, true, true, false, 2, 0}, DType::f32, DType::f32);
}

TEST_CASE("gpu matmul f16 and bf16 storage, C in f32, f16 or bf16") {
    for (const DType in : {DType::f16, DType::bf16}) {
        if (!gpu().supports(in)) continue;
        for (const DType out : {DType::f32, in}) {
            run_case({1, 17, 9, 33, false, false, false, true, 1, 0}, in, out);
            run_case({2, 8, 24, 16, true, true, true, false, 1, 1}, in, out);
        }
    }
    run_case({1, 5, 7, 9, false, false, false, false, 1, 0}, DType::f32, DType::bf16);
}

TEST_CASE(
    "gpu matmul f16 on every layout, aligned and not (the tensor-core kernel where the device has it)") {
    if (!gpu().supports(DType::f16)) return;
    for (const bool ta : {false, true}) {
        for (const bool tb : {false, true}) {
            run_case({1, 33, 40, 24, false, false, ta, tb, 1, 0}, DType::f16, DType::f32);    // unaligned M
            run_case({1, 64, 64, 48, false, false, ta, tb, 0.5, 1}, DType::f16, DType::f32);  // 8-wide loads
        }
    }
    run_case({1, 130, 136, 72, false, false, false, false, 1, 0}, DType::f16, DType::f16);  // several blocks
    run_case({3, 16, 24, 40, true, false, false, true, 1, 0}, DType::f16, DType::bf16);     // batch, shared B
}

TEST_CASE("gpu matmul split-K: a small C with a long K, and forced slices") {
    run_case({1, 9, 10, 3000, false, false, false, false, 1, 0}, DType::f32, DType::f32);
    run_case({1, 9, 10, 3000, false, false, true, true, 0.5, 1}, DType::f32, DType::f32);
    if (gpu().supports(DType::f16))
        run_case({1, 17, 8, 2500, false, false, true, false, 1, 1}, DType::f16, DType::f16);
    setenv("TAPEVM_NN_MATMUL_SPLIT", "3", 1);
    run_case({1, 12, 20, 100, false, false, false, true, 2, 0.5}, DType::f32, DType::bf16);
    const Case c{1, 7, 9, 70, false, false, false, false, 1, 0};
    CHECK(run_case(c, DType::f32, DType::f32) == run_case(c, DType::f32, DType::f32));
    unsetenv("TAPEVM_NN_MATMUL_SPLIT");
}

TEST_CASE("gpu matmul is deterministic") {
    const Case c{1, 70, 50, 90, false, false, false, true, 1, 0};
    CHECK(run_case(c, DType::f32, DType::f32) == run_case(c, DType::f32, DType::f32));
}

TEST_CASE("gpu matmul: a tile the device cannot take is an error naming it") {
    setenv("TAPEVM_NN_MATMUL_TILE", "128x128x3", 1);
    const Tensor a = gpu().zeros({4, 4}, DType::f32), b = gpu().zeros({4, 4}, DType::f32),
                 c = gpu().zeros({4, 4}, DType::f32);
    CHECK_THROWS_AS(matmul(a, b, c), tapevm::Error);
    unsetenv("TAPEVM_NN_MATMUL_TILE");
    matmul(a, b, c);
    CHECK(c.to_double() == std::vector<double>(16, 0.0));
}

TEST_CASE("gpu matmul_coopmat: the tensor-core kernels' SPIR-V validates") {
    auto& backend = static_cast<detail::GpuBackend&>(gpu().backend());
    const auto& features = backend.device().compute_features();
    const bool offered = features.cooperative_matrix && backend.subgroup_size() == 32 &&
                         !features.cooperative_f16_f32_shapes.empty() &&
                         std::getenv("TAPEVM_NN_COOPMAT") == nullptr;
    // Where the device offers them, the f16 cases above ran on tensor cores (a pipeline the
    // driver refused would have switched them off).
    CHECK(backend.has_cooperative_matrix() == offered);
    if (!offered) MESSAGE("this device has no cooperative matrices: f16 matmul ran the tiled kernel above");
#ifdef TAPEVM_SPIRV_VAL
    // The build machine's spirv-val; a packed test run elsewhere (the GPU machine) may lack it.
    if (!std::filesystem::exists(TAPEVM_SPIRV_VAL)) {
        MESSAGE("spirv-val (" TAPEVM_SPIRV_VAL ") not on this machine: SPIR-V not validated here");
        return;
    }
    for (const char* name : {"matmul_coopmat_f16_f32", "matmul_coopmat_f16_f16", "matmul_coopmat_f16_bf16"}) {
        CAPTURE(name);
        const auto spirv = detail::embedded_nn_spirv(name);
        REQUIRE_FALSE(spirv.empty());
        const std::string path =
            std::string("/tmp/tapevm_nn_") + name + "_" + std::to_string(getpid()) + ".spv";
        std::ofstream(path, std::ios::binary)
            .write(reinterpret_cast<const char*>(spirv.data()),
                   static_cast<std::streamsize>(spirv.size_bytes()));
        const std::string command = std::string(TAPEVM_SPIRV_VAL) + " --target-env vulkan1.2 " + path;
        CHECK(std::system(command.c_str()) == 0);
        std::remove(path.c_str());
    }
#else
    MESSAGE("spirv-val not installed: SPIR-V not validated");
#endif
}

TEST_CASE("gpu matmul: a bias of the wrong shape or dtype is an error naming matmul's bias") {
    const Tensor a = gpu().zeros({4, 3}, DType::f32), b = gpu().zeros({3, 5}, DType::f32),
                 c = gpu().zeros({4, 5}, DType::f32);
    for (const Tensor& bias : {gpu().zeros({4}, DType::f32), gpu().zeros({5, 1}, DType::f32)}) {
        CHECK_THROWS_WITH_AS(matmul(a, b, c, {.bias = bias}), doctest::Contains("bias"), tapevm::Error);
    }
    if (gpu().supports(DType::f16))
        CHECK_THROWS_WITH_AS(matmul(a, b, c, {.bias = gpu().zeros({5}, DType::f16)}),
                             doctest::Contains("bias"), tapevm::Error);
    const std::vector<double> bias_values = {1, 2, 3, 4, 5};
    matmul(a, b, c, {.bias = gpu().upload({5}, std::span<const double>(bias_values), DType::f32)});
    CHECK(c.to_double()[9] == 5.0);  // row 1, column 4: 0 + bias[4]
}
