// Central finite differences for the train suites: a module's backward against the
// derivative of L = sum(forward(x) * w) for a fixed random w, on the f64 reference device.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "tapevm/nn/kernels.hpp"
#include "tapevm/nn/module.hpp"

namespace tapevm::nn::test {

/// Deterministic values in [-1, 1) (an LCG: no dependence on the library under test).
inline std::vector<double> random_values(std::size_t n, std::uint64_t seed, double low = -1,
                                         double high = 1) {
    std::vector<double> out(n);
    std::uint64_t state = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    for (double& v : out) {
        state = state * 6364136223846793005ULL + 1442695040888963407ULL;
        v = low + (high - low) * static_cast<double>(state >> 11) * 0x1.0p-53;
    }
    return out;
}

inline double dot(const std::vector<double>& a, const std::vector<double>& b) {
    double s = 0;
    for (std::size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
    return s;
}

inline double max_abs(const std::vector<double>& values) {
    double out = 0;
    for (const double v : values) out = std::max(out, std::abs(v));
    return out;
}

/// Max |analytic - numeric| over max(|numeric|) (floored at `floor`) for entries `indices` of
/// a tensor whose host values are perturbed through `set` and whose objective is `loss`.
struct Comparison {
    double error = 0;
    double scale = 0;
    double relative() const { return error / scale; }
};

inline Comparison compare_entries(const Tensor& tensor, const std::vector<double>& analytic,
                                  const std::vector<std::size_t>& indices,
                                  const std::function<double()>& loss, double h, double floor) {
    std::vector<double> values = tensor.to_double();
    Comparison out;
    out.scale = floor;
    for (const std::size_t i : indices) {
        const double saved = values[i];
        values[i] = saved + h;
        tensor.assign(values);
        const double plus = loss();
        values[i] = saved - h;
        tensor.assign(values);
        const double minus = loss();
        values[i] = saved;
        tensor.assign(values);
        const double numeric = (plus - minus) / (2 * h);
        out.error = std::max(out.error, std::abs(numeric - analytic[i]));
        out.scale = std::max(out.scale, std::abs(numeric));
    }
    return out;
}

/// Up to `count` indices of [0, n), spread evenly, always including the first and last.
inline std::vector<std::size_t> sample_indices(std::size_t n, std::size_t count) {
    std::vector<std::size_t> out;
    if (n <= count) {
        for (std::size_t i = 0; i < n; ++i) out.push_back(i);
        return out;
    }
    for (std::size_t k = 0; k < count; ++k) out.push_back(k * (n - 1) / (count - 1));
    return out;
}

/// Checks module's backward (dx and every parameter gradient) against central differences
/// of L = sum(module.forward(x) * w), at up to `per_tensor` entries of each tensor.
inline void check_module_gradients(Module& module, const Tensor& x, double tolerance,
                                   std::size_t per_tensor = 12, double h = 1e-5) {
    const Tensor y0 = module.forward(x);
    const std::vector<double> w = random_values(y0.size(), 99);
    const Device device = x.device();
    const Tensor dy = device.upload(y0.shape(), std::span<const double>(w), y0.dtype());
    module.zero_grad();
    const Tensor dx = module.backward(dy);
    const auto loss = [&] { return dot(module.forward(x).to_double(), w); };
    // Errors are relative to the module's largest gradient (a normalised error, as ggml's):
    // a gradient that is exactly zero (attention's key bias) then compares against a real
    // scale, not against its own finite-difference noise.
    double largest = dx.defined() ? max_abs(dx.to_double()) : 0.0;
    for (const NamedParameter& p : module.parameters())
        largest = std::max(largest, max_abs(p.parameter->grad.to_double()));
    const double floor = std::max(1e-8, largest);

    if (dx.defined()) {
        const Comparison c =
            compare_entries(x, dx.to_double(), sample_indices(x.size(), per_tensor), loss, h, floor);
        INFO("dx: error " << c.error << " scale " << c.scale);
        CHECK(c.relative() <= tolerance);
    }
    for (const NamedParameter& p : module.parameters()) {
        const std::vector<double> grad = p.parameter->grad.to_double();
        const Comparison c = compare_entries(p.parameter->value, grad,
                                             sample_indices(grad.size(), per_tensor), loss, h, floor);
        INFO(p.name << ": error " << c.error << " scale " << c.scale);
        CHECK(c.relative() <= tolerance);
    }
}

}  // namespace tapevm::nn::test
