// The optimiser (optimize.hpp) on hand-built tapes, continued from test_optimize.cpp:
// dead-code elimination with a compacted constant pool, guard merging and dropping,
// idempotence, and on random tapes: values, Jacobians (forward and reverse mode) and the
// diverged points unchanged.
#include <cmath>
#include <cstddef>
#include <random>
#include <span>
#include <vector>

#include <doctest/doctest.h>

#include "optimize_support.hpp"
#include "tapevm/examples.hpp"
#include "tapevm/optimize.hpp"
#include "tapevm/var.hpp"
#include "test_util.hpp"

using namespace tapevm;
using namespace tapevm::test::optimize_support;

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
