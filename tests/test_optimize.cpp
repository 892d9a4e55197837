// The optimiser (optimize.hpp) on hand-built tapes, where nothing was folded or merged on the
// way in: constant folding bit for bit equal to the reference VM, only the identities exact for
// every input, common-subexpression elimination (operands reordered only for commutative ops),
// and what optimize.hpp documents of both: reverse mode sums a merged slot's adjoints first,
// and constants fold in double, also for a float evaluation. Dead code, guards, idempotence and
// random tapes: test_optimize_dead_code.cpp; the helpers: optimize_support.hpp.
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <random>
#include <set>
#include <span>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <doctest/doctest.h>

#include "optimize_support.hpp"
#include "tapevm/optimize.hpp"
#include "tapevm/var.hpp"
#include "test_util.hpp"

using namespace tapevm;
using namespace tapevm::test::optimize_support;
using test::same_value;

namespace {

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
    // 34 unary ops x 12, Powi 6 x 12, 18 binary ops x 144, Select and Fma x 1728.
    CHECK(folded == 34 * 12 + 6 * 12 + 18 * 144 + 2 * 1728);
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
    const std::set<Op> commutative = {Op::Add, Op::Mul, Op::Hypot, Op::Max,      Op::Min,
                                      Op::Eq,  Op::Ne,  Op::Fma,   Op::LogSumExp};
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
    CHECK(non_commutative_seen == 10);  // Sub Div Rem Powf Atan2 Lt Le Gt Ge Copysign
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
// What optimize.hpp documents: reverse mode up to the order of summation, folding in double

TEST_CASE("optimize: reverse mode sums a merged slot's adjoints first; values and forward mode unchanged") {
    // A merged subexpression sums its adjoints before the chain rule: sqrt(x) - sqrt(x) at x = 0
    // gives inf*1 + inf*(-1) = NaN unoptimised but (1 - 1)*inf -> 0 optimised, and
    // (x/2)*1e308 + (x/2)*1e308 gives 1e308 unoptimised but inf optimised (1e308 + 1e308
    // overflows). Values and forward mode (NaN and 1e308) stay the same, bit for bit.
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
        CHECK(std::isnan(test::jacobian(reference::Vm(before), zero, JacobianMode::forward)[0]));
        CHECK(same_value(test::forward(reference::Vm(after), zero)[0],
                         test::forward(reference::Vm(before), zero)[0]));
        CHECK(std::isnan(unoptimised));
        CHECK_MESSAGE(optimised == 0.0, "d/dx (sqrt(x) - sqrt(x)) at 0, reverse mode: "
                                            << unoptimised << " before, " << optimised << " after optimize");
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
        CHECK(test::jacobian(reference::Vm(before), one, JacobianMode::forward)[0] == 1e308);
        CHECK(same_value(test::forward(reference::Vm(after), one)[0],
                         test::forward(reference::Vm(before), one)[0]));
        CHECK_MESSAGE(optimised == infinity,
                      "d/dx ((x/2)*1e308 + (x/2)*1e308), reverse mode: " << unoptimised << " before, "
                                                                         << optimised << " after optimize");
    }
}

TEST_CASE("optimize: constants fold in double, so a float evaluation rounds a folded result once") {
    // x + (c * c) / c with c = 1e30: in float c * c overflows to inf; folded in double it does
    // not, and the folded constant 1e30 is what the float VM then sees. In double nothing changes.
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
    CHECK_MESSAGE(optimised == 1e30f,
                  "float result " << unoptimised << " before optimize, " << optimised << " after");
    const std::vector<double> one = {1.0};
    CHECK(bits(test::forward(reference::Vm(after), one)[0]) ==
          bits(test::forward(reference::Vm(before), one)[0]));
}
