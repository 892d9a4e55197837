// ReducedTape (tapevm/reduced.hpp) on the backend: gradients with respect to shared
// parameters summed over the batch. Each point's term (ReducedOptions::point_gradients) follows
// the reference VM's vjp of the lifted tape with cotangent w_p; the reduced gradient and value are within
// the stated error bound of the exact sum of the backend's own terms; the bits do not change
// with the chunking; weights; the report; 0 to 1,000 points.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "../reduced_model.hpp"
#include "../random_values.hpp"
#include "backend.hpp"
#include "judge.hpp"
#include "tapevm/error.hpp"
#include "tapevm/reduced.hpp"
#include "tapevm/reference.hpp"
#include "tapevm/var.hpp"

namespace tapevm::conformance {
namespace {

Tape model() { return test::reduced_model(); }

template <class Real> bool same_bits(Real a, Real b) {
    return std::bit_cast<std::uint64_t>(static_cast<double>(a)) ==
           std::bit_cast<std::uint64_t>(static_cast<double>(b));
}

// reduced.hpp's bound on |result - sum of terms|.
template <class Real> double reduction_bound(std::size_t points, long double exact, long double magnitude) {
    const double u_real = std::ldexp(1.0, -std::numeric_limits<Real>::digits);
    const double u64 = std::ldexp(1.0, -53);
    const double levels = points > 1 ? std::ceil(std::log2(static_cast<double>(points))) : 0.0;
    return u_real * static_cast<double>(std::fabs(exact)) +
           (1 + u_real) * levels * u64 / (1 - levels * u64) * static_cast<double>(magnitude);
}

template <class Real>
void check_reduced(const std::vector<std::uint32_t>& theta, std::size_t points, bool weighted,
                   unsigned seed) {
    const Tape tape = model();
    const ReducedTape reduced(tape, theta);
    const std::size_t n = 2, d = theta.size(), width = n + d;
    const std::vector<Real> inputs = test::random_values<Real>(points * n, -1, 1, seed);
    const std::vector<Real> params = test::random_values<Real>(4, 0.5, 1.5, seed + 1);
    const std::vector<Real> weights =
        weighted ? test::random_values<Real>(points, -2, 2, seed + 2) : std::vector<Real>();
    const Batch<Real> batch{points, inputs, params};
    Failures failures(backend().name + " " + precision_name<Real>() + " reduced gradient, " +
                      std::to_string(d) + " of 4 parameters, " + std::to_string(points) + " points" +
                      (weighted ? ", weighted" : ""));
    try {
        const auto evaluator = make_evaluator(reduced.tape());
        Real value = 0;
        std::vector<Real> gradient(d), point_values(points), terms(points * width);
        ReducedOptions<Real> options;
        options.weights = weights;
        options.value = &value;
        options.point_values = point_values;
        options.point_gradients = terms;
        const Report report = reduced.gradient(*evaluator, batch, std::span<Real>(gradient), options);

        // The values and guards of the recorded tape on this backend.
        const auto recorded = make_evaluator(tape);
        const Evaluation<Real> forward = recorded->forward(batch);
        for (std::size_t p = 0; p < points; ++p) {
            if (!same_bits(point_values[p], forward.values[p]))
                failures.add("point " + std::to_string(p) + " value " + show(point_values[p]) + ", forward " +
                             show(forward.values[p]));
        }
        if (report.diverged != forward.report.diverged)
            failures.add("diverged " + std::to_string(report.diverged.size()) + " points, forward " +
                         std::to_string(forward.report.diverged.size()));

        // Each point's term against the reference VM's vjp of the lifted tape.
        const reference::Vm oracle(reduced.tape());
        std::vector<double> lifted_inputs(width), kept;
        for (std::uint32_t k = 0; k < 4; ++k) {
            if (std::find(theta.begin(), theta.end(), k) == theta.end())
                kept.push_back(static_cast<double>(params[k]));
        }
        for (std::size_t p = 0; p < points; ++p) {
            for (std::size_t i = 0; i < n; ++i) lifted_inputs[i] = static_cast<double>(inputs[p * n + i]);
            for (std::size_t j = 0; j < d; ++j) lifted_inputs[n + j] = static_cast<double>(params[theta[j]]);
            // The oracle's vjp with cotangent w_p; as judge.hpp, in f32 also the reference VM run in
            // f32, whichever is closer.
            const double w = weighted ? static_cast<double>(weights[p]) : 1.0;
            const std::vector<double> cotangent = {w};
            const auto want =
                oracle.vjp(single_point<double>(lifted_inputs, kept), std::span<const double>(cotangent));
            const std::vector<Real> lifted_real(lifted_inputs.begin(), lifted_inputs.end()),
                kept_real(kept.begin(), kept.end()), cotangent_real = {static_cast<Real>(w)};
            const auto want_real =
                oracle.vjp(single_point<Real>(lifted_real, kept_real), std::span<const Real>(cotangent_real));
            for (std::size_t k = 0; k < width; ++k) {
                const double expected = want.values[k];
                const double expected_real = static_cast<double>(want_real.values[k]);
                const double got_term = static_cast<double>(terms[p * width + k]);
                if (!within(got_term, expected, tolerances<Real>().tapes) &&
                    !within(got_term, expected_real, tolerances<Real>().tapes))
                    failures.add("point " + std::to_string(p) + " term " + std::to_string(k) + ": " +
                                 show(terms[p * width + k]) + ", reference " + show(expected));
            }
        }

        // The sums: within the stated bound of the exact sums of the backend's own terms.
        for (std::size_t j = 0; j <= d; ++j) {
            long double exact = 0, magnitude = 0;
            for (std::size_t p = 0; p < points; ++p) {
                const long double term =
                    j < d ? static_cast<long double>(terms[p * width + n + j])
                          : static_cast<long double>(weighted ? static_cast<double>(weights[p]) : 1.0) *
                                static_cast<long double>(point_values[p]);
                exact += term;
                magnitude += std::fabs(term);
            }
            const Real got = j < d ? gradient[j] : value;
            const double error = static_cast<double>(std::fabs(static_cast<long double>(got) - exact));
            if (!(error <= reduction_bound<Real>(points, exact, magnitude)))
                failures.add((j < d ? "gradient " + std::to_string(j) : std::string("value")) + ": " +
                             show(got) + ", exact sum of the terms " + show(static_cast<double>(exact)) +
                             ", error " + show(error) + " over the bound " +
                             show(reduction_bound<Real>(points, exact, magnitude)));
        }

        // The same bits whatever the chunking (and through the allocating overload).
        // (Few chunks per call on the GPU backends: each chunk is two submissions on lavapipe.)
        const std::vector<std::size_t> chunks =
            points <= 8 ? std::vector<std::size_t>{1, 3} : std::vector<std::size_t>{points / 5, points};
        for (const std::size_t chunk : chunks) {
            Real chunk_value = 0;
            std::vector<Real> chunk_gradient(d);
            ReducedOptions<Real> chunked;
            chunked.weights = weights;
            chunked.value = &chunk_value;
            chunked.chunk_points = chunk;
            reduced.gradient(*evaluator, batch, std::span<Real>(chunk_gradient), chunked);
            bool same = same_bits(chunk_value, value);
            for (std::size_t j = 0; j < d; ++j) same = same && same_bits(chunk_gradient[j], gradient[j]);
            if (!same) failures.add("chunks of " + std::to_string(chunk) + " points change the bits");
        }
        const ReducedGradient<Real> allocated =
            reduced.gradient(*evaluator, batch, std::span<const Real>(weights));
        bool same = same_bits(allocated.value, value) && allocated.report.diverged == report.diverged;
        for (std::size_t j = 0; j < d; ++j) same = same && same_bits(allocated.gradient[j], gradient[j]);
        if (!same) failures.add("the allocating overload gives other bits");
    } catch (const Error& error) {
        failures.add(std::string("threw: ") + error.what());
    }
}

TEST_CASE_TEMPLATE("reduced gradient: the sum of the per-point terms, within its bound, any chunking", Real,
                   double, float) {
    for (const std::size_t points : {0, 1, 2, 5, 64, 1000}) {
        check_reduced<Real>({1, 3, 0}, points, false, 100 + static_cast<unsigned>(points));
        check_reduced<Real>({2}, points, true, 200 + static_cast<unsigned>(points));
    }
    check_reduced<Real>({0, 1, 2, 3}, 77, true, 300);
    check_reduced<Real>({}, 9, true, 301);  // nothing differentiated: the value alone
}

// The reduced hvp against the sum of the reference VM's per-point hvps of the lifted tape (in
// f64): within the tapes bound of each term plus the reduction's bound.
template <class Real> void check_reduced_hvp(std::size_t points, unsigned seed) {
    const Tape tape = model();
    const std::vector<std::uint32_t> theta = {3, 0, 2};
    const ReducedTape reduced(tape, theta);
    const std::size_t n = 2, d = theta.size(), width = n + d;
    const std::vector<Real> inputs = test::random_values<Real>(points * n, -1, 1, seed);
    const std::vector<Real> params = test::random_values<Real>(4, 0.5, 1.5, seed + 1);
    const std::vector<Real> weights = test::random_values<Real>(points, -2, 2, seed + 2);
    const std::vector<Real> direction = test::random_values<Real>(d, -1, 1, seed + 3);
    Failures failures(backend().name + " " + precision_name<Real>() + " reduced hvp, " +
                      std::to_string(points) + " points");
    try {
        const auto evaluator = make_evaluator(reduced.tape());
        std::vector<Real> got(d);
        reduced.hvp(*evaluator, Batch<Real>{points, inputs, params}, std::span<const Real>(direction),
                    std::span<Real>(got), std::span<const Real>(weights));
        const reference::Vm oracle(reduced.tape());
        std::vector<double> kept = {static_cast<double>(params[1])}, row(width), dir(width, 0.0);
        for (std::size_t j = 0; j < d; ++j) dir[n + j] = static_cast<double>(direction[j]);
        // The oracle in f64 and, as judge.hpp allows, run in Real: whichever is closer.
        std::vector<long double> exact(d, 0), magnitude(d, 0), exact_real(d, 0), magnitude_real(d, 0);
        for (std::size_t p = 0; p < points; ++p) {
            for (std::size_t i = 0; i < n; ++i) row[i] = static_cast<double>(inputs[p * n + i]);
            for (std::size_t j = 0; j < d; ++j) row[n + j] = static_cast<double>(params[theta[j]]);
            const std::vector<double> w = {static_cast<double>(weights[p])};
            const auto hv = oracle.hvp(single_point<double>(row, kept), std::span<const double>(w),
                                       std::span<const double>(dir));
            const std::vector<Real> row_real(row.begin(), row.end()), kept_real(kept.begin(), kept.end()),
                dir_real(dir.begin(), dir.end()), w_real = {weights[p]};
            const auto hv_real = oracle.hvp(single_point<Real>(row_real, kept_real),
                                            std::span<const Real>(w_real), std::span<const Real>(dir_real));
            for (std::size_t j = 0; j < d; ++j) {
                exact[j] += hv.values[n + j];
                magnitude[j] += std::fabs(static_cast<long double>(hv.values[n + j]));
                exact_real[j] += static_cast<long double>(hv_real.values[n + j]);
                magnitude_real[j] += std::fabs(static_cast<long double>(hv_real.values[n + j]));
            }
        }
        const ErrorBound bound = tolerances<Real>().tapes;
        const auto within_sum = [&](Real value, long double sum, long double size) {
            const double allowed = bound.relative * static_cast<double>(size) +
                                   bound.absolute * static_cast<double>(points) +
                                   reduction_bound<Real>(points, sum, size);
            return static_cast<double>(std::fabs(static_cast<long double>(value) - sum)) <= allowed;
        };
        for (std::size_t j = 0; j < d; ++j) {
            const double error = static_cast<double>(std::fabs(static_cast<long double>(got[j]) - exact[j]));
            const double allowed = bound.relative * static_cast<double>(magnitude[j]) +
                                   bound.absolute * static_cast<double>(points) +
                                   reduction_bound<Real>(points, exact[j], magnitude[j]);
            if (!within_sum(got[j], exact[j], magnitude[j]) &&
                !within_sum(got[j], exact_real[j], magnitude_real[j]))
                failures.add("entry " + std::to_string(j) + ": " + show(got[j]) + ", reference " +
                             show(static_cast<double>(exact[j])) + ", error " + show(error) + " over " +
                             show(allowed));
        }
    } catch (const Error& error) {
        failures.add(std::string("threw: ") + error.what());
    }
}

TEST_CASE_TEMPLATE("reduced hvp: the sum of the per-point Hessian-vector products in theta", Real, double,
                   float) {
    for (const std::size_t points : {0, 1, 5, 300})
        check_reduced_hvp<Real>(points, 400 + static_cast<unsigned>(points));
}

TEST_CASE_TEMPLATE("reduced gradient: an evaluator of another tape, and wrong sizes", Real, double, float) {
    const Tape tape = model();
    const ReducedTape reduced(tape, {0, 2});
    const auto recorded = make_evaluator(tape);
    const auto other = make_evaluator(ReducedTape(tape, {2, 0}).tape());
    const auto evaluator = make_evaluator(reduced.tape());
    const std::vector<Real> inputs(4, Real(0.25)), params(4, Real(0.75)), per_point(8, Real(0.75));
    const Batch<Real> batch{2, inputs, params};
    CHECK_NOTHROW(reduced.gradient(*evaluator, batch));
    CHECK_THROWS_AS(reduced.gradient(*recorded, batch), Error);
    CHECK_THROWS_AS(reduced.gradient(*other, batch), Error);
    CHECK_THROWS_AS(reduced.gradient(*evaluator, Batch<Real>{2, inputs, per_point}), ShapeError);
    const std::vector<Real> weights(3, Real(1));
    CHECK_THROWS_AS(reduced.gradient(*evaluator, batch, std::span<const Real>(weights)), ShapeError);
    std::vector<Real> terms(2 * 4 - 1), gradient(2);
    ReducedOptions<Real> options;
    options.point_gradients = terms;
    CHECK_THROWS_AS(reduced.gradient(*evaluator, batch, std::span<Real>(gradient), options), ShapeError);
}

}  // namespace
}  // namespace tapevm::conformance
