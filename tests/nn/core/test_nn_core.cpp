// The nn front end: dtype helpers and f16/bf16 conversions (against a nearest-value oracle,
// ties, NaN, infinities, subnormals), tensors and devices on the reference device, and every
// argument error of the kernel set (shapes, dtypes, devices, aliasing, bad options, ids).
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "backend.hpp"
#include "tapevm/error.hpp"
#include "tapevm/nn/device.hpp"
#include "tapevm/nn/kernels.hpp"
#include "tapevm/nn/tensor.hpp"
#include "tapevm/var.hpp"

using namespace tapevm;
using namespace tapevm::nn;

namespace {

constexpr double inf = std::numeric_limits<double>::infinity();

std::vector<double> iota(std::size_t n, double start = 0, double step = 1) {
    std::vector<double> values(n);
    for (std::size_t i = 0; i < n; ++i) values[i] = start + step * static_cast<double>(i);
    return values;
}

Tensor f64(const Device& device, Shape shape) {
    const std::size_t n = element_count(shape);
    return device.upload(std::move(shape), iota(n, 0.5, 0.25), DType::f64);
}

Tensor ids(const Device& device, Shape shape, std::vector<std::int32_t> values) {
    return device.upload(std::move(shape), std::span<const std::int32_t>(values));
}

/// Runs `call`, which must throw `Expected` with a message starting with `prefix`.
template <class Expected, class Call> void check_error(Call&& call, const std::string& prefix) {
    try {
        call();
        FAIL("no exception; expected one starting with \"" << prefix << "\"");
    } catch (const Expected& error) {
        const std::string message = error.what();
        INFO("message: " << message);
        CHECK(message.rfind(prefix, 0) == 0);
    }
}

/// The f16 value nearest `value` by exhaustive search over every finite half, ties to the
/// even bit pattern, overflowing to infinity from 65520 on: the oracle for float_to_half.
std::uint16_t nearest_half(float value) {
    if (std::fabs(value) >= 65520.0f) return value > 0 ? 0x7c00 : 0xfc00;
    std::uint16_t best = 0;
    double best_distance = inf;
    const std::uint16_t sign = std::signbit(value) ? 0x8000 : 0;
    for (std::uint32_t magnitude = 0; magnitude < 0x7c00; ++magnitude) {
        const auto bits = static_cast<std::uint16_t>(sign | magnitude);
        const double distance =
            std::fabs(static_cast<double>(half_to_float(bits)) - static_cast<double>(value));
        if (distance < best_distance || (distance == best_distance && (bits & 1) == 0)) {
            best = bits;
            best_distance = distance;
        }
    }
    return best;
}

}  // namespace

// ---- dtypes and conversions ---------------------------------------------------------------

TEST_CASE("dtype helpers and shapes") {
    CHECK(dtype_size(DType::f64) == 8);
    CHECK(dtype_size(DType::f32) == 4);
    CHECK(dtype_size(DType::f16) == 2);
    CHECK(dtype_size(DType::bf16) == 2);
    CHECK(dtype_size(DType::i32) == 4);
    CHECK(dtype_name(DType::bf16) == "bf16");
    CHECK(dtype_name(DType::i32) == "i32");
    CHECK(is_float(DType::f16));
    CHECK_FALSE(is_float(DType::i32));
    CHECK(element_count({}) == 1);
    CHECK(element_count({3, 0, 2}) == 0);
    CHECK(element_count({64, 384}) == 64 * 384);
    CHECK(shape_string({64, 384}) == "[64, 384]");
    CHECK(shape_string({}) == "[]");
}

TEST_CASE("f16: exact values, overflow, subnormals, ties to even") {
    CHECK(float_to_half(1.0f) == 0x3c00);
    CHECK(float_to_half(-2.0f) == 0xc000);
    CHECK(float_to_half(0.0f) == 0x0000);
    CHECK(float_to_half(-0.0f) == 0x8000);
    CHECK(float_to_half(65504.0f) == 0x7bff);   // the largest half
    CHECK(float_to_half(65519.99f) == 0x7bff);  // below the midpoint to 2^16
    CHECK(float_to_half(65520.0f) == 0x7c00);   // the midpoint: ties to even = infinity
    CHECK(float_to_half(1e10f) == 0x7c00);
    CHECK(float_to_half(-1e10f) == 0xfc00);
    CHECK(float_to_half(std::ldexp(1.0f, -14)) == 0x0400);     // the smallest normal
    CHECK(float_to_half(std::ldexp(1.0f, -24)) == 0x0001);     // the smallest subnormal
    CHECK(float_to_half(std::ldexp(1023.0f, -24)) == 0x03ff);  // the largest subnormal
    CHECK(float_to_half(std::ldexp(1.0f, -25)) == 0x0000);     // a tie between 0 and 2^-24: even
    CHECK(float_to_half(std::ldexp(1.5f, -25)) == 0x0001);     // above the tie
    CHECK(float_to_half(std::ldexp(3.0f, -25)) == 0x0002);     // 1.5 * 2^-24: tie, to even 2
    CHECK(float_to_half(std::ldexp(5.0f, -25)) == 0x0002);     // 2.5 * 2^-24: tie, to even 2
    CHECK(float_to_half(std::ldexp(1.0f, -26)) == 0x0000);
    CHECK(float_to_half(1e-45f) == 0x0000);                        // a float subnormal
    CHECK(float_to_half(1.0f + std::ldexp(1.0f, -11)) == 0x3c00);  // tie: to even (1.0)
    CHECK(float_to_half(1.0f + std::ldexp(3.0f, -11)) == 0x3c02);  // tie: to even (up)
    CHECK(float_to_half(1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20)) == 0x3c01);  // above
    CHECK(float_to_half(2047.0f * std::ldexp(1.0f, -11) + 1.0f) == 0x4000);  // carries into the exponent

    CHECK(half_to_float(0x3c00) == 1.0f);
    CHECK(half_to_float(0x0001) == std::ldexp(1.0f, -24));
    CHECK(half_to_float(0x7bff) == 65504.0f);
    CHECK(std::isinf(half_to_float(0x7c00)));
    CHECK(half_to_float(0xfc00) < 0);
    CHECK(std::signbit(half_to_float(0x8000)));
}

TEST_CASE("f16 and bf16: NaN stays NaN, infinities stay infinite") {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const float signalling = std::numeric_limits<float>::signaling_NaN();
    for (float value : {nan, -nan, signalling}) {
        const std::uint16_t half = float_to_half(value);
        CHECK((half & 0x7c00) == 0x7c00);
        CHECK((half & 0x03ff) != 0);
        CHECK(std::isnan(half_to_float(half)));
        const std::uint16_t bfloat = float_to_bfloat(value);
        CHECK((bfloat & 0x7f80) == 0x7f80);
        CHECK((bfloat & 0x007f) != 0);
        CHECK(std::isnan(bfloat_to_float(bfloat)));
    }
    // A NaN whose payload sits only in the low bits must not become infinity.
    const float low_payload = std::bit_cast<float>(0x7f800001u);
    CHECK(std::isnan(half_to_float(float_to_half(low_payload))));
    CHECK(std::isnan(bfloat_to_float(float_to_bfloat(low_payload))));
    const float infinity = std::numeric_limits<float>::infinity();
    CHECK(float_to_half(infinity) == 0x7c00);
    CHECK(float_to_half(-infinity) == 0xfc00);
    CHECK(float_to_bfloat(infinity) == 0x7f80);
    CHECK(float_to_bfloat(-infinity) == 0xff80);
    CHECK(std::isinf(bfloat_to_float(0x7f80)));
}

TEST_CASE("f16 and bf16: every pattern round-trips") {
    for (std::uint32_t bits = 0; bits < 0x10000; ++bits) {
        const auto pattern = static_cast<std::uint16_t>(bits);
        const float half = half_to_float(pattern);
        const float bfloat = bfloat_to_float(pattern);
        if (std::isnan(half)) {
            CHECK(std::isnan(half_to_float(float_to_half(half))));
        } else if (float_to_half(half) != pattern) {
            FAIL_CHECK("f16 pattern " << bits << " does not round-trip");
        }
        if (std::isnan(bfloat)) {
            CHECK(std::isnan(bfloat_to_float(float_to_bfloat(bfloat))));
        } else if (float_to_bfloat(bfloat) != pattern) {
            FAIL_CHECK("bf16 pattern " << bits << " does not round-trip");
        }
    }
}

TEST_CASE("f16: random floats round to the nearest half (exhaustive oracle)") {
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> mantissa(1.0f, 2.0f);
    std::uniform_int_distribution<int> exponent(-27, 16);
    for (int i = 0; i < 600; ++i) {
        float value = std::ldexp(mantissa(rng), exponent(rng));
        if (i % 2 == 1) value = -value;
        const std::uint16_t below = nearest_half(value);
        if (i % 5 == 0 && (below & 0x7fff) < 0x7bff) {  // an exact midpoint between two finite halves
            value = static_cast<float>((static_cast<double>(half_to_float(below)) +
                                        half_to_float(static_cast<std::uint16_t>(below + 1))) /
                                       2);
        }
        INFO("value " << value);
        CHECK(float_to_half(value) == nearest_half(value));
    }
}

TEST_CASE("bf16: exact values, ties to even, subnormals, overflow") {
    CHECK(float_to_bfloat(1.0f) == 0x3f80);
    CHECK(bfloat_to_float(0x3f80) == 1.0f);
    CHECK(float_to_bfloat(1.0f + std::ldexp(1.0f, -8)) == 0x3f80);  // tie: to even
    CHECK(float_to_bfloat(1.0f + std::ldexp(3.0f, -8)) == 0x3f82);  // tie: to even (up)
    CHECK(float_to_bfloat(1.0f + std::ldexp(1.0f, -8) + std::ldexp(1.0f, -20)) == 0x3f81);
    CHECK(float_to_bfloat(std::numeric_limits<float>::max()) == 0x7f80);  // rounds past the largest bf16
    const float subnormal = std::bit_cast<float>(0x00012345u);
    CHECK(float_to_bfloat(subnormal) == 0x0001);
    CHECK(float_to_bfloat(std::bit_cast<float>(0x00018000u)) == 0x0002);  // tie: to even (up)
    CHECK(float_to_bfloat(-0.0f) == 0x8000);
}

TEST_CASE("round_to rounds doubles once, with no double rounding through float") {
    CHECK(round_to(DType::f64, 0.1) == 0.1);
    CHECK(round_to(DType::f32, 0.1) == static_cast<double>(0.1f));
    // Just above a half tie: through float it would become the tie and round down.
    const double above_half_tie = 1 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40);
    CHECK(round_to(DType::f16, above_half_tie) == 1 + std::ldexp(1.0, -10));
    const double above_bfloat_tie = 1 + std::ldexp(1.0, -8) + std::ldexp(1.0, -40);
    CHECK(round_to(DType::bf16, above_bfloat_tie) == 1 + std::ldexp(1.0, -7));
    CHECK(round_to(DType::f16, 1 + std::ldexp(1.0, -11)) == 1.0);  // an exact tie still goes to even
    CHECK(round_to(DType::f16, 1e6) == inf);
    CHECK(std::isnan(round_to(DType::bf16, std::nan(""))));
    CHECK(round_to(DType::i32, 2.7) == 2);
    CHECK(round_to(DType::i32, -2.7) == -2);
}

// ---- tensors and devices --------------------------------------------------------------------

TEST_CASE("reference device: one instance, its dtypes, unsupported dtypes") {
    const Device device = Device::reference();
    CHECK(device == Device::reference());
    CHECK(device.kind() == DeviceKind::reference);
    CHECK(device.name() == "reference");
    CHECK(std::string(device_kind_name(DeviceKind::gpu)) == "gpu");
    CHECK(device.supports(DType::f64));
    CHECK(device.supports(DType::i32));
    CHECK_FALSE(device.supports(DType::f32));
    CHECK(device.accumulate_dtype() == DType::f64);
    CHECK_FALSE(device.has_cooperative_matrix());
    check_error<Unsupported>([&] { (void)device.empty({2}, DType::f16); }, "Device::empty: f16");
    const Device other(nn::detail::make_reference_backend());
    CHECK_FALSE(other == device);
}

TEST_CASE("tensors: to_host_later on the reference and cpu devices: the values when it started") {
    for (const Device& device : {Device::reference(), Device::cpu({.threads = 2})}) {
        const std::vector<double> start{1, 2, 3};
        const Tensor x = device.upload({3}, std::span<const double>(start), device.accumulate_dtype());
        PendingHostCopy copy = x.to_host_later();
        fill(x, 5.0);
        CHECK(copy.to_double() == start);
        CHECK_THROWS_AS(copy.to_double(), tapevm::Error);
        CHECK(x.to_double() == std::vector<double>(3, 5.0));
    }
}

TEST_CASE("tensors: upload, read back, reshape, describe") {
    const Device device = Device::reference();
    const std::vector<double> values = {1.5, -2.25, 3, 4, 5, 6};
    const Tensor x = device.upload({2, 3}, std::span<const double>(values), DType::f64);
    CHECK(x.defined());
    CHECK(x.rank() == 2);
    CHECK(x.dim(0) == 2);
    CHECK(x.dim(-1) == 3);
    CHECK(x.size() == 6);
    CHECK(x.bytes() == 48);
    CHECK(x.device() == device);
    CHECK(x.to_double() == values);
    CHECK(x.to_float() == std::vector<float>{1.5f, -2.25f, 3, 4, 5, 6});
    CHECK(x.to_int() == std::vector<std::int32_t>{1, -2, 3, 4, 5, 6});
    CHECK(x.to_bytes().size() == 48);
    CHECK(x.describe() == "f64[2, 3] on reference");
    CHECK(Tensor().describe() == "undefined tensor");
    check_error<Error>([&] { (void)x.dim(2); }, "Tensor::dim: axis 2");
    check_error<Error>([&] { (void)x.dim(-3); }, "Tensor::dim: axis -3");

    const Tensor flat = x.reshape({6});
    CHECK(flat.same_memory(x));
    flat.assign(std::span<const double>(iota(6)));
    CHECK(x.to_double() == iota(6));
    check_error<ShapeError>([&] { (void)x.reshape({4}); }, "Tensor::reshape");
    check_error<ShapeError>([&] { x.assign(std::span<const double>(iota(5))); }, "Tensor::assign");
    check_error<ShapeError>([&] { x.assign_bytes(std::vector<std::byte>(47)); }, "Tensor::assign_bytes");

    const std::vector<float> floats = {0.5f, 1.5f};
    CHECK(device.upload({2}, std::span<const float>(floats), DType::f64).to_double() ==
          std::vector<double>{0.5, 1.5});
    const Tensor integers = ids(device, {3}, {7, -1, 2147483647});
    CHECK(integers.dtype() == DType::i32);
    CHECK(integers.to_int() == std::vector<std::int32_t>{7, -1, 2147483647});
    CHECK(integers.to_double() == std::vector<double>{7, -1, 2147483647.0});
    const std::vector<double> too_big = {3e9};
    check_error<Error>([&] { (void)device.upload({1}, std::span<const double>(too_big), DType::i32); },
                       "Tensor::assign: value");
    check_error<ShapeError>([&] { (void)device.upload({3}, std::span<const double>(too_big), DType::f64); },
                            "Device::upload");

    const Tensor undefined;
    CHECK_FALSE(undefined);
    check_error<Error>([&] { (void)undefined.device(); }, "Tensor::device: undefined tensor");
    check_error<Error>([&] { (void)undefined.to_double(); }, "Tensor::to_bytes: undefined tensor");
}

namespace {

/// A device of plain host bytes that stores every dtype and runs no kernel: the host side of
/// Tensor (conversions on upload, read-back and assign) on its own.
struct HostBytes final : nn::detail::Backend {
    struct Bytes final : nn::detail::Storage {
        std::vector<std::byte> data;
    };
    DeviceKind kind() const override { return DeviceKind::cpu; }
    std::string name() const override { return "host bytes"; }
    bool supports(DType) const override { return true; }
    std::shared_ptr<nn::detail::Storage> allocate(std::size_t bytes) override {
        auto storage = std::make_shared<Bytes>();
        storage->data.resize(bytes);
        storage->bytes = bytes;
        return storage;
    }
    void write(const nn::detail::Storage& storage, std::size_t offset,
               std::span<const std::byte> bytes) override {
        std::copy(bytes.begin(), bytes.end(),
                  const_cast<Bytes&>(static_cast<const Bytes&>(storage)).data.begin() +
                      static_cast<std::ptrdiff_t>(offset));
    }
    void read(const nn::detail::Storage& storage, std::size_t offset, std::span<std::byte> bytes) override {
        const auto& data = static_cast<const Bytes&>(storage).data;
        std::copy_n(data.begin() + static_cast<std::ptrdiff_t>(offset), bytes.size(), bytes.begin());
    }
    void synchronize() override {}
    std::uint64_t live_memory() const override { return 0; }
    std::uint64_t peak_memory() const override { return 0; }
    void reset_peak_memory() override {}
};

}  // namespace

TEST_CASE("tensors: host conversions to and from f32, f16 and bf16") {
    const Device device(std::make_shared<HostBytes>());
    const std::vector<double> values = {
        1.0 / 3, 65520, -1e-8, 1e-40, std::nan(""), -inf, 1 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40),
        3e38,    1e39};
    for (const DType dtype : {DType::f32, DType::f16, DType::bf16}) {
        CAPTURE(dtype_name(dtype));
        const Tensor x = device.upload({values.size()}, std::span<const double>(values), dtype);
        CHECK(x.bytes() == values.size() * dtype_size(dtype));
        const std::vector<double> back = x.to_double();
        const std::vector<float> back_float = x.to_float();
        for (std::size_t i = 0; i < values.size(); ++i) {
            CAPTURE(values[i]);
            const double expected = round_to(dtype, values[i]);
            if (std::isnan(expected)) {
                CHECK(std::isnan(back[i]));
                CHECK(std::isnan(back_float[i]));
            } else {
                CHECK(back[i] == expected);
                CHECK(back_float[i] == static_cast<float>(expected));
            }
        }
    }
    // The bytes are the dtype's own, little-endian: 1.0 is 0x3c00 in f16 and 0x3f80 in bf16.
    const std::vector<float> one = {1.0f};
    const std::vector<std::byte> half_bytes =
        device.upload({1}, std::span<const float>(one), DType::f16).to_bytes();
    CHECK(half_bytes == std::vector<std::byte>{std::byte{0x00}, std::byte{0x3c}});
    const Tensor bfloat = device.upload({1}, std::span<const float>(one), DType::bf16);
    CHECK(bfloat.to_bytes() == std::vector<std::byte>{std::byte{0x80}, std::byte{0x3f}});
    bfloat.assign_bytes(std::vector<std::byte>{std::byte{0x40}, std::byte{0xc0}});  // -3.0
    CHECK(bfloat.to_double() == std::vector<double>{-3});
    CHECK(bfloat.to_int() == std::vector<std::int32_t>{-3});
    const std::vector<std::int32_t> integers = {2049, -7};
    CHECK(device.upload({2}, std::span<const std::int32_t>(integers), DType::f16).to_double() ==
          std::vector<double>{2048, -7});  // 2049 is a tie between 2048 and 2050: even
    check_error<Error>(
        [&] { (void)device.upload({1}, std::span<const double>(values).subspan(4, 1), DType::i32); },
        "Tensor::assign: value nan");
    check_error<Error>(
        [&] { (void)device.upload({1}, std::span<const double>(values).subspan(5, 1), DType::f16).to_int(); },
        "Tensor::to_int: element 0 does not fit i32");
}

TEST_CASE("tensors: empty ones are valid and kernels on them do nothing") {
    const Device device = Device::reference();
    const Tensor empty = device.zeros({0, 4}, DType::f64);
    CHECK(empty.size() == 0);
    CHECK(empty.to_double().empty());
    empty.assign(std::span<const double>());
    zero(empty);
    fill(empty, 3);
    const Tensor rows = device.zeros({0, 4}, DType::f64);
    const Tensor stats = device.zeros({0}, DType::f64);
    softmax(empty, rows);
    layer_norm(empty, f64(device, {4}), Tensor(), rows, stats, device.zeros({0}, DType::f64));
    matmul(device.zeros({0, 3}, DType::f64), f64(device, {3, 4}), rows);
    CHECK(rows.to_double().empty());
    // matmul with K = 0 and beta = 0 writes zeros: a sum of nothing.
    const Tensor c = f64(device, {2, 2});
    matmul(device.zeros({2, 0}, DType::f64), device.zeros({0, 2}, DType::f64), c);
    CHECK(c.to_double() == std::vector<double>(4, 0.0));
}

TEST_CASE("device: zeros, memory accounting and stream counters") {
    const Device device(nn::detail::make_reference_backend());  // counters of its own
    CHECK(device.live_memory() == 0);
    std::uint64_t kernels = device.stream_stats().kernels;
    {
        const Tensor a = device.zeros({10}, DType::f64);
        CHECK(a.to_double() == std::vector<double>(10, 0.0));
        CHECK(device.stream_stats().kernels == kernels + 1);  // zero
        const Tensor b = device.empty({5}, DType::i32);
        CHECK(device.live_memory() == 80 + 20);
        CHECK(device.peak_memory() == 100);
    }
    CHECK(device.live_memory() == 0);
    CHECK(device.peak_memory() == 100);
    device.reset_peak_memory();
    CHECK(device.peak_memory() == 0);
    const Tensor c = device.zeros({2}, DType::f64);
    kernels = device.stream_stats().kernels;
    fill(c, 2);
    add_assign(c, c, 1);
    CHECK(device.stream_stats().kernels == kernels + 2);
    CHECK(c.to_double() == std::vector<double>{4, 4});
    device.synchronize();
    CHECK(device.peak_memory() == 16);
}

TEST_CASE("backend defaults throw Unsupported naming the kernel, device and dtype") {
    CHECK(std::string(nn::detail::kernel_name(nn::detail::KernelId::zero)) == "zero");
    CHECK(std::string(nn::detail::kernel_name(nn::detail::KernelId::layer_norm_backward)) ==
          "layer_norm_backward");
    CHECK(std::string(nn::detail::kernel_name(nn::detail::KernelId::elementwise_backward)) ==
          "elementwise_backward");
    // A backend with nothing but memory: every kernel is unsupported.
    struct Bare final : nn::detail::Backend {
        DeviceKind kind() const override { return DeviceKind::cpu; }
        std::string name() const override { return "bare"; }
        bool supports(DType dtype) const override { return dtype == DType::f64; }
        std::shared_ptr<nn::detail::Storage> allocate(std::size_t) override { return inner->allocate(8); }
        void write(const nn::detail::Storage&, std::size_t, std::span<const std::byte>) override {}
        void read(const nn::detail::Storage&, std::size_t, std::span<std::byte>) override {}
        void synchronize() override {}
        std::uint64_t live_memory() const override { return 0; }
        std::uint64_t peak_memory() const override { return 0; }
        void reset_peak_memory() override {}
        std::shared_ptr<nn::detail::Backend> inner = nn::detail::make_reference_backend();
    };
    const Device bare(std::make_shared<Bare>());
    const Tensor x = bare.empty({1}, DType::f64);
    CHECK(bare.accumulate_dtype() == DType::f32);
    check_error<Unsupported>([&] { zero(x); }, "zero is not available on bare for f64");
    check_error<Unsupported>([&] { softmax(x, x); }, "softmax is not available on bare for f64");
    CHECK(bare.backend().supports_kernel(nn::detail::KernelId::matmul, DType::f64));
}

// ---- front-end errors -----------------------------------------------------------------------

TEST_CASE("front end: undefined tensors, two devices, dtypes") {
    const Device device = Device::reference();
    const Device other(nn::detail::make_reference_backend());
    const Tensor x = f64(device, {2, 3});
    const Tensor y = f64(device, {2, 3});
    check_error<Error>([&] { zero(Tensor()); }, "zero: x: undefined tensor");
    check_error<Error>(
        [&] {
            softmax(x, f64(other, {2, 3}));
        },
        "softmax: y: on a different device (reference) than x (reference)");
    check_error<Error>(
        [&] {
            add_assign(x, ids(device, {6}, {1, 2, 3, 4, 5, 6}));
        },
        "add_assign: src: expected a float dtype, got i32");
    check_error<Error>([&] { copy(x, f64(other, {6})); }, "copy: dst: on a different device");
    check_error<ShapeError>([&] { copy(x, f64(device, {5})); }, "copy: dst: expected shape 6 elements");
    check_error<ShapeError>([&] { add_assign(x, f64(device, {5})); }, "add_assign: src: expected shape");
    check_error<Error>([&] { add_assign(x, y, inf); }, "add_assign: alpha: expected a finite value");
}

TEST_CASE("front end: matmul shapes, transposes, batches, aliasing") {
    const Device device = Device::reference();
    const Tensor a = f64(device, {2, 3});
    const Tensor b = f64(device, {3, 4});
    const Tensor c = f64(device, {2, 4});
    matmul(a, b, c);  // valid
    check_error<ShapeError>([&] { matmul(a, f64(device, {4, 4}), c); }, "matmul: b: expected shape [3, 4]");
    check_error<ShapeError>([&] { matmul(f64(device, {3, 3}), b, c); }, "matmul: a: expected shape [2, 3]");
    check_error<ShapeError>([&] { matmul(a, b, c, {.transpose_a = true}); },
                            "matmul: a: expected shape [2, 2] ([K, M]: transpose_a), got [2, 3]");
    matmul(f64(device, {3, 2}), b, c, {.transpose_a = true});
    matmul(a, f64(device, {4, 3}), c, {.transpose_b = true});
    check_error<ShapeError>([&] { matmul(a, b, c, {.transpose_b = true}); },
                            "matmul: b: expected shape [4, 3]");
    check_error<ShapeError>([&] { matmul(a, b, f64(device, {4})); }, "matmul: c: expected shape [M, N]");
    check_error<ShapeError>(
        [&] {
            matmul(f64(device, {5, 2, 3}), b, c);
        },
        "matmul: a: expected shape [2, 3] ([M, K])");
    // Batched: each operand batched too or shared.
    const Tensor cb = f64(device, {5, 2, 4});
    matmul(f64(device, {5, 2, 3}), b, cb);
    matmul(a, f64(device, {5, 3, 4}), cb);
    check_error<ShapeError>(
        [&] {
            matmul(f64(device, {4, 2, 3}), b, cb);
        },
        "matmul: a: expected shape [5, 2, 3]");
    matmul(f64(device, {0, 2, 3}), f64(device, {0, 3, 4}),
           f64(device, {0, 2, 4}));  // no batches: nothing to do
    check_error<ShapeError>(
        [&] {
            matmul(f64(device, {1, 2, 3}), b, f64(device, {0, 2, 4}));
        },
        "matmul: a: expected shape [0, 2, 3]");
    check_error<ShapeError>(
        [&] {
            matmul(a, f64(device, {5, 4, 4}), cb);
        },
        "matmul: b: expected shape [5, 3, 4]");
    const Tensor square = f64(device, {3, 3});
    check_error<Error>(
        [&] {
            matmul(square, f64(device, {3, 3}), square);
        },
        "matmul: c: shares memory with a");
    check_error<Error>(
        [&] {
            matmul(f64(device, {3, 3}), square, square);
        },
        "matmul: c: shares memory with b");
    check_error<Error>(
        [&] {
            matmul(a, ids(device, {3, 4}, std::vector<std::int32_t>(12)), c);
        },
        "matmul: b: expected a float dtype");
    check_error<Error>(
        [&] {
            matmul(a, b, ids(device, {2, 4}, std::vector<std::int32_t>(8)));
        },
        "matmul: c: expected a float dtype");
    check_error<Error>([&] { matmul(a, b, c, {.beta = std::nan("")}); },
                       "matmul: beta: expected a finite value");
}

TEST_CASE("front end: reductions, transposes, bias") {
    const Device device = Device::reference();
    const Tensor x = f64(device, {2, 3, 4});
    reduce_sum(x, f64(device, {2, 4}), 1);
    reduce_sum(x, f64(device, {2, 1, 4}), 1);
    check_error<Error>([&] { reduce_sum(x, f64(device, {2, 3}), 3); }, "reduce_sum: axis: 3 out of range");
    check_error<ShapeError>(
        [&] {
            reduce_sum(x, f64(device, {2, 3}), 1);
        },
        "reduce_sum: y: expected shape [2, 4] or [2, 1, 4], got [2, 3]");
    check_error<Error>([&] { reduce_sum(x, x, 0); }, "reduce_sum: y: shares memory with x");
    transpose_2d(f64(device, {2, 3}), f64(device, {3, 2}));
    transpose_2d(x, f64(device, {2, 4, 3}));
    check_error<ShapeError>(
        [&] {
            transpose_2d(x, f64(device, {2, 3, 4}));
        },
        "transpose_2d: y: expected shape [2, 4, 3]");
    check_error<ShapeError>([&] { transpose_2d(f64(device, {6}), f64(device, {6})); },
                            "transpose_2d: x: expected shape");
    check_error<Error>(
        [&] {
            transpose_2d(f64(device, {2, 2}), ids(device, {2, 2}, {1, 2, 3, 4}));
        },
        "transpose_2d: y: expected dtype f64, got i32");
    check_error<ShapeError>([&] { bias_add(x, f64(device, {3})); },
                            "bias_add: bias: expected shape [4], got [3]");
    check_error<ShapeError>(
        [&] {
            softmax(x, f64(device, {2, 3, 5}));
        },
        "softmax: y: expected shape [2, 3, 4]");
    check_error<ShapeError>([&] { softmax_backward(x, x, f64(device, {24})); },
                            "softmax_backward: dx: expected shape");
    check_error<Error>(
        [&] {
            softmax_backward(x, f64(device, {2, 3, 4}), x);
        },
        "softmax_backward: dx: shares memory with y");
}

TEST_CASE("front end: normalisations") {
    const Device device = Device::reference();
    const Tensor x = f64(device, {2, 3, 384});
    const Tensor y = f64(device, {2, 3, 384});
    const Tensor gamma = f64(device, {384});
    const Tensor mean = f64(device, {6});
    const Tensor rstd = f64(device, {2, 3});  // [rows] or x's leading axes
    layer_norm(x, gamma, Tensor(), y, mean, rstd);
    check_error<ShapeError>([&] { layer_norm(x, f64(device, {383}), Tensor(), y, mean, rstd); },
                            "layer_norm: gamma: expected shape [384], got [383]");
    check_error<ShapeError>([&] { layer_norm(x, gamma, f64(device, {3}), y, mean, rstd); },
                            "layer_norm: beta: expected shape [384], got [3]");
    check_error<ShapeError>([&] { layer_norm(x, gamma, Tensor(), y, f64(device, {5}), rstd); },
                            "layer_norm: mean: expected shape [6] or [2, 3], got [5]");
    check_error<Error>(
        [&] { layer_norm(x, gamma, Tensor(), y, mean, ids(device, {6}, std::vector<std::int32_t>(6))); },
        "layer_norm: rstd: expected dtype f64, got i32");
    check_error<Error>([&] { layer_norm(x, gamma, Tensor(), y, mean, rstd, -1); }, "layer_norm: eps:");
    check_error<Error>([&] { layer_norm(x, gamma, Tensor(), y, Tensor(), rstd); },
                       "layer_norm: mean: undefined tensor");
    const Tensor dx = f64(device, {2, 3, 384});
    layer_norm_backward(y, x, gamma, mean, rstd, dx, Tensor(), Tensor());
    check_error<ShapeError>(
        [&] { layer_norm_backward(y, x, gamma, mean, rstd, dx, f64(device, {2}), Tensor()); },
        "layer_norm_backward: dgamma: expected shape [384], got [2]");
    check_error<Error>([&] { layer_norm_backward(y, x, gamma, mean, rstd, y, Tensor(), Tensor()); },
                       "layer_norm_backward: dx: shares memory with dy");
    check_error<ShapeError>(
        [&] {
            layer_norm_backward(f64(device, {6, 384}), x, gamma, mean, rstd, dx, Tensor(), Tensor());
        },
        "layer_norm_backward: dy: expected shape [2, 3, 384]");
    rms_norm(x, gamma, y, mean);
    check_error<ShapeError>(
        [&] {
            rms_norm(x, gamma, f64(device, {6, 384}), mean);
        },
        "rms_norm: y: expected shape");
    check_error<ShapeError>([&] { rms_norm_backward(y, x, gamma, f64(device, {7}), dx, Tensor()); },
                            "rms_norm_backward: rstd: expected shape [6] or [2, 3], got [7]");
}

TEST_CASE("front end: embeddings and cross-entropy, ids out of range on the reference device") {
    const Device device = Device::reference();
    const Tensor table = f64(device, {5, 3});
    const Tensor tokens = ids(device, {2, 2}, {0, 4, 2, 1});
    const Tensor out = f64(device, {2, 2, 3});
    embedding(tokens, table, out);
    check_error<ShapeError>(
        [&] {
            embedding(tokens, table, f64(device, {4, 3}));
        },
        "embedding: out: expected shape [2, 2, 3], got [4, 3]");
    check_error<Error>(
        [&] {
            embedding(f64(device, {2, 2}), table, out);
        },
        "embedding: ids: expected dtype i32, got f64");
    check_error<ShapeError>([&] { embedding(tokens, f64(device, {15}), out); },
                            "embedding: table: expected shape [V, D]");
    check_error<Error>(
        [&] {
            embedding(ids(device, {2, 2}, {0, 5, 1, 1}), table, out);
        },
        "embedding: ids[1] = 5 is outside [0, 5)");
    check_error<Error>(
        [&] {
            embedding(ids(device, {2, 2}, {0, 1, -3, 1}), table, out);
        },
        "embedding: ids[2] = -3 is outside [0, 5)");
    check_error<Error>(
        [&] {
            embedding_backward(ids(device, {2, 2}, {9, 1, 1, 1}), out, table);
        },
        "embedding_backward: ids[0] = 9 is outside [0, 5)");
    check_error<ShapeError>(
        [&] {
            embedding_backward(tokens, f64(device, {2, 2, 4}), table);
        },
        "embedding_backward: dout: expected shape [2, 2, 3]");

    const Tensor logits = f64(device, {4, 5});
    const Tensor losses = f64(device, {4});
    cross_entropy(logits, tokens.reshape({4}), losses, Tensor());
    cross_entropy(logits, ids(device, {4}, {-1, 1, 2, -1}), losses, logits);  // pad rows, in place
    check_error<Error>(
        [&] {
            cross_entropy(logits, ids(device, {4}, {0, 1, 5, 2}), losses, Tensor());
        },
        "cross_entropy: targets[2] = 5 is outside [0, 5)");
    check_error<Error>(
        [&] {
            cross_entropy(logits, ids(device, {4}, {0, 1, -1, 2}), losses, Tensor(), 3);
        },
        "cross_entropy: targets[2] = -1 is outside [0, 5)");
    check_error<ShapeError>(
        [&] {
            cross_entropy(logits, ids(device, {3}, {0, 1, 2}), losses, Tensor());
        },
        "cross_entropy: targets: expected shape [4], got [3]");
    check_error<ShapeError>(
        [&] {
            cross_entropy(logits, tokens.reshape({4}), f64(device, {4, 1}), Tensor());
        },
        "cross_entropy: losses: expected shape [4]");
    check_error<ShapeError>(
        [&] {
            cross_entropy(logits, tokens.reshape({4}), losses, f64(device, {4, 4}));
        },
        "cross_entropy: dlogits: expected shape [4, 5]");
    check_error<Error>([&] { cross_entropy(logits, tokens.reshape({4}), losses, Tensor(), -1, inf); },
                       "cross_entropy: dloss: expected a finite value");
    check_error<Error>(
        [&] {
            global_norm_squared(std::vector<Tensor>{table, tokens}, f64(device, {1}));
        },
        "global_norm_squared: tensors[1]: expected a float dtype, got i32");
    check_error<ShapeError>([&] { global_norm_squared(std::vector<Tensor>{table}, f64(device, {2})); },
                            "global_norm_squared: out: expected shape one element");
}

TEST_CASE("front end: attention shapes, grouped heads, the kv cache") {
    const Device device = Device::reference();
    const Tensor q = f64(device, {2, 3, 4, 8});
    const Tensor k = f64(device, {2, 3, 2, 8});
    const Tensor v = f64(device, {2, 3, 2, 8});
    const Tensor out = f64(device, {2, 3, 4, 8});
    const Tensor lse = f64(device, {2, 4, 3});
    attention(q, k, v, out, lse);
    check_error<ShapeError>(
        [&] {
            attention(q, f64(device, {2, 3, 3, 8}), f64(device, {2, 3, 3, 8}), out, lse);
        },
        "attention: k: expected shape a head count dividing q's 4");
    check_error<ShapeError>(
        [&] {
            attention(q, k, f64(device, {2, 3, 2, 4}), out, lse);
        },
        "attention: v: expected shape [2, 3, 2, 8], got [2, 3, 2, 4]");
    check_error<ShapeError>(
        [&] {
            attention(q, f64(device, {2, 3, 2, 4}), v, out, lse);
        },
        "attention: k: expected shape [2, T, Hkv, 8]");
    check_error<ShapeError>(
        [&] {
            attention(q, f64(device, {2, 4, 2, 8}), f64(device, {2, 4, 2, 8}), out, lse);
        },
        "attention: k: expected shape [2, 3, Hkv, 8] (T from q)");
    check_error<ShapeError>(
        [&] {
            attention(q, k, v, out, f64(device, {2, 3, 4}));
        },
        "attention: lse: expected shape [2, 4, 3], got [2, 3, 4]");
    check_error<ShapeError>(
        [&] {
            attention(f64(device, {2, 3, 32}), k, v, out, lse);
        },
        "attention: q: expected shape [B, T, Hq, D]");
    check_error<Error>([&] { attention(q, k, v, q, lse); }, "attention: out: shares memory with q");
    check_error<Error>([&] { attention(q, k, v, out, lse, {.scale = inf}); },
                       "attention: scale: expected a finite value");
    const Tensor dq = f64(device, {2, 3, 4, 8});
    attention_backward(q, k, v, out, lse, out, dq, Tensor(), Tensor());
    check_error<ShapeError>([&] { attention_backward(q, k, v, out, lse, out, Tensor(), dq, Tensor()); },
                            "attention_backward: dk: expected shape [2, 3, 2, 8]");
    check_error<Error>([&] { attention_backward(q, k, v, out, lse, dq, dq, Tensor(), Tensor()); },
                       "attention_backward: dq: shares memory with dout");
    const Tensor cache = f64(device, {2, 6, 2, 8});
    kv_attention(q, cache, f64(device, {2, 6, 2, 8}), out, 3);
    check_error<Error>(
        [&] {
            kv_attention(q, cache, f64(device, {2, 6, 2, 8}), out, 4);
        },
        "kv_attention: past: past 4 + Tq 3 exceeds the cache's Tmax 6");
    check_error<ShapeError>(
        [&] {
            kv_attention(q, cache, f64(device, {2, 5, 2, 8}), out, 0);
        },
        "kv_attention: v_cache: expected shape [2, 6, 2, 8]");
}

TEST_CASE("front end: elementwise tapes, broadcasting, counts") {
    const Device device = Device::reference();
    const Tape tape = record(2, 1, [](std::span<const Var> x, std::span<const Var> p) {
        return std::vector<Var>{x[0] * x[1] + p[0]};
    });
    const Tensor s = f64(device, {2, 3});
    const Tensor out = f64(device, {2, 3});
    const std::vector<double> params = {1.0};
    // Every broadcast form: S, one element, a row [N], a column [..., 1].
    for (const Shape& shape : {Shape{2, 3}, Shape{1}, Shape{}, Shape{3}, Shape{2, 1}, Shape{1, 1}}) {
        elementwise(tape, std::vector<Tensor>{s, f64(device, shape)}, std::vector<Tensor>{out}, params);
    }
    check_error<ShapeError>(
        [&] {
            elementwise(tape, std::vector<Tensor>{s, f64(device, {2})}, std::vector<Tensor>{out}, params);
        },
        "elementwise: inputs[1]: expected shape [2, 3] or one that broadcasts");
    check_error<ShapeError>(
        [&] {
            elementwise(tape, std::vector<Tensor>{s, s}, std::vector<Tensor>{f64(device, {3, 2})}, params);
        },
        "elementwise: inputs[0]: expected shape [3, 2]");
    check_error<Error>([&] { elementwise(tape, std::vector<Tensor>{s}, std::vector<Tensor>{out}, params); },
                       "elementwise: inputs: 1 tensors for a tape of 2 inputs");
    check_error<Error>(
        [&] {
            elementwise(tape, std::vector<Tensor>{s, s}, std::vector<Tensor>{out, out}, params);
        },
        "elementwise: outputs: 2 tensors for a tape of 1 outputs");
    check_error<Error>(
        [&] {
            elementwise(tape, std::vector<Tensor>{s, s}, std::vector<Tensor>{out});
        },
        "elementwise: params: 0 values for a tape of 1 parameters");
    check_error<Error>(
        [&] {
            elementwise(tape, std::vector<Tensor>{s, ids(device, {1}, {1})}, std::vector<Tensor>{out},
                        params);
        },
        "elementwise: inputs[1]: expected a float dtype");
    elementwise(tape, std::vector<Tensor>{out, s}, std::vector<Tensor>{out}, params);  // in place
    const Tensor grad = f64(device, {2, 3});
    const Tensor row = f64(device, {3});
    elementwise_backward(tape, std::vector<Tensor>{s, row}, std::vector<Tensor>{out},
                         std::vector<Tensor>{grad, f64(device, {3})}, params);
    check_error<ShapeError>(
        [&] {
            elementwise_backward(tape, std::vector<Tensor>{s, row}, std::vector<Tensor>{out},
                                 std::vector<Tensor>{grad, f64(device, {2, 3})}, params);
        },
        "elementwise_backward: input_grads[1]: expected shape [3], got [2, 3]");
    check_error<Error>(
        [&] {
            elementwise_backward(tape, std::vector<Tensor>{s, row}, std::vector<Tensor>{out},
                                 std::vector<Tensor>{grad}, params);
        },
        "elementwise_backward: input_grads: 1 tensors for 2 inputs");
    check_error<Error>(
        [&] {
            elementwise_backward(tape, std::vector<Tensor>{s, row}, std::vector<Tensor>{out},
                                 std::vector<Tensor>{out, Tensor()}, params);
        },
        "elementwise_backward: input_grads[0]: shares memory with output_grads[0]");
}

TEST_CASE("dropout's mask: the kept fraction, independent streams and seeds, bad p") {
    constexpr std::uint32_t n = 1 << 20;
    for (const double p : {0.1, 0.5, 0.9}) {
        std::uint64_t kept = 0, both_streams = 0, both_seeds = 0;
        for (std::uint32_t i = 0; i < n; ++i) {
            const bool a = dropout_keeps(p, 42, 7, i);
            kept += a;
            both_streams += a && dropout_keeps(p, 42, 8, i);
            both_seeds += a && dropout_keeps(p, 43, 7, i);
        }
        // Binomial: within 5 standard deviations of n (1 - p), and of n (1 - p)^2 for two masks.
        const double q = 1 - p, sigma = std::sqrt(n * p * q);
        CAPTURE(p);
        CHECK(std::fabs(static_cast<double>(kept) - n * q) < 5 * sigma);
        const double q2 = q * q, sigma2 = std::sqrt(n * q2 * (1 - q2));
        CHECK(std::fabs(static_cast<double>(both_streams) - n * q2) < 5 * sigma2);
        CHECK(std::fabs(static_cast<double>(both_seeds) - n * q2) < 5 * sigma2);
    }
    CHECK(dropout_keeps(0.0, 1, 2, 3));
    const Device device = Device::reference();
    const Tensor x = device.zeros({4}, DType::f64);
    CHECK_THROWS_AS(dropout(x, x, 1.0, 1, 1), Error);
    CHECK_THROWS_AS(dropout(x, x, -0.1, 1, 1), Error);
    CHECK_THROWS_AS(dropout(x, device.zeros({5}, DType::f64), 0.5, 1, 1), Error);
}
