// Helpers shared by the optimiser suites (test_optimize.cpp, test_optimize_dead_code.cpp):
// tapes built instruction by instruction (nothing folds or merges on the way in), random and
// special points, evaluation of everything a tape shows at them, the check that optimize
// changed none of it, and random hand-built tapes.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <random>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <doctest/doctest.h>

#include "tapevm/reference.hpp"
#include "tapevm/tape.hpp"
#include "test_util.hpp"

namespace tapevm::test::optimize_support {

inline constexpr double not_a_number = std::numeric_limits<double>::quiet_NaN();
inline constexpr double infinity = std::numeric_limits<double>::infinity();

/// Values where folding and identities are most likely to go wrong.
inline constexpr std::array<double, 12> special_constants = {
    0.0, -0.0, 1.0, -1.0, 0.5, 2.0, -2.5, 3.75, 1e300, infinity, -infinity, not_a_number};

/// Builds a tape instruction by instruction: nothing folds or merges on the way in.
class TapeBuilder {
public:
    explicit TapeBuilder(std::uint32_t inputs, std::uint32_t params = 0) {
        parts_.inputs = inputs;
        parts_.params = params;
        for (std::uint32_t i = 0; i < inputs; ++i) parts_.instructions.push_back({Op::Input, i, 0, 0});
        for (std::uint32_t j = 0; j < params; ++j) parts_.instructions.push_back({Op::Param, j, 0, 0});
    }

    std::uint32_t input(std::uint32_t index) const { return index; }
    std::uint32_t param(std::uint32_t index) const { return parts_.inputs + index; }
    std::uint32_t next_slot() const { return static_cast<std::uint32_t>(parts_.instructions.size()); }
    const TapeParts& parts() const { return parts_; }

    /// A Const instruction with a pool entry of its own (duplicates are kept as they are).
    std::uint32_t constant(double value) {
        parts_.constants.push_back(value);
        return push({Op::Const, static_cast<std::uint32_t>(parts_.constants.size() - 1), 0, 0});
    }
    /// Another Const instruction reading pool entry `index`.
    std::uint32_t constant_at_index(std::uint32_t index) { return push({Op::Const, index, 0, 0}); }

    /// `op` on operand slots; the fields the op does not use are left 0.
    std::uint32_t op(Op op, std::uint32_t a, std::uint32_t b = 0, std::uint32_t c = 0) {
        const std::uint32_t operands = arity(op);
        return push({op, a, operands > 1 ? b : 0, operands > 2 ? c : 0});
    }
    std::uint32_t powi(std::uint32_t a, std::int32_t exponent) {
        return push({Op::Powi, a, static_cast<std::uint32_t>(exponent), 0});
    }

    TapeBuilder& output(std::uint32_t slot) {
        parts_.outputs.push_back(slot);
        return *this;
    }
    TapeBuilder& guard(std::uint32_t slot, bool expected) {
        parts_.guards.push_back(Guard{slot, expected ? 1u : 0u});
        return *this;
    }

    Tape tape() const { return Tape(parts_); }

private:
    std::uint32_t push(Instruction instruction) {
        parts_.instructions.push_back(instruction);
        return next_slot() - 1;
    }

    TapeParts parts_;
};

inline std::size_t count_op(const Tape& tape, Op op) {
    return static_cast<std::size_t>(std::count_if(tape.instructions().begin(), tape.instructions().end(),
                                                  [op](const Instruction& ins) { return ins.op == op; }));
}

inline std::uint64_t bits(double value) { return std::bit_cast<std::uint64_t>(value); }

/// A batch of points: inputs [points][n_inputs] and params [points][n_params].
struct Points {
    std::size_t count = 0;
    std::vector<double> inputs;
    std::vector<double> params;

    Batch<double> batch() const { return Batch<double>{count, inputs, params}; }
};

/// Random points, a third of the coordinates special (0, -0, +-inf, NaN, 1, ...).
inline Points random_points(std::mt19937_64& rng, const Tape& tape, std::size_t count) {
    std::uniform_real_distribution<double> ordinary(-3.0, 3.0);
    std::uniform_int_distribution<std::size_t> pick_special(0, special_constants.size() - 1);
    std::bernoulli_distribution is_special(1.0 / 3.0);
    auto draw = [&] { return is_special(rng) ? special_constants[pick_special(rng)] : ordinary(rng); };
    Points points;
    points.count = count;
    points.inputs.resize(count * tape.input_count());
    points.params.resize(count * tape.param_count());
    for (double& x : points.inputs) x = draw();
    for (double& p : points.params) p = draw();
    return points;
}

/// Everything an evaluation of a tape shows at a batch of points.
struct Results {
    std::vector<double> outputs;            // [points][n_outputs]
    std::vector<double> forward_jacobians;  // [points][n_outputs][n_inputs], forward mode
    std::vector<double> reverse_jacobians;  // the same, reverse mode
    std::vector<std::size_t> diverged;
};

inline Results evaluate(const Tape& tape, const Points& points) {
    const reference::Vm vm(tape);
    const std::size_t m = tape.output_count();
    const std::size_t n = tape.input_count();
    Results results;
    results.outputs.resize(points.count * m);
    results.forward_jacobians.resize(points.count * m * n);
    results.reverse_jacobians.resize(points.count * m * n);
    const Report values = vm.forward(points.batch(), std::span<double>(results.outputs));
    const Report forward =
        vm.jacobian(points.batch(), std::span<double>(results.forward_jacobians), JacobianMode::forward);
    const Report reverse =
        vm.jacobian(points.batch(), std::span<double>(results.reverse_jacobians), JacobianMode::reverse);
    CHECK(forward.diverged == values.diverged);
    CHECK(reverse.diverged == values.diverged);
    results.diverged = values.diverged;
    return results;
}

inline std::string describe_difference(std::string_view what, std::span<const double> before,
                                       std::span<const double> after, std::ptrdiff_t index) {
    std::ostringstream text;
    text.precision(17);
    text << what << "[" << index << "]: ";
    const auto k = static_cast<std::size_t>(index);
    if (k < before.size() && k < after.size()) {
        text << before[k] << " before optimize, " << after[k] << " after";
    } else {
        text << "sizes " << before.size() << " and " << after.size();
    }
    return text.str();
}

/// Checks that `after` (the optimised `before`) gives the same outputs, the same forward-mode
/// Jacobians and the same diverged points, every value bit for bit (NaN equal to NaN, signed
/// zeros equal in sign). Reverse mode sums a merged slot's adjoints before multiplying by its
/// partials (CSE, and identities that forward a slot, change the order of the sums), so its
/// Jacobians are compared within 1e-13. With `reverse_skipped`, entries where the unoptimised one
/// is not finite and the optimised one differs are counted there instead of failing (summed in
/// another order, inf - inf can become 0: optimize.hpp documents it, test_optimize.cpp tests it).
inline void check_same_results(const Tape& before, const Tape& after, const Points& points,
                               std::size_t* reverse_skipped = nullptr) {
    INFO("tape before optimize:\n" << before.dump());
    INFO("tape after optimize:\n" << after.dump());
    const Results expected = evaluate(before, points);
    const Results actual = evaluate(after, points);
    CHECK(actual.diverged == expected.diverged);
    const std::ptrdiff_t output = test::first_different_value(expected.outputs, actual.outputs);
    CHECK_MESSAGE(output < 0, describe_difference("outputs", expected.outputs, actual.outputs, output));
    const std::ptrdiff_t forward =
        test::first_different_value(expected.forward_jacobians, actual.forward_jacobians);
    CHECK_MESSAGE(forward < 0, describe_difference("forward-mode Jacobians", expected.forward_jacobians,
                                                   actual.forward_jacobians, forward));
    REQUIRE(actual.reverse_jacobians.size() == expected.reverse_jacobians.size());
    std::ptrdiff_t reverse = -1;
    for (std::size_t k = 0; k < expected.reverse_jacobians.size(); ++k) {
        const double value = expected.reverse_jacobians[k];
        if (reverse_skipped != nullptr && !std::isfinite(value) &&
            !same_value(value, actual.reverse_jacobians[k])) {
            ++*reverse_skipped;
            continue;
        }
        if (reverse < 0 && !test::close(value, actual.reverse_jacobians[k], 1e-13)) {
            reverse = static_cast<std::ptrdiff_t>(k);
        }
    }
    CHECK_MESSAGE(reverse < 0, describe_difference("reverse-mode Jacobians", expected.reverse_jacobians,
                                                   actual.reverse_jacobians, reverse));
}

/// A random hand-built tape: every non-leaf op, constants (specials, duplicated pool
/// entries), repeated instructions (same and swapped operands), exact and inexact identities,
/// selects on constants, guards (duplicated, on constants), outputs anywhere, dead code.
/// Guards expect the outcome at `recording_point` most of the time, so that some points keep
/// to the recorded branches.
inline Tape random_tape(std::mt19937_64& rng, std::span<const double> recording_point,
                        std::span<const double> recording_params) {
    const auto inputs = static_cast<std::uint32_t>(recording_point.size());
    const auto params = static_cast<std::uint32_t>(recording_params.size());
    TapeBuilder builder(inputs, params);
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    auto below = [&](std::size_t n) { return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng); };
    // An operand: mostly a recent slot, so that chains form.
    auto operand = [&] {
        const std::uint32_t slots = builder.next_slot();
        if (slots > 6 && unit(rng) < 0.6) return slots - 1 - static_cast<std::uint32_t>(below(6));
        return static_cast<std::uint32_t>(below(slots));
    };
    std::vector<Op> ops;
    for (std::uint32_t number = 0; number < op_count; ++number) {
        if (!has_flag(static_cast<Op>(number), op_flag::leaf)) ops.push_back(static_cast<Op>(number));
    }
    const std::size_t length = 6 + below(40);
    std::vector<std::uint32_t> non_leaf;
    for (std::size_t k = 0; k < length; ++k) {
        const double choice = unit(rng);
        if (choice < 0.15) {
            if (!builder.parts().constants.empty() && unit(rng) < 0.3) {
                builder.constant_at_index(
                    static_cast<std::uint32_t>(below(builder.parts().constants.size())));
            } else {
                builder.constant(unit(rng) < 0.7 ? special_constants[below(special_constants.size())]
                                                 : std::round(unit(rng) * 8 - 4) / 2);
            }
        } else if (choice < 0.30 && !non_leaf.empty()) {
            // Repeat an earlier instruction, sometimes with its first two operands swapped.
            Instruction ins = builder.parts().instructions[non_leaf[below(non_leaf.size())]];
            if (arity(ins.op) >= 2 && unit(rng) < 0.5) std::swap(ins.a, ins.b);
            non_leaf.push_back(ins.op == Op::Powi ? builder.powi(ins.a, powi_exponent(ins))
                                                  : builder.op(ins.op, ins.a, ins.b, ins.c));
        } else if (choice < 0.42) {
            // An identity, exact or not, or a select on a constant.
            static constexpr std::array<std::pair<Op, double>, 8> patterns = {{{Op::Mul, 1.0},
                                                                               {Op::Div, 1.0},
                                                                               {Op::Add, -0.0},
                                                                               {Op::Sub, 0.0},
                                                                               {Op::Add, 0.0},
                                                                               {Op::Sub, -0.0},
                                                                               {Op::Mul, 0.0},
                                                                               {Op::Select, 0.0}}};
            const auto [op, value] = patterns[below(patterns.size())];
            const std::uint32_t x = operand();
            if (op == Op::Select) {
                const std::uint32_t condition =
                    builder.constant(special_constants[below(special_constants.size())]);
                non_leaf.push_back(builder.op(Op::Select, condition, x, operand()));
            } else {
                const std::uint32_t c = builder.constant(value);
                non_leaf.push_back(unit(rng) < 0.5 ? builder.op(op, x, c) : builder.op(op, c, x));
            }
        } else {
            const Op op = ops[below(ops.size())];
            if (op == Op::Powi) {
                non_leaf.push_back(builder.powi(operand(), static_cast<std::int32_t>(below(9)) - 3));
            } else {
                const std::uint32_t a = operand();
                const std::uint32_t b = operand();
                non_leaf.push_back(builder.op(op, a, b, operand()));
            }
        }
    }
    // Outputs: 1 to 3 slots, mostly late ones; a few earlier ones stay dead.
    const std::size_t outputs = 1 + below(3);
    for (std::size_t k = 0; k < outputs; ++k) builder.output(operand());

    // Guards: on comparisons mostly, expecting the outcome at the recording point.
    auto value_at_recording_point = [&](std::uint32_t slot) {
        TapeParts probe = builder.parts();
        probe.outputs = {slot};
        probe.guards.clear();
        return test::forward(reference::Vm(Tape(std::move(probe))), recording_point, recording_params)[0];
    };
    const std::size_t guards = below(4);
    for (std::size_t k = 0; k < guards; ++k) {
        std::uint32_t slot = operand();
        if (unit(rng) < 0.7) {
            const Op comparison = static_cast<Op>(static_cast<std::uint32_t>(Op::Lt) + below(6));
            const std::uint32_t a = operand();
            slot = builder.op(comparison, a, operand());
        }
        const bool outcome = value_at_recording_point(slot) != 0.0;
        builder.guard(slot, unit(rng) < 0.9 ? outcome : !outcome);
        if (unit(rng) < 0.3) builder.guard(slot, builder.parts().guards.back().expected != 0);  // duplicate
    }
    return builder.tape();
}

/// Points near `centre` (so guards mostly hold) mixed with random and special ones.
inline Points points_around(std::mt19937_64& rng, const Tape& tape, std::span<const double> centre,
                            std::span<const double> centre_params, std::size_t count) {
    Points points = random_points(rng, tape, count);
    std::normal_distribution<double> nudge(0.0, 0.01);
    for (std::size_t point = 0; point < count / 2; ++point) {
        for (std::size_t i = 0; i < centre.size(); ++i)
            points.inputs[point * centre.size() + i] = centre[i] + nudge(rng);
        for (std::size_t j = 0; j < centre_params.size(); ++j) {
            points.params[point * centre_params.size() + j] = centre_params[j];
        }
    }
    return points;
}

}  // namespace tapevm::test::optimize_support
