// The gpu device's backend (src/nn/gpu): memory (upload, read-back, zero, fill, copy across
// dtypes), the stream (250 dispatches then one read, tensors dropped before the work ran, the
// device error buffer through run-time GLSL), out of memory, and the summing kernels
// (bias_add, add_assign, reduce_sum, transpose_2d, global_norm_squared) against direct f64
// formulas, on f32, f16 and bf16 at tiny awkward shapes; determinism (bitwise repeats).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "context.hpp"
#include "gpu/backend.hpp"
#include "gpu/buffer_pool.hpp"
#include "gpu/pipelines.hpp"
#include "tapevm/error.hpp"
#include "tapevm/nn/device.hpp"
#include "tapevm/nn/kernels.hpp"
#include "tapevm/nn/tensor.hpp"

#include "nn_gpu_device.hpp"
using namespace tapevm::nn;

namespace {

const DType float_dtypes[] = {DType::f32, DType::f16, DType::bf16};

Device gpu() { return tapevm::nn::test::gpu_device(); }

detail::GpuBackend& backend() { return static_cast<detail::GpuBackend&>(gpu().backend()); }

double unit(DType dtype) {
    switch (dtype) {
        case DType::f16: return std::ldexp(1.0, -11);
        case DType::bf16: return std::ldexp(1.0, -8);
        default: return std::ldexp(1.0, -24);
    }
}

std::vector<double> random_values(std::size_t n, double lo, double hi, DType dtype, std::uint64_t seed) {
    std::uint64_t state = seed * 0x9e3779b97f4a7c15ull + 3;
    std::vector<double> values(n);
    for (double& value : values) {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        value = round_to(dtype, lo + (hi - lo) * static_cast<double>(state >> 11) * std::ldexp(1.0, -53));
    }
    return values;
}

/// |got - want| <= tolerance elementwise, naming the first failure.
void check_close(const std::vector<double>& got, const std::vector<double>& want,
                 const std::vector<double>& tolerance, const std::string& what) {
    REQUIRE(got.size() == want.size());
    for (std::size_t i = 0; i < got.size(); ++i) {
        INFO(what << " element " << i << ": got " << got[i] << ", want " << want[i] << " +- "
                  << tolerance[i]);
        REQUIRE(std::abs(got[i] - want[i]) <= tolerance[i]);
    }
}

std::vector<std::byte> bits(const Tensor& x) { return x.to_bytes(); }

}  // namespace

TEST_CASE("gpu device: name, dtypes, upload and read-back round trip") {
    CHECK(gpu().kind() == DeviceKind::gpu);
    CHECK(gpu().name().rfind("gpu (", 0) == 0);
    CHECK(gpu().accumulate_dtype() == DType::f32);
    CHECK_FALSE(gpu().supports(DType::f64));
    for (const DType dtype : {DType::f32, DType::f16, DType::bf16, DType::i32}) {
        if (!gpu().supports(dtype)) continue;
        for (const std::size_t n : {1, 3, 7, 1000}) {
            CAPTURE(dtype_name(dtype));
            CAPTURE(n);
            const auto values = dtype == DType::i32 ? random_values(n, -1000, 1000, DType::i32, n)
                                                    : random_values(n, -3, 3, dtype, n);
            const Tensor x = gpu().upload({n}, std::span<const double>(values), dtype);
            CHECK(x.to_double() == values);
        }
    }
}

TEST_CASE("gpu zero, fill and copy across dtypes") {
    for (const DType dtype : {DType::f32, DType::f16, DType::bf16, DType::i32}) {
        CAPTURE(dtype_name(dtype));
        for (const std::size_t n : {1, 5, 257}) {
            const Tensor x = gpu().empty({n}, dtype);
            fill(x, 0.1);
            CHECK(x.to_double() == std::vector<double>(n, round_to(dtype, 0.1)));
            zero(x);
            CHECK(x.to_double() == std::vector<double>(n, 0.0));
        }
    }
    const std::size_t n = 77;
    for (const DType from : float_dtypes) {
        for (const DType to : float_dtypes) {
            CAPTURE(dtype_name(from));
            CAPTURE(dtype_name(to));
            const auto values = random_values(n, -70000, 70000, from, 11);
            const Tensor src = gpu().upload({7, 11}, std::span<const double>(values), from);
            const Tensor dst = gpu().empty({n}, to);
            copy(src, dst);
            std::vector<double> want(n);
            for (std::size_t i = 0; i < n; ++i) want[i] = round_to(to, values[i]);  // overflow to inf in f16
            CHECK(dst.to_double() == want);
        }
    }
    // i32 <-> f32 (truncation), and special values through f16.
    const std::vector<double> ints = {-3, 0, 7, 123456};
    const Tensor as_int = gpu().upload({4}, std::span<const double>(ints), DType::i32);
    const Tensor as_float = gpu().empty({4}, DType::f32);
    copy(as_int, as_float);
    CHECK(as_float.to_double() == ints);
    const std::vector<float> special = {INFINITY, -INFINITY, 1e-7f,    -0.0f,
                                        65519.0f, 65520.0f,  5.96e-8f, 3.0e-8f};
    const Tensor f32 = gpu().upload({special.size()}, std::span<const float>(special), DType::f32);
    const Tensor f16 = gpu().empty({special.size()}, DType::f16);
    copy(f32, f16);
    const auto got = f16.to_bytes();
    for (std::size_t i = 0; i < special.size(); ++i) {
        std::uint16_t h;
        std::memcpy(&h, got.data() + 2 * i, 2);
        CAPTURE(special[i]);
        CHECK(h == float_to_half(special[i]));
    }
    const std::vector<float> nan = {NAN};
    const Tensor nan_f32 = gpu().upload({1}, std::span<const float>(nan), DType::f32);
    const Tensor nan_bf16 = gpu().empty({1}, DType::bf16);
    copy(nan_f32, nan_bf16);
    CHECK(std::isnan(nan_bf16.to_double()[0]));
}

TEST_CASE("gpu add_assign and bias_add") {
    for (const DType dtype : float_dtypes) {
        CAPTURE(dtype_name(dtype));
        for (const auto& shape : {Shape{1, 1}, Shape{3, 7}, Shape{65, 33}}) {
            const std::size_t rows = shape[0], cols = shape[1], n = rows * cols;
            const auto x0 = random_values(n, -2, 2, dtype, 1), src = random_values(n, -2, 2, dtype, 2),
                       bias = random_values(cols, -2, 2, dtype, 3);
            const Tensor x = gpu().upload(shape, std::span<const double>(x0), dtype);
            add_assign(x, gpu().upload(shape, std::span<const double>(src), dtype), -0.75);
            std::vector<double> want(n), tolerance(n);
            for (std::size_t i = 0; i < n; ++i) {
                want[i] = x0[i] - 0.75 * src[i];
                tolerance[i] = 2 * unit(dtype) * (std::abs(x0[i]) + 0.75 * std::abs(src[i])) + 1e-30;
            }
            check_close(x.to_double(), want, tolerance, "add_assign");
            const auto after = x.to_double();
            bias_add(x, gpu().upload({cols}, std::span<const double>(bias), dtype));
            for (std::size_t i = 0; i < n; ++i) {
                want[i] = after[i] + bias[i % cols];
                tolerance[i] = 2 * unit(dtype) * (std::abs(after[i]) + std::abs(bias[i % cols]));
            }
            check_close(x.to_double(), want, tolerance, "bias_add");
        }
    }
}

TEST_CASE("gpu reduce_sum over each axis, with accumulate, deterministic") {
    const Shape shape = {3, 70, 5};
    const std::size_t n = 3 * 70 * 5;
    for (const DType dtype : float_dtypes) {
        CAPTURE(dtype_name(dtype));
        const auto values = random_values(n, -1, 1, dtype, 5);
        const Tensor x = gpu().upload(shape, std::span<const double>(values), dtype);
        for (std::size_t axis = 0; axis < 3; ++axis) {
            CAPTURE(axis);
            Shape out_shape = shape;
            out_shape.erase(out_shape.begin() + static_cast<std::ptrdiff_t>(axis));
            const std::size_t outer = axis == 0 ? 1 : (axis == 1 ? 3 : 3 * 70);
            const std::size_t len = shape[axis];
            const std::size_t inner = axis == 2 ? 1 : (axis == 1 ? 5 : 70 * 5);
            const std::vector<double> start = random_values(outer * inner, -1, 1, dtype, 6);
            const Tensor y = gpu().upload(out_shape, std::span<const double>(start), dtype);
            reduce_sum(x, y, axis, true);
            std::vector<double> want(outer * inner), tolerance(outer * inner);
            for (std::size_t o = 0; o < outer; ++o) {
                for (std::size_t i = 0; i < inner; ++i) {
                    double sum = start[o * inner + i], magnitude = std::abs(sum);
                    for (std::size_t r = 0; r < len; ++r) {
                        sum += values[(o * len + r) * inner + i];
                        magnitude += std::abs(values[(o * len + r) * inner + i]);
                    }
                    want[o * inner + i] = sum;
                    tolerance[o * inner + i] =
                        unit(dtype) * std::abs(sum) + (len + 2) * std::ldexp(1.0, -24) * magnitude;
                }
            }
            check_close(y.to_double(), want, tolerance, "reduce_sum");
            const Tensor y1 = gpu().empty(out_shape, dtype), y2 = gpu().empty(out_shape, dtype);
            reduce_sum(x, y1, axis);
            reduce_sum(x, y2, axis);
            CHECK(bits(y1) == bits(y2));
        }
    }
}

TEST_CASE("gpu transpose_2d") {
    for (const DType dtype : float_dtypes) {
        for (const auto& shape : {Shape{1, 1}, Shape{5, 7}, Shape{2, 33, 40}}) {
            CAPTURE(dtype_name(dtype));
            CAPTURE(shape_string(shape));
            const std::size_t batch = shape.size() == 3 ? shape[0] : 1, rows = shape[shape.size() - 2],
                              cols = shape.back();
            const auto values = random_values(batch * rows * cols, -5, 5, dtype, 9);
            const Tensor x = gpu().upload(shape, std::span<const double>(values), dtype);
            Shape out_shape = shape;
            std::swap(out_shape[shape.size() - 1], out_shape[shape.size() - 2]);
            const Tensor y = gpu().empty(out_shape, dtype);
            transpose_2d(x, y);
            std::vector<double> want(values.size());
            for (std::size_t b = 0; b < batch; ++b)
                for (std::size_t i = 0; i < rows; ++i)
                    for (std::size_t j = 0; j < cols; ++j)
                        want[(b * cols + j) * rows + i] = values[(b * rows + i) * cols + j];
            CHECK(y.to_double() == want);
        }
    }
}

TEST_CASE("gpu global_norm_squared: two passes, several tensors, each dtype, deterministic") {
    for (const DType dtype : float_dtypes) {
        CAPTURE(dtype_name(dtype));
        std::vector<Tensor> tensors;
        double want = 0;
        for (const std::size_t n : {0, 5, 9000, 4097, 1}) {
            const auto values = random_values(n, -2, 2, dtype, n + 1);
            for (const double value : values) want += value * value;
            tensors.push_back(gpu().upload({n}, std::span<const double>(values), dtype));
        }
        const Tensor out = gpu().empty({1}, DType::f32);
        global_norm_squared(tensors, out);
        const double got = out.to_double()[0];
        CHECK(std::abs(got - want) <= 64 * std::ldexp(1.0, -24) * want);
        const auto first = bits(out);
        global_norm_squared(tensors, out);
        CHECK(bits(out) == first);
    }
    const Tensor out = gpu().empty({1}, DType::f32);
    global_norm_squared(std::span<const Tensor>(), out);
    CHECK(out.to_double()[0] == 0.0);
}

TEST_CASE("gpu stream: 250 small dispatches then one read; tensors dropped before they ran") {
    const StreamStats before = gpu().stream_stats();
    const Tensor x = gpu().zeros({33}, DType::f32);
    {
        const std::vector<double> ones(33, 1.0);
        const Tensor one = gpu().upload({33}, std::span<const double>(ones), DType::f32);
        for (int i = 0; i < 250; ++i) add_assign(x, one);
        // `one` goes here, long before the batches that read it have run.
    }
    for (int i = 0; i < 20; ++i) {
        const Tensor temporary =
            gpu().upload({33}, std::span<const double>(std::vector<double>(33, 0.5)), DType::f32);
        add_assign(x, temporary, 2.0);
    }
    CHECK(x.to_double() == std::vector<double>(33, 270.0));
    const StreamStats after = gpu().stream_stats();
    CHECK(after.kernels - before.kernels >= 270);
    CHECK(after.submissions - before.submissions <= 4);  // batches of 256 commands
    gpu().synchronize();
    CHECK(gpu().live_memory() >= 36);
}

TEST_CASE("gpu to_host_later: the values when it started, while later work runs; taken once") {
    const std::vector<double> start{1, 2, 3, 4, 5};
    const Tensor x = gpu().upload({5}, std::span<const double>(start), DType::f32);
    const Tensor h = gpu().upload({5}, std::span<const double>(start), DType::f16);
    PendingHostCopy before = x.to_host_later();
    PendingHostCopy half = h.to_host_later();
    CHECK(before.pending());
    const std::uint64_t waits = gpu().stream_stats().waits;
    // Work recorded after the copies started: it overwrites both tensors, and the copies must
    // not see it (nor wait for it: no wait happens before to_double()).
    const Tensor quarter =
        gpu().upload({5}, std::span<const double>(std::vector<double>(5, 0.25)), DType::f32);
    fill(x, 7.0);
    for (int i = 0; i < 300; ++i) add_assign(x, quarter);  // more than one batch of commands
    fill(h, -1.0);
    CHECK(gpu().stream_stats().waits == waits);
    CHECK(before.to_double() == start);
    CHECK(half.to_double() == start);
    CHECK_FALSE(before.pending());
    CHECK_THROWS_AS(before.to_double(), tapevm::Error);
    CHECK(x.to_double() == std::vector<double>(5, 7.0 + 300 * 0.25));
    CHECK(h.to_double() == std::vector<double>(5, -1.0));
    // A copy dropped without being taken costs nothing and breaks nothing.
    { const PendingHostCopy dropped = x.to_host_later(); }
    CHECK_THROWS_AS(PendingHostCopy().to_double(), tapevm::Error);
    gpu().synchronize();
}

TEST_CASE("gpu device error buffer: a kernel's error is thrown at the next wait; the device stays usable") {
    auto& gpu_backend = backend();
    const char* source = R"(#version 450
#extension GL_GOOGLE_include_directive : require
#include "nn_common.glsl"
layout(local_size_x = 64) in;
layout(set = 0, binding = 0, std430) buffer Ids { int ids[]; };
layout(push_constant) uniform Push { uint n; uint limit; } pc;
void main() {
    const uint i = gl_GlobalInvocationID.x;
    if (i < pc.n && (ids[i] < 0 || uint(ids[i]) >= pc.limit))
        nn_report_error(NN_ERROR_ID_OUT_OF_RANGE, 14u, ids[i], i, pc.limit);
}
)";
    const auto& pipeline = gpu_backend.glsl_pipeline("test_ids_check", source);
    CHECK(gpu_backend.has_glsl_pipeline("test_ids_check"));
    const std::vector<std::int32_t> ids = {0, 3, 70, 1};
    const Tensor tensor = gpu().upload({4}, std::span<const std::int32_t>(ids));
    const struct { std::uint32_t n, limit; } push{4, 64};
    gpu_backend.dispatch(pipeline, {tensor}, push, {1, 1, 1});
    try {
        gpu().synchronize();
        FAIL("no error thrown");
    } catch (const tapevm::Error& error) {
        CHECK(std::string(error.what()) == "embedding: ids[2] = 70 is outside [0, 64) (found on the device)");
    }
    gpu().synchronize();  // reported once
    CHECK(tensor.to_int() == ids);
}

TEST_CASE("gpu out of memory: OutOfMemory, and the device stays usable") {
    auto& ledger = backend().device().ledger();
    ledger.set_limit(ledger.live_bytes() + 4096);
    CHECK_THROWS_AS(gpu().empty({1 << 20}, DType::f32), tapevm::OutOfMemory);
    ledger.set_limit(UINT64_MAX);
    const Tensor x = gpu().zeros({1 << 10}, DType::f32);
    CHECK(x.to_double() == std::vector<double>(1 << 10, 0.0));
}

TEST_CASE("gpu caching allocator: reuse, flat memory, empty_cache, a retry after out of memory") {
    const Device& g = gpu();
    g.empty_cache();
    const std::uint64_t reserved = g.reserved_memory();
    for (int i = 0; i < 100; ++i) {  // the same size class every time: one buffer, reused
        const Tensor t = g.empty({1000, 100}, DType::f32);
        fill(t, 1.0);
    }
    g.synchronize();
    CHECK(g.reserved_memory() - reserved == detail::BufferPool::class_bytes(400000));
    g.empty_cache();
    CHECK(g.reserved_memory() == reserved);

    // A cached 4 MiB buffer, then a ledger with room for 3 MiB more: a 5 MiB tensor fits only
    // once the allocator has given the cached buffer back.
    { const Tensor cached = g.empty({1 << 20}, DType::f32); }
    g.synchronize();
    CHECK(g.reserved_memory() - reserved == (4u << 20));
    auto& ledger = backend().device().ledger();
    ledger.set_limit(ledger.live_bytes() + (3u << 20));
    try {
        const Tensor five = g.empty({(1 << 20) + (1 << 18)}, DType::f32);
        CHECK(g.reserved_memory() - reserved == (5u << 20));
        CHECK_THROWS_AS(g.empty({1 << 20}, DType::f32), tapevm::OutOfMemory);  // no cache left to give
    } catch (...) {
        ledger.set_limit(UINT64_MAX);
        throw;
    }
    ledger.set_limit(UINT64_MAX);
    g.empty_cache();
    CHECK(g.reserved_memory() == reserved);
}

TEST_CASE("gpu embedded shaders: every variant is there; unknown names are errors") {
    const auto names = detail::embedded_nn_shader_names();
    CHECK(names.size() >= 40);
    for (const auto& name : names) CHECK_FALSE(detail::embedded_nn_spirv(name).empty());
    CHECK_THROWS_AS(backend().pipeline("no_such_shader"), tapevm::Error);
}
