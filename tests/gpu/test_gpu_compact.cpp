// The compact program (src/vm_gpu/compact.hpp) emulated on the CPU in double, with every home
// NaN until written: its forward values and reverse-mode Jacobian must equal the reference VM's
// bit for bit, so a home read before it is written, a value overwritten while the partials
// still need it, or a contribution lost or counted twice fails here, whatever the device.
// Every home is accessed with at(): the value homes are exactly value_count and each seed's
// adjoint homes exactly adjoint_count, the lengths the local kernels' home array is sized from
// (value_count + seeds x adjoint_count), so a home beyond them fails here too.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include <doctest/doctest.h>

#include "compact.hpp"
#include "detail/math_scalar.hpp"
#include "detail/op_value.hpp"
#include "detail/sweeps.hpp"
#include "gpu_support.hpp"
#include "kernels.hpp"
#include "tapevm/examples.hpp"
#include "tapevm/reference.hpp"
#include "tapevm/var.hpp"

namespace tapevm::test {
namespace {

using M = detail::ScalarMath<double>;
constexpr double unset = std::numeric_limits<double>::quiet_NaN();

struct Emulated {
    std::vector<double> outputs;   // [m]
    std::vector<double> jacobian;  // [m][n]
};

Emulated emulate(const Tape& tape, const gpu::detail::CompactProgram& program, std::span<const double> x,
                 std::span<const double> params) {
    const auto& words = program.words;
    const std::size_t n = tape.input_count();
    const std::size_t m = tape.output_count();
    std::vector<double> values(program.value_count, unset);
    for (std::uint32_t e = 0; e < program.forward_count; ++e) {
        const auto& ins = words[2 * e];
        const auto& info = words[2 * e + 1];
        const auto op = static_cast<Op>(ins[0] & 0xffff);
        double value = 0;
        if (op == Op::Input)
            value = x[ins[1]];
        else if (op == Op::Param)
            value = params[ins[1]];
        else if (op == Op::Const)
            value = tape.constants()[ins[1]];
        else {
            const std::uint32_t arity = ins[0] >> TV_PROGRAM_ARITY_SHIFT;
            const auto operand = [&](std::uint32_t k) { return k < arity ? values.at(ins[1 + k]) : unset; };
            value =
                detail::op_value(op, operand(0), operand(1), operand(2), static_cast<std::int32_t>(info[1]));
        }
        values.at(info[0]) = value;
    }
    Emulated result;
    for (std::size_t j = 0; j < m; ++j)
        result.outputs.push_back(values.at(words[program.table_begin + j][0]));
    if (program.adjoint_count == 0) return result;  // a forward program: no adjoint homes

    result.jacobian.assign(m * n, unset);
    for (std::size_t k = 0; k < m; ++k) {
        std::vector<double> adjoints(program.adjoint_count, unset);
        for (std::size_t i = 0; i < n; ++i) adjoints.at(i) = 0;
        for (std::size_t j = 0; j < m; ++j) adjoints.at(words[program.table_begin + j][1]) = 0;
        for (std::size_t j = 0; j < m; ++j)
            adjoints.at(words[program.table_begin + j][1]) += j == k ? 1.0 : 0.0;
        for (std::uint32_t e = 0; e < program.reverse_count; ++e) {
            const auto& ins = words[program.reverse_begin + 3 * e];
            const auto& info = words[program.reverse_begin + 3 * e + 1];
            const auto& targets = words[program.reverse_begin + 3 * e + 2];
            const auto op = static_cast<Op>(ins[0] & 0xffff);
            // The entry as an instruction over a 4-value array: operands 0, 1, 2, result 3.
            const Instruction local{op, 0, op == Op::Powi ? info[1] : 1, 2};
            // Only the values the partials read; the others are NaN, as a reused home may hold anything.
            const std::uint32_t reads = info[3] >> TV_COMPACT_READS_SHIFT;
            const auto read = [&](std::uint32_t bit, std::uint32_t home) {
                return (reads & bit) ? values.at(home) : unset;
            };
            const std::array<double, 4> local_values = {read(1, ins[1]), read(2, ins[2]), read(4, ins[3]),
                                                        read(8, info[0])};
            double d[3] = {0, 0, 0};
            const std::uint32_t count =
                detail::Sweeps<M, double>::partials(local, 3, std::span<const double>(local_values), d);
            const double adjoint = adjoints.at(info[2]);
            const std::uint32_t flags = info[3];
            for (std::uint32_t t = 0; t < count; ++t) {
                if (flags & (TV_COMPACT_SKIP << t)) continue;
                const double before = (flags & (TV_COMPACT_FIRST << t)) ? 0.0 : adjoints.at(targets[t]);
                adjoints.at(targets[t]) = before + detail::contribution<M>(d[t], adjoint);
            }
        }
        for (std::size_t i = 0; i < n; ++i) result.jacobian[k * n + i] = adjoints.at(i);
    }
    return result;
}

bool same(double a, double b) {
    return std::memcmp(&a, &b, sizeof a) == 0 || (std::isnan(a) && std::isnan(b));
}

void check_compact(const Tape& tape, double low, double high) {
    const auto forward = gpu::detail::compact_program(tape, false);
    const auto reverse = gpu::detail::compact_program(tape, true);
    CHECK(forward.reverse_count == 0);
    CHECK(forward.adjoint_count == 0);
    CHECK(reverse.adjoint_count >= std::max<std::size_t>(tape.input_count(), 1));
    CHECK(reverse.reverse_count <= tape.slot_count());
    const std::size_t n = tape.input_count(), m = tape.output_count(), p = tape.param_count();
    const std::size_t points = 16;
    const auto inputs = random_values<double>(points * n, low, high, 5);
    const auto params = random_values<double>(points * p, 0.5, 1.5, 6);
    const reference::Vm ref(tape);
    const Batch<double> batch{points, inputs, params};
    const auto values = ref.forward(batch).values;
    const auto jacobian = ref.jacobian(batch, JacobianMode::reverse).values;
    for (std::size_t point = 0; point < points; ++point) {
        CAPTURE(point);
        const std::span<const double> x(inputs.data() + point * n, n);
        const std::span<const double> q(params.data() + point * p, p);
        for (const auto* program : {&forward, &reverse}) {
            const auto emulated = emulate(tape, *program, x, q);
            for (std::size_t j = 0; j < m; ++j) CHECK(same(emulated.outputs[j], values[point * m + j]));
        }
        const auto emulated = emulate(tape, reverse, x, q);
        for (std::size_t e = 0; e < m * n; ++e) {
            CAPTURE(e);
            CHECK(same(emulated.jacobian[e], jacobian[point * m * n + e]));
        }
    }
}

TEST_CASE("compact programs compute the reference VM's values and Jacobians bit for bit") {
    for (const char* name : {"ba-param", "rosenbrock16", "trig16"}) {
        CAPTURE(name);
        const Tape tape = examples::example_tape(name);
        check_compact(tape, -1.5, 1.5);
        // Homes are reused: fewer than one per slot.
        const auto reverse = gpu::detail::compact_program(tape, true);
        CHECK(reverse.value_count < tape.slot_count());
        CHECK(reverse.adjoint_count < tape.slot_count());
        CHECK(gpu::detail::compact_program(tape, false).value_count < reverse.value_count);
    }
    const std::array<double, 3> at = {0.5, 1.5, -0.25};
    const Tape repeated = record(std::span<const double>(at), [](std::span<const Var> x) {
        const Var square = x[0] * x[0];
        const Var twice = fma(x[1], x[1], x[0]) + pow(x[1], x[1]) + powi(x[2], 3);
        const Var shared = x[2] * x[0] + x[2] * x[1] + x[2] * x[2] + sin(x[2]) * x[0] + exp(x[1]) / x[0];
        return std::vector<Var>{square * twice + shared, square - shared * x[0], fma(x[2], x[2], x[2]), x[1]};
    });
    check_compact(repeated, 0.25, 2);
}

TEST_CASE("compact programs: an output that is an input, a constant output, an unused input") {
    const Tape tape = record(3, [](std::span<const Var> x) {
        return std::vector<Var>{x[1], Var(2.0) * Var(3.0) + x[0] * 0.0 + x[0], sin(x[0]) * cos(x[0])};
    });
    check_compact(tape, -1, 1);
}

}  // namespace
}  // namespace tapevm::test
