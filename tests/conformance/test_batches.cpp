// Batches: sizes around SIMD widths, blocks and chunks; guards (Report::diverged); NaN and
// infinity confined to their own points; several threads calling one evaluator; and the
// errors every backend shares (wrong sizes, gradient of several outputs, missing float64).
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <thread>

#include <doctest/doctest.h>

#include "backend.hpp"
#include "judge.hpp"
#include "modes.hpp"
#include "tapevm/error.hpp"
#include "tapevm/var.hpp"

namespace tapevm::conformance {
namespace {

/// A cheap tape with a guard: 2 inputs, 1 parameter, 2 outputs, recorded at x0 < x1.
///   y0 = x0 p0 + sin(x1)
///   y1 = x0 < x1 ? x0 x1 : x0 - exp(x1)   (a C++ branch: points with x0 >= x1 diverge)
Tape guarded_tape() {
    const std::vector<double> x = {0.5, 1.0};
    const std::vector<double> p = {2.0};
    return record(std::span<const double>(x), std::span<const double>(p),
                  [](std::span<const Var> x, std::span<const Var> p) {
                      const Var y0 = x[0] * p[0] + sin(x[1]);
                      if (x[0] < x[1]) return std::vector<Var>{y0, x[0] * x[1]};
                      return std::vector<Var>{y0, x[0] - exp(x[1])};
                  });
}

template <class Real> PointSet<Real> random_set(std::size_t points, unsigned seed) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> value(-2, 2);
    PointSet<Real> set{points, std::vector<Real>(points * 2), std::vector<Real>(points)};
    for (auto& v : set.inputs) v = static_cast<Real>(value(rng));
    for (auto& v : set.params) v = static_cast<Real>(value(rng));
    return set;
}

/// The points where !(x0 < x1): those the guard reports.
template <class Real> std::vector<std::size_t> expected_diverged(const PointSet<Real>& set) {
    std::vector<std::size_t> points;
    for (std::size_t p = 0; p < set.points; ++p) {
        if (!(set.inputs[2 * p] < set.inputs[2 * p + 1])) points.push_back(p);
    }
    return points;
}

TEST_CASE_TEMPLATE("batch sizes around SIMD widths, blocks and chunks, every mode", Real, double, float) {
    const Tape tape = guarded_tape();
    REQUIRE(tape.guard_count() == 1);
    for (const std::size_t points : {1, 7, 8, 9, 255, 256, 257, 1023, 100003}) {
        const PointSet<Real> set = random_set<Real>(points, static_cast<unsigned>(points));
        Failures failures(backend().name + " " + precision_name<Real>() + " batch of " +
                          std::to_string(points));
        try {
            const auto evaluator = make_evaluator(tape);
            const Comparison<Real> c = run_all(*evaluator, set, make_seeds<Real>(points, 2, 2));
            const ValueJudge judge = derivative_judge<Real>(tolerances<Real>().tapes);
            compare_all(failures, c, tape, describe_points(set, 2, 1), judge, judge);
            // The reference itself reports exactly the points that branch otherwise.
            compare_reports(failures, "reference forward", c.reference.forward.report.diverged,
                            expected_diverged(set));
        } catch (const Error& error) {
            failures.add(std::string("threw: ") + error.what());
        }
    }
}

TEST_CASE_TEMPLATE("guards: Report::diverged lists exactly the points that branch otherwise", Real, double,
                   float) {
    const Real nan = std::numeric_limits<Real>::quiet_NaN();
    const Real inf = std::numeric_limits<Real>::infinity();
    // Both sides, ties (x0 == x1 diverges), NaN (every comparison false: diverges), infinities.
    const PointSet<Real> set{9,
                             {Real(0), Real(1), Real(1), Real(0), Real(2), Real(2), nan, Real(1), Real(1),
                              nan, -inf, inf, inf, -inf, Real(-0.0), Real(0), Real(-3), Real(-2.5)},
                             {Real(1)}};
    const std::vector<std::size_t> expected = {1, 2, 3, 4, 6, 7};
    REQUIRE(expected_diverged(set) == expected);
    const auto evaluator = make_evaluator(guarded_tape());
    const Batch<Real> batch = set.batch();
    const Seeds<Real> seeds = make_seeds<Real>(set.points, 2, 2);
    CHECK(evaluator->forward(batch).report.diverged == expected);
    CHECK(evaluator->jacobian(batch, JacobianMode::forward).report.diverged == expected);
    CHECK(evaluator->jacobian(batch, JacobianMode::reverse).report.diverged == expected);
    CHECK(evaluator->jvp(batch, std::span<const Real>(seeds.tangents)).report.diverged == expected);
    CHECK(evaluator->vjp(batch, std::span<const Real>(seeds.cotangents)).report.diverged == expected);
    CHECK(evaluator
              ->hvp(batch, std::span<const Real>(seeds.cotangents), std::span<const Real>(seeds.directions))
              .report.diverged == expected);
}

template <class Real> bool same_bits(const std::vector<Real>& a, const std::vector<Real>& b) {
    if (a.size() != b.size()) return false;
    for (std::size_t k = 0; k < a.size(); ++k) {
        const bool same = (std::isnan(a[k]) && std::isnan(b[k])) ||
                          (a[k] == b[k] && std::signbit(a[k]) == std::signbit(b[k]));
        if (!same) return false;
    }
    return true;
}

/// Every mode's results as one vector per mode, for bitwise comparison of points.
template <class Real> std::vector<std::vector<Real>> all_values(const Results<Real>& r) {
    return {
        r.forward.values, r.jacobian_forward.values, r.jacobian_reverse.values, r.jvp.values, r.vjp.values,
        r.hvp.values};
}

TEST_CASE_TEMPLATE("NaN and infinity in some points never change other points' results", Real, double,
                   float) {
    const Tape tape = guarded_tape();
    const auto evaluator = make_evaluator(tape);
    constexpr std::size_t points = 1031;
    const PointSet<Real> clean = random_set<Real>(points, 77);
    const Seeds<Real> clean_seeds = make_seeds<Real>(points, 2, 2);
    PointSet<Real> poisoned = clean;
    Seeds<Real> poisoned_seeds = clean_seeds;
    const Real specials[] = {std::numeric_limits<Real>::quiet_NaN(), std::numeric_limits<Real>::infinity(),
                             -std::numeric_limits<Real>::infinity(), std::numeric_limits<Real>::max()};
    std::vector<bool> bad(points, false);
    for (std::size_t p = 3; p < points; p += 5) {
        const Real special = specials[(p / 5) % 4];
        poisoned.inputs[2 * p + (p % 2)] = special;
        if (p % 3 == 0) poisoned.params[p] = special;
        if (p % 4 == 0) poisoned_seeds.cotangents[2 * p] = special;
        if (p % 7 == 0) poisoned_seeds.tangents[2 * p + 1] = special;
        bad[p] = true;
    }
    const auto expected = all_values(evaluate_all(*evaluator, clean, clean_seeds));
    const auto got = all_values(evaluate_all(*evaluator, poisoned, poisoned_seeds));
    const char* names[] = {"forward", "jacobian (forward mode)", "jacobian (reverse mode)", "jvp", "vjp",
                           "hvp"};
    Failures failures(backend().name + " " + precision_name<Real>() + " NaN/inf isolation");
    for (std::size_t mode = 0; mode < expected.size(); ++mode) {
        const std::size_t per_point = expected[mode].size() / points;
        for (std::size_t k = 0; k < expected[mode].size(); ++k) {
            const std::size_t p = k / per_point;
            if (bad[p]) continue;
            const Real a = got[mode][k], b = expected[mode][k];
            if (!same_bits(std::vector<Real>{a}, std::vector<Real>{b})) {
                failures.add(std::string(names[mode]) + " at clean point " + std::to_string(p) + ": " +
                             show(a) + " with NaN/inf elsewhere in the batch, " + show(b) + " without");
            }
        }
    }
    // The poisoned points do carry NaN or infinity somewhere (so the test poisons something).
    std::size_t non_finite = 0;
    for (std::size_t k = 0; k < got[0].size(); ++k) non_finite += std::isfinite(got[0][k]) ? 0 : 1;
    CHECK(non_finite > points / 10);
}

TEST_CASE_TEMPLATE("several threads calling one evaluator get the single-threaded results", Real, double,
                   float) {
    const Tape tape = guarded_tape();
    const auto evaluator = make_evaluator(tape);
    constexpr std::size_t callers = 4;
    std::vector<PointSet<Real>> sets;
    std::vector<std::vector<Real>> expected(callers), got(callers);
    for (std::size_t t = 0; t < callers; ++t) {
        sets.push_back(random_set<Real>(2000 + 37 * t, static_cast<unsigned>(500 + t)));
        expected[t] = evaluator->jacobian(sets[t].batch()).values;
    }
    std::vector<std::thread> threads;
    for (std::size_t t = 0; t < callers; ++t) {
        threads.emplace_back([&, t] {
            for (int repeat = 0; repeat < 3; ++repeat) got[t] = evaluator->jacobian(sets[t].batch()).values;
        });
    }
    for (auto& thread : threads) thread.join();
    for (std::size_t t = 0; t < callers; ++t) {
        CAPTURE(t);
        CHECK(same_bits(got[t], expected[t]));
    }
}

TEST_CASE("errors: wrong sizes, gradient of several outputs, float64 support") {
    const Tape tape = guarded_tape();  // 2 inputs, 1 param, 2 outputs
    const auto evaluator = make_evaluator(tape);
    CHECK(evaluator->tape() == tape);
    CHECK(!evaluator->name().empty());
    const std::vector<float> x(6), p(3), small(5);
    const Batch<float> batch{3, x, p};
    std::vector<float> buffer(6);
    CHECK_THROWS_AS(
        evaluator->forward(Batch<float>{3, std::span<const float>(x).first(5), p}, std::span<float>(buffer)),
        ShapeError);
    CHECK_THROWS_AS(
        evaluator->forward(Batch<float>{3, x, std::span<const float>(p).first(2)}, std::span<float>(buffer)),
        ShapeError);
    CHECK_THROWS_AS(evaluator->forward(batch, std::span<float>(buffer).first(5)), ShapeError);
    CHECK_THROWS_AS(evaluator->jacobian(batch, std::span<float>(buffer)), ShapeError);
    CHECK_THROWS_AS(evaluator->jvp(batch, std::span<const float>(small), std::span<float>(buffer)),
                    ShapeError);
    CHECK_THROWS_AS(evaluator->gradient(batch, std::span<float>(buffer)), Unsupported);
    const std::vector<double> xd(6), pd(3);
    const Batch<double> batch_double{3, xd, pd};
    if (backend().has_f64) {
        CHECK(evaluator->forward(batch_double).values.size() == 6);
    } else {
        CHECK_THROWS_AS(evaluator->forward(batch_double), Unsupported);
        CHECK_THROWS_AS(evaluator->jacobian(batch_double), Unsupported);
        const std::vector<double> seeds(6);
        CHECK_THROWS_AS(evaluator->jvp(batch_double, std::span<const double>(seeds)), Unsupported);
        CHECK_THROWS_AS(evaluator->vjp(batch_double, std::span<const double>(seeds)), Unsupported);
        CHECK_THROWS_AS(
            evaluator->hvp(batch_double, std::span<const double>(seeds), std::span<const double>(seeds)),
            Unsupported);
    }
}

}  // namespace
}  // namespace tapevm::conformance
