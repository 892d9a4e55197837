// The elementwise tests, written once over a device (cpu or gpu) and run by
// test_nn_elementwise_cpu.cpp and test_nn_elementwise_gpu.cpp. Oracles: the f64 reference
// device (Device::reference()) on the same inputs rounded to the tested dtype, and
// tapevm::reference::Vm's vjp directly; determinism as bitwise equality.
#pragma once

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "tapevm/error.hpp"
#include "tapevm/nn/device.hpp"
#include "tapevm/nn/kernels.hpp"
#include "tapevm/nn/tensor.hpp"
#include "tapevm/reference.hpp"
#include "tapevm/var.hpp"

namespace elementwise_test {

using tapevm::Tape;
using tapevm::Var;
using tapevm::nn::Device;
using tapevm::nn::DType;
using tapevm::nn::Shape;
using tapevm::nn::Tensor;

inline std::vector<double> random_values(std::size_t n, unsigned seed, double lo = -2.0, double hi = 2.0) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> d(lo, hi);
    std::vector<double> v(n);
    for (double& x : v) x = d(rng);
    return v;
}

/// `values` as stored in `dtype` (what the tested device holds), in double.
inline std::vector<double> rounded(const std::vector<double>& values, DType dtype) {
    std::vector<double> r(values.size());
    for (std::size_t i = 0; i < values.size(); ++i) r[i] = tapevm::nn::round_to(dtype, values[i]);
    return r;
}

/// Relative tolerance of results stored in `dtype`, computed in f32.
inline double tolerance(DType dtype) {
    switch (dtype) {
        case DType::f16: return 2e-3;
        case DType::bf16: return 1.6e-2;
        default: return 2e-5;
    }
}

/// |got - want| <= tol * (|want| + scale), element by element (one assertion per tensor,
/// naming the first elements that fail).
inline void check_close(const std::vector<double>& got, const std::vector<double>& want, double tol,
                        double scale, const std::string& what) {
    REQUIRE(got.size() == want.size());
    std::size_t bad = 0;
    std::string first;
    for (std::size_t i = 0; i < got.size(); ++i) {
        if (std::abs(got[i] - want[i]) <= tol * (std::abs(want[i]) + scale)) continue;
        if (bad++ < 3)
            first += " [" + std::to_string(i) + "] got " + std::to_string(got[i]) + " want " +
                     std::to_string(want[i]);
    }
    CHECK_MESSAGE(bad == 0, what << ": " << bad << " of " << got.size() << " elements differ:" << first);
}

inline bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (std::memcmp(&a[i], &b[i], sizeof(float)) != 0) return false;
    return true;
}

// ---- tapes --------------------------------------------------------------------------------

inline Tape gelu_tanh() {
    return tapevm::record(1, [](std::span<const Var> x) {
        const double k = std::sqrt(2.0 / 3.14159265358979323846);
        return 0.5 * x[0] * (1.0 + tanh(k * (x[0] + 0.044715 * x[0] * x[0] * x[0])));
    });
}

inline Tape silu() {
    return tapevm::record(1, [](std::span<const Var> x) { return x[0] / (1.0 + exp(-x[0])); });
}

/// Four inputs, two outputs: (x * s + r * c, sin(x) * r - c).
inline Tape two_outputs() {
    return tapevm::record(4, [](std::span<const Var> v) {
        return std::vector<Var>{v[0] * v[1] + v[2] * v[3], sin(v[0]) * v[2] - v[3]};
    });
}

/// An AdamW-like update with parameters (lr, beta1, beta2, eps, weight decay):
/// inputs (w, g, m, v) -> outputs (w', m', v').
inline Tape adamw_like() {
    return tapevm::record(4, 5, [](std::span<const Var> x, std::span<const Var> p) {
        const Var m = p[1] * x[2] + (1.0 - p[1]) * x[1];
        const Var v = p[2] * x[3] + (1.0 - p[2]) * x[1] * x[1];
        const Var w = x[0] - p[0] * (m / (sqrt(v) + p[3]) + p[4] * x[0]);
        return std::vector<Var>{w, m, v};
    });
}

// ---- a call on the tested device and on the reference ---------------------------------------

struct Operand {
    Shape shape;
    std::vector<double> values;
};

inline std::vector<Operand> operands(const std::vector<Shape>& shapes, unsigned seed) {
    std::vector<Operand> ops;
    for (const Shape& s : shapes) ops.push_back({s, random_values(tapevm::nn::element_count(s), seed++)});
    return ops;
}

/// Forward on `device` in `dtype` against the reference device.
inline void check_forward(const Device& device, const Tape& tape, const std::vector<Operand>& inputs,
                          const Shape& shape, DType dtype, const std::vector<double>& params = {}) {
    const Device reference = Device::reference();
    std::vector<Tensor> x, xr, y, yr;
    for (const Operand& op : inputs) {
        x.push_back(device.upload(op.shape, std::span<const double>(op.values), dtype));
        xr.push_back(
            reference.upload(op.shape, std::span<const double>(rounded(op.values, dtype)), DType::f64));
    }
    for (std::uint32_t j = 0; j < tape.output_count(); ++j) {
        y.push_back(device.zeros(shape, dtype));
        yr.push_back(reference.zeros(shape, DType::f64));
    }
    tapevm::nn::elementwise(tape, x, y, params);
    tapevm::nn::elementwise(tape, xr, yr, params);
    for (std::uint32_t j = 0; j < tape.output_count(); ++j) {
        check_close(y[j].to_double(), yr[j].to_double(), tolerance(dtype), 1e-3,
                    "output " + std::to_string(j) + " (" + std::string(tapevm::nn::dtype_name(dtype)) + ")");
    }
}

/// Backward on `device` in `dtype` against the reference device: every input gradient starts
/// at a non-zero value (the kernel adds), `skip` leaves that gradient undefined.
inline void check_backward(const Device& device, const Tape& tape, const std::vector<Operand>& inputs,
                           const Shape& shape, DType dtype, const std::vector<double>& params = {},
                           int skip = -1) {
    const Device reference = Device::reference();
    std::vector<Tensor> x, xr, dy, dyr, dx, dxr;
    unsigned seed = 1000;
    for (const Operand& op : inputs) {
        x.push_back(device.upload(op.shape, std::span<const double>(op.values), dtype));
        xr.push_back(
            reference.upload(op.shape, std::span<const double>(rounded(op.values, dtype)), DType::f64));
        const std::vector<double> start = random_values(op.values.size(), seed++, -0.5, 0.5);
        const bool skipped = static_cast<int>(dx.size()) == skip;
        dx.push_back(skipped ? Tensor() : device.upload(op.shape, std::span<const double>(start), dtype));
        dxr.push_back(
            skipped ? Tensor()
                    : reference.upload(op.shape, std::span<const double>(rounded(start, dtype)), DType::f64));
    }
    for (std::uint32_t j = 0; j < tape.output_count(); ++j) {
        const std::vector<double> g = random_values(tapevm::nn::element_count(shape), seed++);
        dy.push_back(device.upload(shape, std::span<const double>(g), dtype));
        dyr.push_back(reference.upload(shape, std::span<const double>(rounded(g, dtype)), DType::f64));
    }
    tapevm::nn::elementwise_backward(tape, x, dy, dx, params);
    tapevm::nn::elementwise_backward(tape, xr, dyr, dxr, params);
    for (std::size_t i = 0; i < dx.size(); ++i) {
        if (!dx[i].defined()) continue;
        // A broadcast gradient sums many terms: scale the tolerance by their count.
        const double terms = double(tapevm::nn::element_count(shape)) / double(dx[i].size());
        check_close(
            dx[i].to_double(), dxr[i].to_double(), tolerance(dtype) * (1 + std::sqrt(terms)), 1e-2 * terms,
            "input_grads[" + std::to_string(i) + "] (" + std::string(tapevm::nn::dtype_name(dtype)) + ")");
    }
}

// ---- the cases --------------------------------------------------------------------------------

inline const DType all_dtypes[] = {DType::f32, DType::f16, DType::bf16};

inline void activations(const Device& device) {
    for (const DType dtype : all_dtypes) {
        if (!device.supports(dtype)) continue;
        CAPTURE(tapevm::nn::dtype_name(dtype));
        const Shape shape{7, 13};
        for (const Tape& tape : {gelu_tanh(), silu()}) {
            check_forward(device, tape, operands({shape}, 1), shape, dtype);
            check_backward(device, tape, operands({shape}, 2), shape, dtype);
        }
    }
}

/// Every broadcast kind at once: x full, s scalar, r row [N], c column [..., 1]; ranks 2 and 3.
inline void broadcasting(const Device& device, DType dtype) {
    const Tape tape = two_outputs();
    for (const Shape& shape : {Shape{5, 9}, Shape{2, 3, 17}}) {
        Shape column = shape;
        column.back() = 1;
        const std::vector<Operand> ops = operands({shape, Shape{1}, Shape{shape.back()}, column}, 7);
        check_forward(device, tape, ops, shape, dtype);
        check_backward(device, tape, ops, shape, dtype);
        check_backward(device, tape, ops, shape, dtype, {}, 0);  // dx skipped
    }
    // A call of rank 0 (one element), and of one row.
    check_backward(device, tape, operands({Shape{}, Shape{1}, Shape{}, Shape{}}, 9), Shape{}, dtype);
    check_backward(device, tape, operands({Shape{8}, Shape{}, Shape{8}, Shape{1}}, 11), Shape{8}, dtype);
    // A rank-0 scalar input.
    const Shape shape{4, 6};
    check_forward(device, tape,
                  {{Shape{4, 6}, random_values(24, 3)},
                   {Shape{}, {0.75}},
                   {Shape{6}, random_values(6, 4)},
                   {Shape{4, 1}, random_values(4, 5)}},
                  shape, dtype);
}

inline void with_params(const Device& device, DType dtype) {
    const Tape tape = adamw_like();
    const Shape shape{6, 11};
    std::vector<Operand> ops = operands({shape, shape, shape, shape}, 21);
    for (double& v : ops[3].values) v = std::abs(v);  // second moments are >= 0
    const std::vector<double> params{1e-2, 0.9, 0.999, 1e-8, 0.1};
    check_forward(device, tape, ops, shape, dtype, params);
    check_backward(device, tape, ops, shape, dtype, params);
}

/// Outputs that are inputs: the AdamW-like update in place (w, m, v overwritten).
inline void in_place(const Device& device, DType dtype) {
    const Tape tape = adamw_like();
    const Shape shape{3, 37};
    std::vector<Operand> ops = operands({shape, shape, shape, shape}, 31);
    for (double& v : ops[3].values) v = std::abs(v);
    const std::vector<double> params{1e-2, 0.9, 0.999, 1e-8, 0.1};
    std::vector<Tensor> x;
    for (const Operand& op : ops)
        x.push_back(device.upload(op.shape, std::span<const double>(op.values), dtype));
    const Device reference = Device::reference();
    std::vector<Tensor> xr, yr;
    for (const Operand& op : ops)
        xr.push_back(
            reference.upload(op.shape, std::span<const double>(rounded(op.values, dtype)), DType::f64));
    for (int j = 0; j < 3; ++j) yr.push_back(reference.zeros(shape, DType::f64));
    const std::vector<Tensor> outputs{x[0], x[2], x[3]};
    tapevm::nn::elementwise(tape, x, outputs, params);
    tapevm::nn::elementwise(tape, xr, yr, params);
    check_close(x[0].to_double(), yr[0].to_double(), tolerance(dtype), 1e-3, "w in place");
    check_close(x[2].to_double(), yr[1].to_double(), tolerance(dtype), 1e-3, "m in place");
    check_close(x[3].to_double(), yr[2].to_double(), tolerance(dtype), 1e-3, "v in place");
    check_close(x[1].to_double(), rounded(ops[1].values, dtype), 0, 0, "g unchanged");
}

/// Backward against tapevm::reference::Vm's vjp directly (f64), summing broadcast gradients here.
inline void against_reference_vm(const Device& device) {
    const Tape tape = two_outputs();
    const Shape shape{9, 10};
    const std::size_t points = 90, n = 10;
    const std::vector<Operand> ops = operands({shape, Shape{1}, Shape{n}, Shape{9, 1}}, 41);
    const std::vector<double> g0 = random_values(points, 51), g1 = random_values(points, 52);
    std::vector<double> batch(points * 4), cot(points * 2);
    for (std::size_t e = 0; e < points; ++e) {
        batch[e * 4 + 0] = ops[0].values[e];
        batch[e * 4 + 1] = ops[1].values[0];
        batch[e * 4 + 2] = ops[2].values[e % n];
        batch[e * 4 + 3] = ops[3].values[e / n];
        cot[e * 2] = g0[e];
        cot[e * 2 + 1] = g1[e];
    }
    const tapevm::reference::Vm vm(tape);
    std::vector<double> vjp(points * 4);
    vm.vjp(tapevm::Batch<double>{points, batch, {}}, std::span<const double>(cot), std::span<double>(vjp));
    std::vector<std::vector<double>> want{std::vector<double>(points), std::vector<double>(1),
                                          std::vector<double>(n), std::vector<double>(9)};
    for (std::size_t e = 0; e < points; ++e) {
        want[0][e] += vjp[e * 4];
        want[1][0] += vjp[e * 4 + 1];
        want[2][e % n] += vjp[e * 4 + 2];
        want[3][e / n] += vjp[e * 4 + 3];
    }
    std::vector<Tensor> x, dx;
    for (const Operand& op : ops) {
        x.push_back(device.upload(op.shape, std::span<const double>(op.values), DType::f32));
        dx.push_back(device.zeros(op.shape, DType::f32));
    }
    const std::vector<Tensor> dy{device.upload(shape, std::span<const double>(g0), DType::f32),
                                 device.upload(shape, std::span<const double>(g1), DType::f32)};
    tapevm::nn::elementwise_backward(tape, x, dy, dx);
    for (std::size_t i = 0; i < 4; ++i)
        check_close(dx[i].to_double(), want[i], 1e-4, 1.0, "vjp input " + std::to_string(i));
}

/// The same call twice gives the same bits (broadcast gradients included), over several blocks.
inline std::vector<std::vector<float>> backward_bits(const Device& device, DType dtype) {
    const Tape tape = two_outputs();
    const Shape shape{61, 173};  // 10553 elements: several blocks and workgroups
    const std::vector<Operand> ops = operands({shape, Shape{1}, Shape{173}, Shape{61, 1}}, 61);
    std::vector<Tensor> x, dx;
    for (const Operand& op : ops) {
        x.push_back(device.upload(op.shape, std::span<const double>(op.values), dtype));
        dx.push_back(device.zeros(op.shape, dtype));
    }
    const std::vector<double> g = random_values(tapevm::nn::element_count(shape), 62);
    const std::vector<Tensor> dy{device.upload(shape, std::span<const double>(g), dtype),
                                 device.upload(shape, std::span<const double>(g), dtype)};
    tapevm::nn::elementwise_backward(tape, x, dy, dx);
    std::vector<std::vector<float>> bits;
    for (const Tensor& t : dx) bits.push_back(t.to_float());
    return bits;
}

inline void deterministic(const Device& device) {
    const auto a = backward_bits(device, DType::f32);
    const auto b = backward_bits(device, DType::f32);
    for (std::size_t i = 0; i < a.size(); ++i)
        CHECK_MESSAGE(same_bits(a[i], b[i]), "input_grads[" << i << "]");
}

/// f16/bf16 loads and stores: y = a * b over f16 (bf16) tensors equals the host's
/// float_to_half(half_to_float(a) * half_to_float(b)) bit for bit (the product in f32 is
/// correctly rounded, then rounded to nearest even on store), edge cases included: ties,
/// subnormals, overflow to infinity, infinities, NaN, -0.
inline void conversions(const Device& device) {
    const tapevm::Tape product = tapevm::record(2, [](std::span<const Var> x) { return x[0] * x[1]; });
    std::vector<float> a{0.0f,
                         -0.0f,
                         1.0f,
                         -2.5f,
                         65504.0f,
                         60000.0f,
                         1e-7f,
                         6.1e-5f,
                         3.14159265f,
                         1.0009765625f,
                         std::numeric_limits<float>::infinity(),
                         std::numeric_limits<float>::quiet_NaN()};
    for (int i = 0; i < 52; ++i)
        a.push_back(static_cast<float>(std::ldexp(1.0 + i / 64.0, 3 * (i % 12) - 24)));
    const float factors[] = {1.0f, 0.5f, 1.5f, 3.0f, 1.0009765625f, 0.33325195f, 1.99902344f, -1.00195312f};
    std::vector<float> b;
    for (std::size_t i = 0; i < a.size(); ++i) b.push_back(factors[i % 8]);
    const Shape shape{a.size()};
    for (const DType dtype : {DType::f16, DType::bf16}) {
        if (!device.supports(dtype)) continue;
        CAPTURE(tapevm::nn::dtype_name(dtype));
        const auto to_bits = [&](float v) {
            return dtype == DType::f16 ? tapevm::nn::float_to_half(v) : tapevm::nn::float_to_bfloat(v);
        };
        const auto from_bits = [&](std::uint16_t h) {
            return dtype == DType::f16 ? tapevm::nn::half_to_float(h) : tapevm::nn::bfloat_to_float(h);
        };
        const Tensor inputs[2] = {device.upload(shape, std::span<const float>(a), dtype),
                                  device.upload(shape, std::span<const float>(b), dtype)};
        const Tensor y = device.zeros(shape, dtype);
        tapevm::nn::elementwise(product, inputs, std::span<const Tensor>(&y, 1));
        const std::vector<std::byte> bytes = y.to_bytes();
        std::size_t bad = 0;
        for (std::size_t i = 0; i < a.size(); ++i) {
            std::uint16_t got;
            std::memcpy(&got, bytes.data() + 2 * i, 2);
            const std::uint16_t want = to_bits(from_bits(to_bits(a[i])) * from_bits(to_bits(b[i])));
            const bool both_nan = std::isnan(from_bits(got)) && std::isnan(from_bits(want));
            if (got != want && !both_nan) {
                ++bad;
                MESSAGE("element " << i << " (" << a[i] << " * " << b[i] << "): got 0x" << std::hex << got
                                   << ", want 0x" << want);
            }
        }
        CHECK(bad == 0);
    }
}

/// Bad input gets typed errors naming the kernel and the argument.
inline void bad_input(const Device& device) {
    const Tape tape = two_outputs();
    const Shape shape{4, 5};
    const Tensor x = device.zeros(shape, DType::f32), s = device.zeros({1}, DType::f32);
    const Tensor wrong = device.zeros({4, 3}, DType::f32), y0 = device.zeros(shape, DType::f32),
                 y1 = device.zeros(shape, DType::f32);
    const auto message_of = [](auto&& f) {
        try {
            f();
        } catch (const tapevm::Error& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    // Three inputs for a tape of four.
    {
        const std::vector<Tensor> in{x, s, s}, out{y0, y1};
        const std::string m = message_of([&] { tapevm::nn::elementwise(tape, in, out); });
        CHECK(m.find("elementwise") != std::string::npos);
        CHECK(m.find("inputs") != std::string::npos);
    }
    // An input that does not broadcast: a ShapeError naming it.
    {
        const std::vector<Tensor> in{x, s, wrong, s}, out{y0, y1};
        CHECK_THROWS_AS(tapevm::nn::elementwise(tape, in, out), tapevm::ShapeError);
        const std::string m = message_of([&] { tapevm::nn::elementwise(tape, in, out); });
        CHECK(m.find("inputs[2]") != std::string::npos);
    }
    // Params missing, one output too few, a backward gradient of the wrong shape.
    {
        const std::vector<Tensor> in{x, s, s, s}, out{y0};
        CHECK_THROWS_AS(tapevm::nn::elementwise(tape, in, out), tapevm::Error);
        const std::vector<Tensor> in4{x, x, x, x}, out3{y0, y1, x};
        const std::vector<double> no_params;
        CHECK_THROWS_AS(tapevm::nn::elementwise(adamw_like(), in4, out3, no_params), tapevm::Error);
        const std::vector<Tensor> dy{y0, y1}, dx{wrong, Tensor(), Tensor(), Tensor()};
        CHECK_THROWS_AS(tapevm::nn::elementwise_backward(tape, in, dy, dx), tapevm::ShapeError);
    }
}

}  // namespace elementwise_test
