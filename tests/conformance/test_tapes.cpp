// Whole tapes, every mode, in double and float, against the reference VM and forward mode
// against reverse mode: the built-in examples (ba, ba-param with parameters per point and
// shared, rosenbrock16, trig16) and seeded random expression trees with one or two outputs,
// parameters, guards and every kind of node the recorder reaches.
#include <random>
#include <string>

#include <doctest/doctest.h>

#include "backend.hpp"
#include "consistency.hpp"
#include "judge.hpp"
#include "modes.hpp"
#include "random_trees.hpp"
#include "tapevm/error.hpp"
#include "tapevm/examples.hpp"
#include "tapevm/var.hpp"

namespace tapevm::conformance {
namespace {

/// Every mode of `tape` on `set` against the reference, and the modes against each other.
template <class Real>
void check_tape(const std::string& what, const Tape& tape, const PointSet<Real>& set,
                std::string detail = {}) {
    Failures failures(backend().name + " " + precision_name<Real>() + " " + what);
    failures.note(std::move(detail));
    try {
        const auto evaluator = make_evaluator(tape);
        const Seeds<Real> seeds = make_seeds<Real>(set.points, tape.input_count(), tape.output_count());
        const Comparison<Real> c = run_all(*evaluator, set, seeds);
        const ValueJudge judge = derivative_judge<Real>(tolerances<Real>().tapes);
        compare_all(failures, c, tape, describe_points(set, tape.input_count(), tape.param_count()), judge,
                    judge);
        check_consistency(failures, c.got, tape, seeds);
    } catch (const Error& error) {
        failures.add(std::string("threw: ") + error.what());
    }
}

/// `points` rows of `center` with each value scaled by a factor in [1 - spread, 1 + spread].
template <class Real, std::size_t N>
std::vector<Real> around(const std::array<double, N>& center, std::size_t points, double spread,
                         unsigned seed) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> factor(1 - spread, 1 + spread);
    std::vector<Real> values(points * N);
    for (std::size_t k = 0; k < values.size(); ++k)
        values[k] = static_cast<Real>(center[k % N] * factor(rng));
    return values;
}

template <class Real> std::vector<Real> uniform(std::size_t count, double low, double high, unsigned seed) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> value(low, high);
    std::vector<Real> values(count);
    for (auto& v : values) v = static_cast<Real>(value(rng));
    return values;
}

TEST_CASE_TEMPLATE("the examples, every mode", Real, double, float) {
    constexpr std::size_t points = 37;
    SUBCASE("ba: bundle adjustment, with a point whose rotation is zero (its guard fails)") {
        PointSet<Real> set{points, around<Real>(examples::ba_test_inputs, points, 0.2, 1), {}};
        for (std::size_t i = 0; i < 3; ++i)
            set.inputs[5 * examples::ba_inputs + examples::ba_rotation + i] = 0;
        check_tape("ba", examples::example_tape("ba"), set);
    }
    SUBCASE("ba-param: the feature as parameters, one set per point") {
        PointSet<Real> set{points, around<Real>(examples::ba_test_inputs, points, 0.2, 2),
                           around<Real>(examples::ba_test_feature, points, 0.2, 3)};
        check_tape("ba-param (params per point)", examples::example_tape("ba-param"), set);
    }
    SUBCASE("ba-param: the feature as parameters, shared by every point") {
        PointSet<Real> set{points, around<Real>(examples::ba_test_inputs, points, 0.2, 4),
                           around<Real>(examples::ba_test_feature, 1, 0.0, 5)};
        check_tape("ba-param (params shared)", examples::example_tape("ba-param"), set);
    }
    SUBCASE("rosenbrock16") {
        check_tape("rosenbrock16", examples::example_tape("rosenbrock16"),
                   PointSet<Real>{points, uniform<Real>(points * 16, -2, 2, 6), {}});
    }
    SUBCASE("trig16") {
        check_tape("trig16", examples::example_tape("trig16"),
                   PointSet<Real>{points, uniform<Real>(points * 16, -3, 3, 7), {}});
    }
}

TEST_CASE_TEMPLATE("seeded random expression trees, every mode", Real, double, float) {
    using namespace test::random_trees;
    constexpr std::size_t trees = 40;
    constexpr std::size_t points = 19;
    for (std::uint64_t seed = 1; seed <= trees; ++seed) {
        TreeGenerator generator(seed * 7919);
        const Tree tree = generator.next(/*smooth_only=*/seed % 3 == 0);
        const auto at = uniform<double>(tree.inputs + tree.params, -2, 2, static_cast<unsigned>(seed));
        Tape tape = record(std::span<const double>(at).first(tree.inputs),
                           std::span<const double>(at).subspan(tree.inputs),
                           [&](std::span<const Var> x, std::span<const Var> p) {
                               return TreeRecorder(tree, x, p).outputs();
                           });
        tape.optimize();
        PointSet<Real> set{points,
                           uniform<Real>(points * tree.inputs, -2, 2, static_cast<unsigned>(seed + 100)),
                           uniform<Real>(points * tree.params, -2, 2, static_cast<unsigned>(seed + 200))};
        check_tape("random tree " + std::to_string(seed), tape, set, describe(tree) + tape.dump());
    }
}

}  // namespace
}  // namespace tapevm::conformance
