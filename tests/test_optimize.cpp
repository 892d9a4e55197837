// The optimiser (optimize.hpp) on hand-built tapes, where nothing was folded or merged on the
// way in: constant folding bit for bit equal to the reference VM, only the identities exact for
// every input, common-subexpression elimination (operands reordered only for commutative ops),
// dead-code elimination with a compacted constant pool, guard merging and dropping,
// idempotence, and on random tapes: values, Jacobians (forward and reverse mode) and the
// diverged points unchanged.
#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <limits>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <doctest/doctest.h>

#include "tapevm/examples.hpp"
#include "tapevm/optimize.hpp"
#include "tapevm/var.hpp"
#include "test_util.hpp"

using namespace tapevm;
using test::same_value;

namespace {

constexpr double not_a_number = std::numeric_limits<double>::quiet_NaN();
constexpr double infinity = std::numeric_limits<double>::infinity();

/// Values where folding and identities are most likely to go wrong.
constexpr std::array<double, 12> special_constants = {0.0,  -0.0, 1.0,   -1.0,     0.5,       2.0,
                                                      -2.5, 3.75, 1e300, infinity, -infinity, not_a_number};

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

std::size_t count_op(const Tape& tape, Op op) {
    return static_cast<std::size_t>(std::count_if(tape.instructions().begin(), tape.instructions().end(),
                                                  [op](const Instruction& ins) { return ins.op == op; }));
}

std::uint64_t bits(double value) { return std::bit_cast<std::uint64_t>(value); }

/// A batch of points: inputs [points][n_inputs] and params [points][n_params].
struct Points {
    std::size_t count = 0;
    std::vector<double> inputs;
    std::vector<double> params;

    Batch<double> batch() const { return Batch<double>{count, inputs, params}; }
};

/// Random points, a third of the coordinates special (0, -0, +-inf, NaN, 1, ...).
Points random_points(std::mt19937_64& rng, const Tape& tape, std::size_t count) {
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

Results evaluate(const Tape& tape, const Points& points) {
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

std::string describe_difference(std::string_view what, std::span<const double> before,
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
/// another order, inf - inf can become 0: see the known-issue test below).
void check_same_results(const Tape& before, const Tape& after, const Points& points,
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

/// The value of a tape with no inputs and one output, unoptimised, by the reference VM.
double value_of_closed_tape(const Tape& tape) {
    double value = 0;
    reference::Vm(tape).forward(single_point<double>({}), std::span<double>(&value, 1));
    return value;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Constant folding

TEST_CASE("optimize: folds every op on constants to the reference VM's value, bit for bit") {
    std::size_t folded = 0;
    auto check_folds = [&](const TapeBuilder& builder, const std::string& what) {
        INFO(what);
        const Tape tape = builder.tape();
        const double expected = value_of_closed_tape(tape);
        const Tape optimized_tape = optimized(tape);
        REQUIRE(optimized_tape.instruction_count() == 1);
        CHECK(optimized_tape.instructions()[0] == Instruction{Op::Const, 0, 0, 0});
        REQUIRE(optimized_tape.constant_count() == 1);
        CHECK(bits(optimized_tape.constants()[0]) == bits(expected));
        CHECK(optimized_tape.outputs()[0] == 0);
        CHECK(bits(value_of_closed_tape(optimized_tape)) == bits(expected));
        ++folded;
    };
    auto name = [](Op op, std::initializer_list<double> operands) {
        std::ostringstream text;
        text << info(op).name << "(";
        const char* separator = "";
        for (double v : operands) {
            text << separator << v;
            separator = ", ";
        }
        return text.str() + ")";
    };
    for (std::uint32_t number = 0; number < op_count; ++number) {
        const Op op = static_cast<Op>(number);
        if (has_flag(op, op_flag::leaf)) continue;
        for (double a : special_constants) {
            if (op == Op::Powi) {
                for (std::int32_t exponent : {-3, -1, 0, 1, 2, 5}) {
                    TapeBuilder builder(0);
                    builder.output(builder.powi(builder.constant(a), exponent));
                    check_folds(builder, name(op, {a}) + " n=" + std::to_string(exponent));
                }
                continue;
            }
            if (arity(op) == 1) {
                TapeBuilder builder(0);
                builder.output(builder.op(op, builder.constant(a)));
                check_folds(builder, name(op, {a}));
                continue;
            }
            for (double b : special_constants) {
                if (arity(op) == 2) {
                    TapeBuilder builder(0);
                    builder.output(builder.op(op, builder.constant(a), builder.constant(b)));
                    check_folds(builder, name(op, {a, b}));
                    continue;
                }
                for (double c : special_constants) {
                    TapeBuilder builder(0);
                    const std::uint32_t slot_a = builder.constant(a);
                    const std::uint32_t slot_b = builder.constant(b);
                    builder.output(builder.op(op, slot_a, slot_b, builder.constant(c)));
                    check_folds(builder, name(op, {a, b, c}));
                }
            }
        }
    }
    // 30 unary ops x 12, Powi 6 x 12, 16 binary ops x 144, Select and Fma x 1728.
    CHECK(folded == 30 * 12 + 6 * 12 + 16 * 144 + 2 * 1728);
}

TEST_CASE("optimize: folded comparisons of constants give 1 or 0, NaN compares false except !=") {
    struct Case {
        Op op;
        double a, b, expected;
    };
    const Case cases[] = {
        {Op::Lt, 1, 2, 1},
        {Op::Lt, 2, 2, 0},
        {Op::Le, 2, 2, 1},
        {Op::Gt, -0.0, 0.0, 0},
        {Op::Ge, -0.0, 0.0, 1},
        {Op::Eq, -0.0, 0.0, 1},
        {Op::Ne, -0.0, 0.0, 0},
        {Op::Eq, not_a_number, not_a_number, 0},
        {Op::Ne, not_a_number, 1, 1},
        {Op::Lt, not_a_number, infinity, 0},
        {Op::Ge, infinity, infinity, 1},
        {Op::Gt, -infinity, not_a_number, 0},
    };
    for (const Case& c : cases) {
        INFO(info(c.op).name << "(" << c.a << ", " << c.b << ")");
        TapeBuilder builder(0);
        builder.output(builder.op(c.op, builder.constant(c.a), builder.constant(c.b)));
        const Tape tape = optimized(builder.tape());
        REQUIRE(tape.instruction_count() == 1);
        CHECK(bits(tape.constants()[0]) == bits(c.expected));
    }
}

TEST_CASE("optimize: folding runs through chains of constants and stops at variables") {
    // out0 = x + sin(2) * 3, out1 = (x * 0.5) * (4 - 4); every constant part folds.
    TapeBuilder builder(1);
    const std::uint32_t x = builder.input(0);
    const std::uint32_t sine = builder.op(Op::Sin, builder.constant(2.0));
    const std::uint32_t scaled = builder.op(Op::Mul, sine, builder.constant(3.0));
    builder.output(builder.op(Op::Add, x, scaled));
    const std::uint32_t half = builder.op(Op::Mul, x, builder.constant(0.5));
    const std::uint32_t four = builder.constant(4.0);
    builder.output(builder.op(Op::Mul, half, builder.op(Op::Sub, four, builder.constant(4.0))));
    const Tape before = builder.tape();
    const Tape after = optimized(before);
    // input, sin(2)*3, add, 0.5, mul, +0, mul
    CHECK(after.instruction_count() == 7);
    CHECK(count_op(after, Op::Const) == 3);
    CHECK(count_op(after, Op::Sin) == 0);
    CHECK(count_op(after, Op::Sub) == 0);
    REQUIRE(after.constant_count() == 3);
    CHECK(bits(after.constants()[0]) == bits(std::sin(2.0) * 3.0));
    CHECK(bits(after.constants()[1]) == bits(0.5));
    CHECK(bits(after.constants()[2]) == bits(0.0));
    std::mt19937_64 rng(11);
    check_same_results(before, after, random_points(rng, before, 32));
}

// ---------------------------------------------------------------------------------------------
// Identities

TEST_CASE("optimize: applies the identities exact for every input") {
    struct Identity {
        const char* name;
        Op op;
        double constant;
        bool constant_first;
    };
    const Identity identities[] = {
        {"x*1", Op::Mul, 1.0, false},     {"1*x", Op::Mul, 1.0, true},     {"x/1", Op::Div, 1.0, false},
        {"x+(-0)", Op::Add, -0.0, false}, {"(-0)+x", Op::Add, -0.0, true}, {"x-(+0)", Op::Sub, 0.0, false},
    };
    std::mt19937_64 rng(12);
    for (const Identity& identity : identities) {
        INFO(identity.name);
        TapeBuilder builder(1);
        const std::uint32_t x = builder.input(0);
        const std::uint32_t c = builder.constant(identity.constant);
        builder.output(identity.constant_first ? builder.op(identity.op, c, x)
                                               : builder.op(identity.op, x, c));
        const Tape before = builder.tape();
        const Tape after = optimized(before);
        CHECK(after.instruction_count() == 1);  // the input alone
        CHECK(after.constant_count() == 0);
        REQUIRE(after.output_count() == 1);
        CHECK(after.outputs()[0] == x);
        // The identity is exact: the same result at every special value, and in general.
        Points points;
        points.count = special_constants.size();
        points.inputs.assign(special_constants.begin(), special_constants.end());
        check_same_results(before, after, points);
        check_same_results(before, after, random_points(rng, before, 16));
    }
}

TEST_CASE("optimize: a select on a constant condition becomes the chosen operand (NaN counts true)") {
    const std::pair<double, bool> conditions[] = {{1.0, true},  {-2.0, true},  {infinity, true},
                                                  {0.0, false}, {-0.0, false}, {not_a_number, true}};
    std::mt19937_64 rng(13);
    for (const auto& [value, chooses_first] : conditions) {
        const double condition = value;  // (clang 14 cannot capture a structured binding in INFO)
        const bool takes_first = chooses_first;
        INFO("condition " << condition);
        TapeBuilder builder(2);
        builder.output(
            builder.op(Op::Select, builder.constant(condition), builder.input(0), builder.input(1)));
        const Tape before = builder.tape();
        const Tape after = optimized(before);
        CHECK(after.instruction_count() == 2);
        CHECK(count_op(after, Op::Select) == 0);
        CHECK(after.outputs()[0] == (takes_first ? 0u : 1u));
        check_same_results(before, after, random_points(rng, before, 32));
    }
    // A variable condition stays, whatever the operands.
    TapeBuilder builder(2);
    builder.output(builder.op(Op::Select, builder.input(0), builder.input(1), builder.constant(1.0)));
    CHECK(count_op(optimized(builder.tape()), Op::Select) == 1);
}

TEST_CASE("optimize: keeps the identities that are not exact for every input") {
    struct Inexact {
        const char* name;
        Op op;
        double constant;  // NaN: the other operand is x itself
        bool constant_first;
        double witness;     // an x where the simplification is wrong...
        double simplified;  // ...giving this instead of the true result
    };
    const Inexact cases[] = {
        {"x+0 is not x (-0 + 0 is +0)", Op::Add, 0.0, false, -0.0, -0.0},
        {"0+x is not x (0 + -0 is +0)", Op::Add, 0.0, true, -0.0, -0.0},
        {"x-(-0) is not x (-0 - -0 is +0)", Op::Sub, -0.0, false, -0.0, -0.0},
        {"0-x is not -x (0 - 0 is +0)", Op::Sub, 0.0, true, 0.0, -0.0},
        {"x*0 is not 0 (inf * 0 is NaN)", Op::Mul, 0.0, false, infinity, 0.0},
        {"0*x is not 0 (0 * -1 is -0)", Op::Mul, 0.0, true, -1.0, 0.0},
        {"x/x is not 1 (inf / inf is NaN)", Op::Div, not_a_number, false, infinity, 1.0},
        {"x-x is not 0 (inf - inf is NaN)", Op::Sub, not_a_number, false, infinity, 0.0},
        {"1/x is not x/1", Op::Div, 1.0, true, 2.0, 2.0},
    };
    for (const Inexact& c : cases) {
        INFO(c.name);
        TapeBuilder builder(1);
        const std::uint32_t x = builder.input(0);
        const std::uint32_t other = std::isnan(c.constant) ? x : builder.constant(c.constant);
        builder.output(c.constant_first ? builder.op(c.op, other, x) : builder.op(c.op, x, other));
        const Tape before = builder.tape();
        const Tape after = optimized(before);
        CHECK(count_op(after, c.op) == 1);
        CHECK(after.outputs()[0] != x);
        const std::vector<double> at = {c.witness};
        const double result = test::forward(reference::Vm(after), at)[0];
        CHECK(same_value(result, test::forward(reference::Vm(before), at)[0]));
        CHECK_FALSE(same_value(result, c.simplified));
    }
}

// ---------------------------------------------------------------------------------------------
// Common-subexpression elimination

TEST_CASE("optimize: merges the same op on the same operands") {
    TapeBuilder builder(2);
    const std::uint32_t x = builder.input(0);
    const std::uint32_t y = builder.input(1);
    const std::uint32_t sum1 = builder.op(Op::Add, x, y);
    const std::uint32_t sum2 = builder.op(Op::Add, x, y);
    const std::uint32_t product1 = builder.op(Op::Mul, sum1, builder.op(Op::Sin, x));
    const std::uint32_t product2 = builder.op(Op::Mul, sum2, builder.op(Op::Sin, x));
    builder.output(product1).output(product2).output(builder.op(Op::Sin, x));
    const Tape before = builder.tape();
    const Tape after = optimized(before);
    CHECK(count_op(after, Op::Add) == 1);
    CHECK(count_op(after, Op::Sin) == 1);
    CHECK(count_op(after, Op::Mul) == 1);
    CHECK(after.instruction_count() == 5);
    REQUIRE(after.output_count() == 3);
    CHECK(after.outputs()[0] == after.outputs()[1]);
    std::mt19937_64 rng(14);
    check_same_results(before, after, random_points(rng, before, 32));
}

TEST_CASE("optimize: merges Powi only with the same exponent") {
    TapeBuilder builder(1);
    const std::uint32_t x = builder.input(0);
    builder.output(builder.powi(x, 2)).output(builder.powi(x, 2)).output(builder.powi(x, 3));
    builder.output(builder.powi(x, -2));
    const Tape before = builder.tape();
    const Tape after = optimized(before);
    CHECK(count_op(after, Op::Powi) == 3);
    CHECK(after.outputs()[0] == after.outputs()[1]);
    CHECK(after.outputs()[0] != after.outputs()[2]);
    CHECK(after.outputs()[0] != after.outputs()[3]);
    CHECK(after.outputs()[2] != after.outputs()[3]);
    std::mt19937_64 rng(15);
    check_same_results(before, after, random_points(rng, before, 32));
}

TEST_CASE("optimize: merges constants with the same bits only") {
    TapeBuilder builder(1);
    const std::uint32_t x = builder.input(0);
    const std::uint32_t two = builder.constant(2.0);
    const std::uint32_t two_again = builder.constant(2.0);
    const std::uint32_t two_by_index = builder.constant_at_index(0);
    const std::uint32_t zero = builder.constant(0.0);
    const std::uint32_t negative_zero = builder.constant(-0.0);
    const std::uint32_t nan1 = builder.constant(not_a_number);
    const std::uint32_t nan2 = builder.constant(not_a_number);
    for (std::uint32_t c : {two, two_again, two_by_index, zero, negative_zero, nan1, nan2}) {
        builder.output(builder.op(Op::Add, x, c));
    }
    const Tape before = builder.tape();
    const Tape after = optimized(before);
    // 2, +0 and one NaN; -0 went with x+(-0), the identity.
    REQUIRE(after.constant_count() == 3);
    CHECK(after.constant_count() == count_op(after, Op::Const));
    CHECK(bits(after.constants()[0]) == bits(2.0));
    CHECK(bits(after.constants()[1]) == bits(0.0));
    CHECK(std::isnan(after.constants()[2]));
    // x+2 three times (merged), x+0 (kept: not x+(-0)), x+NaN twice (merged).
    CHECK(count_op(after, Op::Add) == 3);
    CHECK(after.outputs()[0] == after.outputs()[1]);
    CHECK(after.outputs()[0] == after.outputs()[2]);
    CHECK(after.outputs()[4] == x);
    CHECK(after.outputs()[5] == after.outputs()[6]);
    std::mt19937_64 rng(16);
    check_same_results(before, after, random_points(rng, before, 32));
}

TEST_CASE("optimize: commutative ops merge with swapped operands, the others do not") {
    const std::set<Op> commutative = {Op::Add, Op::Mul, Op::Hypot, Op::Max, Op::Min, Op::Eq, Op::Ne, Op::Fma};
    std::set<Op> flagged;
    for (std::uint32_t number = 0; number < op_count; ++number) {
        if (has_flag(static_cast<Op>(number), op_flag::commutative)) flagged.insert(static_cast<Op>(number));
    }
    CHECK(flagged == commutative);

    std::mt19937_64 rng(17);
    std::size_t non_commutative_seen = 0;
    for (std::uint32_t number = 0; number < op_count; ++number) {
        const Op op = static_cast<Op>(number);
        if (arity(op) != 2) continue;
        INFO(info(op).name);
        TapeBuilder builder(2);
        const std::uint32_t x = builder.input(0);
        const std::uint32_t y = builder.input(1);
        builder.output(builder.op(op, x, y)).output(builder.op(op, y, x));
        const Tape before = builder.tape();
        const Tape after = optimized(before);
        if (commutative.count(op)) {
            CHECK(count_op(after, op) == 1);
            CHECK(after.outputs()[0] == after.outputs()[1]);
        } else {
            ++non_commutative_seen;
            CHECK(count_op(after, op) == 2);
            CHECK(after.outputs()[0] != after.outputs()[1]);
        }
        // Ties of signed zeros and NaNs (Max/Min) included.
        Points points;
        for (double a : special_constants) {
            for (double b : special_constants) {
                points.inputs.insert(points.inputs.end(), {a, b});
                ++points.count;
            }
        }
        check_same_results(before, after, points);
        check_same_results(before, after, random_points(rng, before, 32));
    }
    CHECK(non_commutative_seen == 9);  // Sub Div Rem Powf Atan2 Lt Le Gt Ge
}

TEST_CASE("optimize: ops flagged commutative have symmetric values and partials, NaN pairs included") {
    // CSE orders a commutative op's operands and merges op(x, y) with op(y, x): only sound when
    // the value and every partial are symmetric (op_table.py's COMMUTATIVE). Max and Min route a
    // (NaN, NaN) adjoint to their second operand, so merging changes derivatives there.
    for (std::uint32_t number = 0; number < op_count; ++number) {
        const Op op = static_cast<Op>(number);
        if (!has_flag(op, op_flag::commutative)) continue;
        const reference::Vm vm(test::single_op_tape(op));
        const std::uint32_t n = arity(op);
        for (double a : special_constants) {
            for (double b : special_constants) {
                const double c = 1.25;
                INFO(info(op).name << "(" << a << ", " << b << (n == 3 ? ", 1.25" : "") << ")");
                const std::vector<double> x = {a, b, c};
                const std::vector<double> swapped = {b, a, c};
                const auto point = std::span<const double>(x).first(n);
                const auto swapped_point = std::span<const double>(swapped).first(n);
                CHECK(same_value(test::forward(vm, point)[0], test::forward(vm, swapped_point)[0]));
                const auto partials = test::jacobian(vm, point, JacobianMode::reverse);
                const auto swapped_partials = test::jacobian(vm, swapped_point, JacobianMode::reverse);
                CHECK(same_value(partials[0], swapped_partials[1]));
                CHECK(same_value(partials[1], swapped_partials[0]));
                if (n == 3) CHECK(same_value(partials[2], swapped_partials[2]));
            }
        }
    }
}

TEST_CASE("optimize: max(x, y) and max(y, x) merged keep their Jacobian at (NaN, NaN)") {
    for (const Op op : {Op::Max, Op::Min}) {
        INFO(info(op).name);
        TapeBuilder builder(2);
        builder.output(builder.op(op, builder.input(0), builder.input(1)));
        builder.output(builder.op(op, builder.input(1), builder.input(0)));
        const Tape before = builder.tape();
        const Tape after = optimized(before);
        const std::vector<double> nans = {not_a_number, not_a_number};
        for (const JacobianMode mode : {JacobianMode::forward, JacobianMode::reverse}) {
            const auto expected = test::jacobian(reference::Vm(before), nans, mode);
            const auto actual = test::jacobian(reference::Vm(after), nans, mode);
            CHECK_MESSAGE(test::first_different_value(expected, actual) < 0,
                          "Jacobian " << test::show(expected) << " before optimize, " << test::show(actual)
                                      << " after");
        }
    }
}

TEST_CASE("optimize: Fma merges with its first two operands swapped, not the third") {
    TapeBuilder builder(3);
    const std::uint32_t x = builder.input(0);
    const std::uint32_t y = builder.input(1);
    const std::uint32_t z = builder.input(2);
    builder.output(builder.op(Op::Fma, x, y, z)).output(builder.op(Op::Fma, y, x, z));
    builder.output(builder.op(Op::Fma, x, z, y)).output(builder.op(Op::Fma, z, y, x));
    const Tape before = builder.tape();
    const Tape after = optimized(before);
    CHECK(count_op(after, Op::Fma) == 3);
    CHECK(after.outputs()[0] == after.outputs()[1]);
    CHECK(after.outputs()[0] != after.outputs()[2]);
    CHECK(after.outputs()[0] != after.outputs()[3]);
    CHECK(after.outputs()[2] != after.outputs()[3]);
    std::mt19937_64 rng(18);
    check_same_results(before, after, random_points(rng, before, 64));
}

// ---------------------------------------------------------------------------------------------
// Dead-code elimination

TEST_CASE("optimize: removes unused instructions and constants, keeps every input and parameter") {
    TapeBuilder builder(3, 2);
    const std::uint32_t x0 = builder.input(0);
    const std::uint32_t x2 = builder.input(2);
    const std::uint32_t p1 = builder.param(1);
    builder.op(Op::Exp, builder.constant(7.0));  // dead, and its constant
    builder.op(Op::Sin, x2);                     // dead
    const std::uint32_t c = builder.constant(2.5);
    builder.constant(-4.0);  // dead
    const std::uint32_t scaled = builder.op(Op::Mul, x0, c);
    builder.op(Op::Add, scaled, builder.constant(9.0));  // dead
    const std::uint32_t shifted = builder.op(Op::Sub, scaled, p1);
    builder.op(Op::Cos, shifted);  // dead
    builder.output(shifted).output(x2);
    const Tape before = builder.tape();
    const Tape after = optimized(before);

    CHECK(after.input_count() == 3);
    CHECK(after.param_count() == 2);
    REQUIRE(after.instruction_count() == 8);  // 3 inputs, 2 params, 2.5, mul, sub
    for (std::uint32_t i = 0; i < 3; ++i) CHECK(after.instructions()[i] == Instruction{Op::Input, i, 0, 0});
    for (std::uint32_t j = 0; j < 2; ++j)
        CHECK(after.instructions()[3 + j] == Instruction{Op::Param, j, 0, 0});
    CHECK(after.instructions()[5] == Instruction{Op::Const, 0, 0, 0});
    CHECK(after.instructions()[6] == Instruction{Op::Mul, 0, 5, 0});
    CHECK(after.instructions()[7] == Instruction{Op::Sub, 6, 4, 0});
    REQUIRE(after.constant_count() == 1);
    CHECK(after.constants()[0] == 2.5);
    CHECK(after.outputs()[0] == 7);
    CHECK(after.outputs()[1] == 2);
    CHECK(after.guard_count() == 0);
    std::mt19937_64 rng(19);
    check_same_results(before, after, random_points(rng, before, 32));
}

TEST_CASE("optimize: the constant pool is compacted in the order the constants are used") {
    TapeBuilder builder(1);
    const std::uint32_t x = builder.input(0);
    const std::uint32_t unused = builder.constant(1.5);
    const std::uint32_t three = builder.constant(3.0);
    const std::uint32_t five = builder.constant(5.0);
    (void)unused;
    builder.output(builder.op(Op::Mul, builder.op(Op::Add, x, five), three));
    const Tape after = optimized(builder.tape());
    REQUIRE(after.constant_count() == 2);
    CHECK(after.constants()[0] == 3.0);
    CHECK(after.constants()[1] == 5.0);
    for (const Instruction& ins : after.instructions()) {
        if (ins.op == Op::Const) CHECK(ins.a < after.constant_count());
    }
}

TEST_CASE("optimize: a tape without outputs keeps only its inputs and parameters") {
    TapeBuilder builder(2, 1);
    builder.op(Op::Add, builder.input(0), builder.op(Op::Tanh, builder.param(0)));
    builder.constant(1.0);
    const Tape after = optimized(builder.tape());
    CHECK(after.instruction_count() == 3);
    CHECK(after.constant_count() == 0);
    CHECK(after.input_count() == 2);
    CHECK(after.param_count() == 1);
}

TEST_CASE("optimize: outputs and guards keep what they need alive") {
    // The guard's comparison uses a value no output needs: it must stay, with its operands.
    TapeBuilder builder(2);
    const std::uint32_t x = builder.input(0);
    const std::uint32_t y = builder.input(1);
    const std::uint32_t radius = builder.op(Op::Hypot, x, y);
    const std::uint32_t inside = builder.op(Op::Lt, radius, builder.constant(1.0));
    builder.guard(inside, true);
    builder.output(builder.op(Op::Mul, x, builder.constant(3.0)));
    const Tape before = builder.tape();
    const Tape after = optimized(before);
    CHECK(count_op(after, Op::Hypot) == 1);
    CHECK(count_op(after, Op::Lt) == 1);
    REQUIRE(after.guard_count() == 1);
    const Instruction& guarded = after.instructions()[after.guards()[0].slot];
    CHECK(guarded.op == Op::Lt);
    CHECK(after.instructions()[guarded.a].op == Op::Hypot);
    CHECK(after.guards()[0].expected == 1);
    std::mt19937_64 rng(20);
    Points points = random_points(rng, before, 64);
    const Results results = evaluate(after, points);
    CHECK_FALSE(results.diverged.empty());
    CHECK(results.diverged.size() < points.count);
    check_same_results(before, after, points);
}

// ---------------------------------------------------------------------------------------------
// Guards

TEST_CASE("optimize: duplicate guards merge, including guards on merged comparisons") {
    TapeBuilder builder(2);
    const std::uint32_t x = builder.input(0);
    const std::uint32_t y = builder.input(1);
    const std::uint32_t less1 = builder.op(Op::Lt, x, y);
    const std::uint32_t less2 = builder.op(Op::Lt, x, y);
    const std::uint32_t equal1 = builder.op(Op::Eq, x, y);
    const std::uint32_t equal2 = builder.op(Op::Eq, y, x);
    builder.guard(less1, true)
        .guard(less1, true)
        .guard(less2, true)
        .guard(equal1, false)
        .guard(equal2, false);
    builder.output(builder.op(Op::Sub, x, y));
    const Tape before = builder.tape();
    const Tape after = optimized(before);
    REQUIRE(after.guard_count() == 2);
    CHECK(after.instructions()[after.guards()[0].slot].op == Op::Lt);
    CHECK(after.guards()[0].expected == 1);
    CHECK(after.instructions()[after.guards()[1].slot].op == Op::Eq);
    CHECK(after.guards()[1].expected == 0);
    std::mt19937_64 rng(21);
    check_same_results(before, after, random_points(rng, before, 64));
}

TEST_CASE("optimize: guards with opposite expectations both stay: every point diverges") {
    TapeBuilder builder(2);
    const std::uint32_t less = builder.op(Op::Lt, builder.input(0), builder.input(1));
    builder.guard(less, true).guard(less, false).output(builder.input(0));
    const Tape before = builder.tape();
    const Tape after = optimized(before);
    CHECK(after.guard_count() == 2);
    std::mt19937_64 rng(22);
    const Points points = random_points(rng, before, 16);
    CHECK(evaluate(after, points).diverged.size() == points.count);
    check_same_results(before, after, points);
}

TEST_CASE("optimize: a guard on a constant that always holds is dropped, one that always fails stays") {
    struct Case {
        double constant;
        bool expected;
        bool holds;
    };
    const Case cases[] = {{1.0, true, true},   {-3.0, true, true},         {0.0, false, true},
                          {-0.0, false, true}, {not_a_number, true, true}, {0.0, true, false},
                          {-0.0, true, false}, {2.0, false, false},        {not_a_number, false, false}};
    std::mt19937_64 rng(23);
    for (const Case& c : cases) {
        INFO("guard on " << c.constant << " expecting " << c.expected);
        TapeBuilder builder(1);
        builder.guard(builder.constant(c.constant), c.expected);
        builder.output(builder.op(Op::Sin, builder.input(0)));
        const Tape before = builder.tape();
        const Tape after = optimized(before);
        const Points points = random_points(rng, before, 16);
        if (c.holds) {
            CHECK(after.guard_count() == 0);
            CHECK(after.constant_count() == 0);
            CHECK(evaluate(after, points).diverged.empty());
        } else {
            REQUIRE(after.guard_count() == 1);
            const Instruction& guarded = after.instructions()[after.guards()[0].slot];
            CHECK(guarded.op == Op::Const);
            CHECK(evaluate(after, points).diverged.size() == points.count);
        }
        check_same_results(before, after, points);
    }
    // A comparison of constants folds first; the guard then holds (dropped) or fails (kept).
    TapeBuilder builder(1);
    const std::uint32_t one = builder.constant(1.0);
    const std::uint32_t two = builder.constant(2.0);
    builder.guard(builder.op(Op::Lt, one, two), true).guard(builder.op(Op::Gt, one, two), false);
    builder.guard(builder.op(Op::Ge, one, two), true);  // always fails
    builder.output(builder.input(0));
    const Tape after = optimized(builder.tape());
    REQUIRE(after.guard_count() == 1);
    CHECK(after.instructions()[after.guards()[0].slot].op == Op::Const);
    CHECK(after.constants()[after.instructions()[after.guards()[0].slot].a] == 0.0);
    CHECK(after.guards()[0].expected == 1);
}

TEST_CASE("optimize: guards point at the right comparisons after slots move") {
    // Dead code, merged constants and folded instructions ahead of the guarded comparisons move
    // them to new slots; diverged points must not change.
    TapeBuilder builder(3, 1);
    const std::uint32_t x = builder.input(0);
    const std::uint32_t y = builder.input(1);
    const std::uint32_t z = builder.input(2);
    const std::uint32_t p = builder.param(0);
    for (int k = 0; k < 5; ++k) builder.op(Op::Exp, builder.op(Op::Add, x, builder.constant(k)));  // dead
    const std::uint32_t folded = builder.op(Op::Mul, builder.constant(0.5), builder.constant(2.0));
    const std::uint32_t scaled = builder.op(Op::Mul, y, folded);  // y * 1 -> y
    const std::uint32_t gt = builder.op(Op::Gt, x, scaled);
    builder.op(Op::Sin, z);  // dead
    const std::uint32_t ne = builder.op(Op::Ne, builder.op(Op::Floor, z), p);
    const std::uint32_t ge = builder.op(Op::Ge, builder.op(Op::Hypot, x, z), builder.constant(1.0));
    builder.guard(gt, true).guard(ne, true).guard(ge, false);
    builder.output(builder.op(Op::Select, gt, x, y)).output(builder.op(Op::Add, z, p));
    const Tape before = builder.tape();
    const Tape after = optimized(before);
    REQUIRE(after.guard_count() == 3);
    CHECK(after.instruction_count() < before.instruction_count());
    const Instruction& after_gt = after.instructions()[after.guards()[0].slot];
    CHECK(after_gt == Instruction{Op::Gt, 0, 1, 0});
    CHECK(after.instructions()[after.guards()[1].slot].op == Op::Ne);
    CHECK(after.instructions()[after.guards()[2].slot].op == Op::Ge);
    std::mt19937_64 rng(24);
    // Mostly ordinary points, so that both diverging and agreeing points occur.
    Points points;
    points.count = 200;
    std::uniform_real_distribution<double> coordinate(-2.0, 2.0);
    for (std::size_t k = 0; k < points.count * 3; ++k) points.inputs.push_back(coordinate(rng));
    for (std::size_t k = 0; k < points.count; ++k) points.params.push_back(std::floor(coordinate(rng)));
    const Results results = evaluate(before, points);
    CHECK(results.diverged.size() > 10);
    CHECK(results.diverged.size() < 190);
    check_same_results(before, after, points);
    check_same_results(before, after, random_points(rng, before, 64));
}

// ---------------------------------------------------------------------------------------------
// Known issues: optimize.hpp and tape.hpp promise that nothing changes, "derivatives ... NaN and
// signed zeros included", and the reference VM evaluates in float too. These tests hold the
// library to that promise; they are marked may_fail until the promise or the code changes.

TEST_CASE("optimize: reverse-mode Jacobians are unchanged where CSE merges a slot" * doctest::may_fail()) {
    // Reverse mode adds a merged slot's adjoints before multiplying by its partial: sqrt(x) -
    // sqrt(x) at x = 0 gives inf*1 + inf*(-1) = NaN unoptimised but (1 - 1)*inf -> 0 optimised,
    // and (x/2)*1e308 + (x/2)*1e308 gives 1e308 unoptimised but inf optimised. Forward mode
    // gives NaN and 1e308 both times, so after optimize forward and reverse mode disagree.
    {
        TapeBuilder builder(1);
        const std::uint32_t root1 = builder.op(Op::Sqrt, builder.input(0));
        const std::uint32_t root2 = builder.op(Op::Sqrt, builder.input(0));
        builder.output(builder.op(Op::Sub, root1, root2));
        const Tape before = builder.tape();
        const Tape after = optimized(before);
        REQUIRE(count_op(after, Op::Sqrt) == 1);
        const std::vector<double> zero = {0.0};
        const double unoptimised = test::jacobian(reference::Vm(before), zero, JacobianMode::reverse)[0];
        const double optimised = test::jacobian(reference::Vm(after), zero, JacobianMode::reverse)[0];
        CHECK(std::isnan(test::jacobian(reference::Vm(after), zero, JacobianMode::forward)[0]));
        CHECK(std::isnan(unoptimised));
        CHECK_MESSAGE(same_value(unoptimised, optimised),
                      "d/dx (sqrt(x) - sqrt(x)) at 0, reverse mode: " << unoptimised << " before, "
                                                                      << optimised << " after optimize");
    }
    {
        TapeBuilder builder(1);
        const std::uint32_t half1 = builder.op(Op::Mul, builder.input(0), builder.constant(0.5));
        const std::uint32_t half2 = builder.op(Op::Mul, builder.input(0), builder.constant(0.5));
        const std::uint32_t huge = builder.constant(1e308);
        builder.output(
            builder.op(Op::Add, builder.op(Op::Mul, half1, huge), builder.op(Op::Mul, half2, huge)));
        const Tape before = builder.tape();
        const Tape after = optimized(before);
        const std::vector<double> one = {1.0};
        const double unoptimised = test::jacobian(reference::Vm(before), one, JacobianMode::reverse)[0];
        const double optimised = test::jacobian(reference::Vm(after), one, JacobianMode::reverse)[0];
        CHECK(unoptimised == 1e308);
        CHECK(test::jacobian(reference::Vm(after), one, JacobianMode::forward)[0] == 1e308);
        CHECK_MESSAGE(same_value(unoptimised, optimised),
                      "d/dx ((x/2)*1e308 + (x/2)*1e308), reverse mode: " << unoptimised << " before, "
                                                                         << optimised << " after optimize");
    }
}

TEST_CASE("optimize: folding in double leaves float evaluation unchanged" * doctest::may_fail()) {
    // x + (c * c) / c with c = 1e30: in float c * c overflows to inf; folded in double it does
    // not, and the folded constant 1e30 is what the float VM then sees.
    TapeBuilder builder(1);
    const std::uint32_t c = builder.constant(1e30);
    builder.output(builder.op(Op::Add, builder.input(0), builder.op(Op::Div, builder.op(Op::Mul, c, c), c)));
    const Tape before = builder.tape();
    const Tape after = optimized(before);
    const float x = 1.0f;
    float unoptimised = 0, optimised = 0;
    reference::Vm(before).forward(single_point<float>(std::span<const float>(&x, 1)),
                                  std::span<float>(&unoptimised, 1));
    reference::Vm(after).forward(single_point<float>(std::span<const float>(&x, 1)),
                                 std::span<float>(&optimised, 1));
    CHECK(std::isinf(unoptimised));
    CHECK_MESSAGE(bits(unoptimised) == bits(optimised),
                  "float result " << unoptimised << " before optimize, " << optimised << " after");
}

// ---------------------------------------------------------------------------------------------
// Idempotence

TEST_CASE("optimize: optimizing twice equals optimizing once on the example tapes") {
    REQUIRE(!examples::example_list().empty());
    for (const examples::ExampleInfo& example : examples::example_list()) {
        INFO(example.name);
        const Tape tape = examples::example_tape(example.name);  // already optimised once
        const Tape twice = optimized(tape);
        CHECK(twice == tape);
        const Tape thrice = optimized(twice);
        CHECK(thrice == twice);
    }
}

TEST_CASE("optimize: recorded example functions give the same results after optimize") {
    using examples::ba_residual;
    const std::vector<double> rosenbrock_point(16, 0.5);
    const Tape tapes[] = {
        record(std::span<const double>(examples::ba_test_inputs),
               [](std::span<const Var> x) { return ba_residual<Var>(x, examples::ba_test_feature.data()); }),
        record(rosenbrock_point, [](std::span<const Var> x) { return examples::rosenbrock16<Var>(x); }),
        record(rosenbrock_point, [](std::span<const Var> x) { return examples::trig16<Var>(x); }),
    };
    std::mt19937_64 rng(25);
    for (const Tape& before : tapes) {
        const Tape after = optimized(before);
        CHECK(optimized(after) == after);
        CHECK(after.guard_count() == before.guard_count());
        check_same_results(before, after, random_points(rng, before, 32));
        Points near_recording;  // where the recorded branches hold
        near_recording.count = 1;
        near_recording.inputs.assign(before.input_count(), 0.5);
        if (before.input_count() == examples::ba_inputs) {
            near_recording.inputs.assign(examples::ba_test_inputs.begin(), examples::ba_test_inputs.end());
        }
        CHECK(evaluate(after, near_recording).diverged.empty());
        check_same_results(before, after, near_recording);
    }
}

// ---------------------------------------------------------------------------------------------
// Random hand-built tapes

namespace {

/// A random hand-built tape: every non-leaf op, constants (specials, duplicated pool
/// entries), repeated instructions (same and swapped operands), exact and inexact identities,
/// selects on constants, guards (duplicated, on constants), outputs anywhere, dead code.
/// Guards expect the outcome at `recording_point` most of the time, so that some points keep
/// to the recorded branches.
Tape random_tape(std::mt19937_64& rng, std::span<const double> recording_point,
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
Points points_around(std::mt19937_64& rng, const Tape& tape, std::span<const double> centre,
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

}  // namespace

TEST_CASE("optimize: random hand-built tapes give the same results after optimize, and it is idempotent") {
    std::mt19937_64 rng(0x7a9e5eedULL);
    std::uniform_real_distribution<double> coordinate(-2.0, 2.0);
    constexpr int tapes = 4000;
    std::size_t removed = 0, kept_guards = 0, diverged = 0, agreeing = 0, reverse_skipped = 0;
    for (int t = 0; t < tapes; ++t) {
        CAPTURE(t);
        const std::vector<double> centre = {coordinate(rng), coordinate(rng), coordinate(rng)};
        const std::vector<double> centre_params(t % 2, 0.75);
        const Tape before = random_tape(rng, centre, centre_params);
        const Tape after = optimized(before);
        CHECK(after.input_count() == before.input_count());
        CHECK(after.param_count() == before.param_count());
        CHECK(after.output_count() == before.output_count());
        CHECK(after.instruction_count() <= before.instruction_count());
        CHECK(after.guard_count() <= before.guard_count());
        const Tape twice = optimized(after);
        CHECK(twice == after);
        removed += before.instruction_count() - after.instruction_count();
        kept_guards += after.guard_count();
        const Points points = points_around(rng, before, centre, centre_params, 16);
        check_same_results(before, after, points, &reverse_skipped);
        const std::size_t diverging = evaluate(after, points).diverged.size();
        diverged += diverging;
        agreeing += points.count - diverging;
    }
    MESSAGE(tapes << " random tapes: " << removed << " instructions removed, " << kept_guards
                  << " guards kept; " << diverged << " diverging and " << agreeing << " agreeing points; "
                  << reverse_skipped << " non-finite reverse-mode entries changed by summation order");
    // The generator exercises what it should: plenty removed, guards that hold and fail.
    CHECK(removed > tapes * 5);
    CHECK(kept_guards > tapes / 2);
    CHECK(diverged > 100);
    CHECK(agreeing > 100);
    CHECK(reverse_skipped <= tapes / 100);
}
