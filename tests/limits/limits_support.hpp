// Limits (issue 24 item 5), the checks every evaluator shares: batches of 0 and 1 points in
// every mode give the right results, and counts whose buffer sizes would wrap around size_t
// (2^63 points of 2 inputs "need" 0 values) are refused with an Unsupported naming the limit
// before anything is read or allocated; 2^31 + 1 points (beyond int32) with buffers of the
// wrong size are a ShapeError naming the expected size, computed without wrapping.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "detail/batch_limits.hpp"
#include "tapevm/error.hpp"
#include "tapevm/evaluator.hpp"
#include "tapevm/var.hpp"

namespace tapevm::test {

/// f(x0, x1) = (x0 * x1 + sin(x0), x1 * x1): two inputs, two outputs, every mode non-trivial.
inline Tape limits_tape() {
    return record(std::vector<double>{0.5, 2.0}, [](std::span<const Var> x) {
        return std::vector<Var>{x[0] * x[1] + sin(x[0]), x[1] * x[1]};
    });
}

/// One output (for gradient): x0 * x1 + sin(x0).
inline Tape limits_scalar_tape() {
    return record(std::vector<double>{0.5, 2.0},
                  [](std::span<const Var> x) { return x[0] * x[1] + sin(x[0]); });
}

template <class Real> void check_close_to(Real got, double want, const std::string& what) {
    const double tolerance = sizeof(Real) == 8 ? 1e-14 : 1e-6;
    INFO(what << ": got " << got << ", want " << want);
    CHECK(std::fabs(static_cast<double>(got) - want) <= tolerance * (1 + std::fabs(want)));
}

/// 0 points: every mode succeeds, reads and writes nothing, reports nothing.
template <class Real> void check_zero_points(const Evaluator& vector_vm, const Evaluator& scalar_vm) {
    const Batch<Real> empty{0, {}, {}};
    std::vector<Real> none;
    CHECK(vector_vm.forward(empty, std::span<Real>(none)).all_guards_hold());
    CHECK(scalar_vm.gradient(empty, std::span<Real>(none)).all_guards_hold());
    CHECK(vector_vm.jacobian(empty, std::span<Real>(none), JacobianMode::forward).all_guards_hold());
    CHECK(vector_vm.jacobian(empty, std::span<Real>(none), JacobianMode::reverse).all_guards_hold());
    CHECK(vector_vm.jvp(empty, std::span<const Real>(none), std::span<Real>(none)).all_guards_hold());
    CHECK(vector_vm.vjp(empty, std::span<const Real>(none), std::span<Real>(none)).all_guards_hold());
    CHECK(
        vector_vm.hvp(empty, std::span<const Real>(none), std::span<const Real>(none), std::span<Real>(none))
            .all_guards_hold());
}

/// 1 point, every mode, against the derivatives written out.
template <class Real> void check_one_point(const Evaluator& vector_vm, const Evaluator& scalar_vm) {
    const double x0 = 0.75, x1 = -1.5;
    const std::vector<Real> x{Real(x0), Real(x1)};
    const Batch<Real> one{1, x, {}};
    const double a = static_cast<double>(Real(x0)), b = static_cast<double>(Real(x1));
    std::vector<Real> out(2);
    vector_vm.forward(one, std::span<Real>(out));
    check_close_to(out[0], a * b + std::sin(a), "forward[0]");
    check_close_to(out[1], b * b, "forward[1]");
    scalar_vm.gradient(one, std::span<Real>(out));
    check_close_to(out[0], b + std::cos(a), "gradient[0]");
    check_close_to(out[1], a, "gradient[1]");
    const double jacobian[4] = {b + std::cos(a), a, 0, 2 * b};
    for (const JacobianMode mode : {JacobianMode::forward, JacobianMode::reverse}) {
        std::vector<Real> j(4);
        vector_vm.jacobian(one, std::span<Real>(j), mode);
        for (int k = 0; k < 4; ++k)
            check_close_to(j[k], jacobian[k], "jacobian element " + std::to_string(k));
    }
    const std::vector<Real> v{Real(1), Real(-2)};  // tangent direction (and cotangents)
    vector_vm.jvp(one, std::span<const Real>(v), std::span<Real>(out));
    check_close_to(out[0], jacobian[0] - 2 * jacobian[1], "jvp[0]");
    check_close_to(out[1], -2 * jacobian[3], "jvp[1]");
    vector_vm.vjp(one, std::span<const Real>(v), std::span<Real>(out));
    check_close_to(out[0], jacobian[0] - 2 * jacobian[2], "vjp[0]");
    check_close_to(out[1], jacobian[1] - 2 * jacobian[3], "vjp[1]");
    // Hessians: output 0 [[-sin a, 1], [1, 0]], output 1 [[0, 0], [0, 2]]; cotangents (1, -2),
    // direction (1, -2): H = [[-sin a, 1], [1, -4]].
    vector_vm.hvp(one, std::span<const Real>(v), std::span<const Real>(v), std::span<Real>(out));
    check_close_to(out[0], -std::sin(a) - 2, "hvp[0]");
    check_close_to(out[1], 1 + 8, "hvp[1]");
}

/// Counts beyond the limit: Unsupported naming it, before anything is read; 2^31 + 1 points
/// (past int32) with empty buffers: a ShapeError with the exact expected size.
template <class Real> void check_huge_counts(const Evaluator& vector_vm, const Evaluator& scalar_vm) {
    const Tape& tape = vector_vm.tape();
    const std::size_t limit = detail::max_points(tape, sizeof(Real));
    CHECK(limit == static_cast<std::size_t>(std::numeric_limits<std::ptrdiff_t>::max()) / sizeof(Real) / 4);
    std::vector<Real> none;
    // 2^63 points of 2 inputs: 2^64 values, 0 after wrapping around; each tape's limit + 1.
    const std::size_t scalar_limit = detail::max_points(scalar_vm.tape(), sizeof(Real));
    for (const std::size_t points :
         {std::size_t{1} << 63, limit + 1, scalar_limit + 1, std::numeric_limits<std::size_t>::max()}) {
        const Batch<Real> huge{points, {}, {}};
        INFO(points << " points");
        const auto refused = [&](const Evaluator& vm, auto&& call, const char* mode) {
            INFO(mode);
            const std::size_t own_limit = detail::max_points(vm.tape(), sizeof(Real));
            if (points <= own_limit) return;  // the other tape's limit + 1
            try {
                call();
                FAIL_CHECK("no error");
            } catch (const Unsupported& error) {
                const std::string what = error.what();
                CHECK(what.find(std::to_string(own_limit) + "-point limit") != std::string::npos);
                CHECK(what.find(std::to_string(points) + " points") != std::string::npos);
            }
        };
        refused(
            vector_vm, [&] { vector_vm.forward(huge, std::span<Real>(none)); }, "forward");
        refused(
            scalar_vm, [&] { scalar_vm.gradient(huge, std::span<Real>(none)); }, "gradient");
        refused(
            vector_vm, [&] { vector_vm.jacobian(huge, std::span<Real>(none)); }, "jacobian");
        refused(
            vector_vm, [&] { vector_vm.jvp(huge, std::span<const Real>(none), std::span<Real>(none)); },
            "jvp");
        refused(
            vector_vm, [&] { vector_vm.vjp(huge, std::span<const Real>(none), std::span<Real>(none)); },
            "vjp");
        refused(
            vector_vm,
            [&] {
                vector_vm.hvp(huge, std::span<const Real>(none), std::span<const Real>(none),
                              std::span<Real>(none));
            },
            "hvp");
    }
    // 2^31 + 1 points, within the limit: the sizes are computed in size_t, so the error
    // names 2^32 + 2 input values (int32 arithmetic would say 2 or a negative count).
    const std::size_t points = (std::size_t{1} << 31) + 1;
    const Batch<Real> big{points, {}, {}};
    try {
        vector_vm.forward(big, std::span<Real>(none));
        FAIL_CHECK("no error");
    } catch (const ShapeError& error) {
        CHECK(error.expected() == 2 * points);
        CHECK(error.given() == 0);
    }
}

template <class Real> void check_limits(const Evaluator& vector_vm, const Evaluator& scalar_vm) {
    check_zero_points<Real>(vector_vm, scalar_vm);
    check_one_point<Real>(vector_vm, scalar_vm);
    check_huge_counts<Real>(vector_vm, scalar_vm);
}

}  // namespace tapevm::test
