// Helpers shared by the doctest suites: tapes of a single op, tolerant comparisons that
// treat NaN as equal to NaN, central finite differences.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "tapevm/reference.hpp"
#include "tapevm/tape.hpp"

namespace tapevm::test {

/// A tape computing `op` on its inputs directly (no recorder, so nothing is folded):
/// inputs a[, b[, c]], one output. Powi takes `exponent` as its immediate.
inline Tape single_op_tape(Op op, std::int32_t exponent = 0) {
    const std::uint32_t operands = arity(op);
    TapeParts parts;
    parts.inputs = operands;
    for (std::uint32_t i = 0; i < operands; ++i) parts.instructions.push_back({Op::Input, i, 0, 0});
    Instruction ins{op, 0, operands > 1 ? 1u : 0u, operands > 2 ? 2u : 0u};
    if (has_flag(op, op_flag::immediate)) ins.b = static_cast<std::uint32_t>(exponent);
    parts.instructions.push_back(ins);
    parts.outputs.push_back(operands);
    return Tape(std::move(parts));
}

/// True when a and b are both NaN, or equal (+0 == -0), or within `relative` of each other
/// (relative to max(1, |a|, |b|)); infinities must match exactly.
inline bool close(double a, double b, double relative) {
    if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
    if (a == b) return true;
    if (std::isinf(a) || std::isinf(b)) return false;
    const double scale = std::fmax(1.0, std::fmax(std::fabs(a), std::fabs(b)));
    return std::fabs(a - b) <= relative * scale;
}

/// Same, with the scale taken as max(|a|, |b|) only (for values far below 1).
inline bool close_relative(double a, double b, double relative) {
    if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
    if (a == b) return true;
    if (std::isinf(a) || std::isinf(b)) return false;
    return std::fabs(a - b) <= relative * std::fmax(std::fabs(a), std::fabs(b));
}

inline std::string show(std::span<const double> values) {
    std::string text = "[";
    for (double v : values) text += (text.size() > 1 ? ", " : "") + std::to_string(v);
    return text + "]";
}

/// Central difference of f along coordinate i at x with step h * max(1, |x_i|).
inline double central_difference(const std::function<double(std::span<const double>)>& f,
                                 std::vector<double> x, std::size_t i, double h = 1e-6) {
    const double step = h * std::fmax(1.0, std::fabs(x[i]));
    const double x0 = x[i];
    x[i] = x0 + step;
    const double up = f(x);
    x[i] = x0 - step;
    const double down = f(x);
    return (up - down) / (2 * step);
}

/// Values of a tape's outputs at one point, with the reference VM in double.
inline std::vector<double> forward(const reference::Vm& vm, std::span<const double> x,
                                   std::span<const double> p = {}) {
    std::vector<double> y(vm.tape().output_count());
    vm.forward(single_point<double>(x, p), std::span<double>(y));
    return y;
}

/// The Jacobian [m][n] at one point in the given mode.
inline std::vector<double> jacobian(const reference::Vm& vm, std::span<const double> x, JacobianMode mode,
                                    std::span<const double> p = {}) {
    std::vector<double> jac(std::size_t{vm.tape().output_count()} * vm.tape().input_count());
    vm.jacobian(single_point<double>(x, p), std::span<double>(jac), mode);
    return jac;
}

/// True when a and b are the same result: both NaN (any payload), or equal with the same
/// sign (+0 and -0 differ). What "bit for bit the same" means for a computed value.
inline bool same_value(double a, double b) {
    if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
    return a == b && std::signbit(a) == std::signbit(b);
}

/// The first index where same_value fails (or the sizes differ: the shorter size), or -1.
inline std::ptrdiff_t first_different_value(std::span<const double> a, std::span<const double> b) {
    const std::size_t n = std::min(a.size(), b.size());
    for (std::size_t k = 0; k < n; ++k) {
        if (!same_value(a[k], b[k])) return static_cast<std::ptrdiff_t>(k);
    }
    return a.size() == b.size() ? -1 : static_cast<std::ptrdiff_t>(n);
}

}  // namespace tapevm::test
