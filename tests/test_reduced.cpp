// tapevm/reduced.hpp on the reference VM: the lifted tape (the same function of x and theta,
// its theta-gradient against central differences of the recorded tape in its parameters), the
// pairwise sum's fixed tree (against its recursive definition, bit for bit, whatever rows each
// call brings), and bad input. Every backend's reduced gradients: tests/conformance/test_reduced.cpp.
#include <bit>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include <doctest/doctest.h>

#include "reduced_model.hpp"
#include "detail/pairwise_sum.hpp"
#include "tapevm/error.hpp"
#include "tapevm/reduced.hpp"
#include "tapevm/reference.hpp"
#include "tapevm/var.hpp"

namespace tapevm {
namespace {

Tape model() { return test::reduced_model(); }

// The recursive definition the streaming sum must follow bit for bit.
double tree_sum(const std::vector<double>& terms, std::size_t first, std::size_t count) {
    if (count == 1) return terms[first];
    const std::size_t half = std::bit_floor(count - 1);
    return tree_sum(terms, first, half) + tree_sum(terms, first + half, count - half);
}

TEST_CASE("pairwise sum: the fixed tree, bit for bit, however the rows arrive") {
    std::mt19937_64 rng(7);
    std::uniform_real_distribution<double> uniform(-1, 1);
    for (std::size_t n = 1; n <= 70; ++n) {
        std::vector<double> terms(n);
        // Magnitudes over 40 binades, so that the order of summation shows in the bits.
        for (double& t : terms) t = uniform(rng) * std::ldexp(1.0, static_cast<int>(rng() % 40));
        detail::PairwiseSum sum(2);
        for (std::size_t p = 0; p < n; ++p)
            sum.add([&](std::size_t k) { return k == 0 ? terms[p] : -terms[p]; });
        const std::vector<double> total = sum.total();
        CHECK(sum.rows() == n);
        CHECK(std::bit_cast<std::uint64_t>(total[0]) == std::bit_cast<std::uint64_t>(tree_sum(terms, 0, n)));
        CHECK(total[1] == -total[0]);
    }
    CHECK(detail::PairwiseSum(3).total() == std::vector<double>(3, 0.0));
    // detail::tree_sum (a group's sum, the CPU VM's block sums): the same tree, up to 1,100 rows
    // (whole subtrees of up to 1,024 take its loop, the rest its recursion).
    std::vector<double> terms(1100);
    for (double& t : terms) t = uniform(rng) * std::ldexp(1.0, static_cast<int>(rng() % 40));
    std::size_t wrong = 0;
    for (std::size_t n = 1; n <= terms.size(); ++n)
        wrong += std::bit_cast<std::uint64_t>(detail::tree_sum(terms.data(), n)) !=
                 std::bit_cast<std::uint64_t>(tree_sum(terms, 0, n));
    CHECK(wrong == 0);
}

TEST_CASE("lift_params: the same function, theta as trailing inputs in the order named") {
    const Tape tape = model();
    const std::vector<std::uint32_t> theta = {2, 0};  // c, a; b and s stay parameters
    const Tape lifted = lift_params(tape, theta);
    CHECK(lifted.input_count() == 4);
    CHECK(lifted.param_count() == 2);
    CHECK(lifted.guard_count() == tape.guard_count());
    const reference::Vm original_vm(tape), lifted_vm(lifted);
    const std::vector<double> p = {0.9, -0.3, 1.1, 0.75};
    for (const double x0 : {0.4, -0.8}) {  // -0.8 takes the other branch
        const std::vector<double> x = {x0, 0.6};
        const std::vector<double> lifted_inputs = {x0, 0.6, p[2], p[0]}, kept = {p[1], p[3]};
        const auto want = original_vm.forward(single_point<double>(x, p));
        const auto got = lifted_vm.forward(single_point<double>(lifted_inputs, kept));
        CHECK(std::bit_cast<std::uint64_t>(got.values[0]) == std::bit_cast<std::uint64_t>(want.values[0]));
        CHECK(got.report.diverged == want.report.diverged);
        // d/dtheta against central differences of the recorded tape in its parameters.
        const auto gradient = lifted_vm.gradient(single_point<double>(lifted_inputs, kept));
        for (std::size_t j = 0; j < theta.size(); ++j) {
            const double h = 1e-6;
            std::vector<double> up = p, down = p;
            up[theta[j]] += h;
            down[theta[j]] -= h;
            const double difference = (original_vm.forward(single_point<double>(x, up)).values[0] -
                                       original_vm.forward(single_point<double>(x, down)).values[0]) /
                                      (2 * h);
            CHECK(gradient.values[2 + j] == doctest::Approx(difference).epsilon(1e-7));
        }
    }
}

TEST_CASE("reduced gradient on the reference VM: the sum of the per-point gradients") {
    const Tape tape = model();
    const ReducedTape reduced(tape, {1, 3, 0});
    const reference::Vm vm(reduced.tape());
    const std::vector<double> inputs = {0.4, 0.6, -0.8, 0.1, 0.2, -0.3};
    const std::vector<double> params = {0.9, -0.3, 1.1, 0.75}, weights = {1.0, 0.5, -2.0};
    const auto got = reduced.gradient(vm, Batch<double>{3, inputs, params}, std::span<const double>(weights));
    CHECK(got.report.diverged == std::vector<std::size_t>{1});
    const reference::Vm original(tape);
    double value = 0;
    std::vector<double> gradient(3, 0.0);
    for (std::size_t p = 0; p < 3; ++p) {
        const std::vector<double> lifted_inputs = {inputs[2 * p], inputs[2 * p + 1], params[1], params[3],
                                                   params[0]};
        const std::vector<double> kept = {params[2]};
        const auto g = vm.gradient(single_point<double>(lifted_inputs, kept));
        for (std::size_t j = 0; j < 3; ++j) gradient[j] += weights[p] * g.values[2 + j];
        value +=
            weights[p] *
            original.forward(single_point<double>(std::span(inputs).subspan(2 * p, 2), params)).values[0];
    }
    CHECK(got.value == doctest::Approx(value).epsilon(1e-14));
    for (std::size_t j = 0; j < 3; ++j) CHECK(got.gradient[j] == doctest::Approx(gradient[j]).epsilon(1e-14));
}

TEST_CASE(
    "reduced gradient: many parameters (the sum in column slices on several threads), exact tree sums") {
    // f(x; theta) = x0 * (theta_0 + ... + theta_{q-1}): df/dtheta_j = x0 at every point, so each
    // gradient entry is the pairwise sum of the x0 over the points, bit for bit.
    constexpr std::size_t q = 5000, points = 300;
    const std::vector<double> x = {0.5};
    const std::vector<double> theta(q, 0.25);
    const Tape tape = record(std::span<const double>(x), std::span<const double>(theta),
                             [](std::span<const Var> x, std::span<const Var> p) {
                                 Var sum = p[0];
                                 for (std::size_t j = 1; j < p.size(); ++j) sum = sum + p[j];
                                 return std::vector<Var>{x[0] * sum};
                             });
    const ReducedTape reduced = ReducedTape::all_params(tape);
    const reference::Vm vm(reduced.tape());
    std::mt19937_64 rng(3);
    std::uniform_real_distribution<double> uniform(-1, 1);
    std::vector<double> inputs(points);
    for (double& v : inputs) v = uniform(rng) * std::ldexp(1.0, static_cast<int>(rng() % 30));
    for (const std::size_t chunk : {0, 7, 64}) {
        ReducedOptions<double> options;
        options.chunk_points = chunk;
        std::vector<double> gradient(q);
        reduced.gradient(vm, Batch<double>{points, inputs, theta}, std::span<double>(gradient), options);
        const std::uint64_t want = std::bit_cast<std::uint64_t>(tree_sum(inputs, 0, points));
        std::size_t wrong = 0;
        for (const double g : gradient) wrong += std::bit_cast<std::uint64_t>(g) != want;
        CHECK(wrong == 0);
    }
}

TEST_CASE("reduced hvp and Hessian: central differences of the reduced gradient, symmetric") {
    const Tape tape = model();
    const ReducedTape reduced(tape, {2, 0, 3});
    const reference::Vm vm(reduced.tape());
    const std::vector<double> inputs = {0.4, 0.6, -0.8, 0.1, 0.2, -0.3, 1.1, 0.9};
    const std::vector<double> params = {0.9, -0.3, 1.1, 0.75}, weights = {1.0, 0.5, -2.0, 0.25};
    const std::vector<double> direction = {0.3, -1.2, 0.7};
    const Batch<double> batch{4, inputs, params};
    std::vector<double> hv(3);
    const Report report = reduced.hvp(vm, batch, std::span<const double>(direction), std::span<double>(hv),
                                      std::span<const double>(weights));
    CHECK(report.diverged == std::vector<std::size_t>{1});
    // (g(theta + h v) - g(theta - h v)) / 2h
    const double h = 1e-6;
    std::vector<double> up = params, down = params;
    for (std::size_t j = 0; j < 3; ++j) {
        up[reduced.differentiated()[j]] += h * direction[j];
        down[reduced.differentiated()[j]] -= h * direction[j];
    }
    const auto g_up = reduced.gradient(vm, Batch<double>{4, inputs, up}, std::span<const double>(weights));
    const auto g_down =
        reduced.gradient(vm, Batch<double>{4, inputs, down}, std::span<const double>(weights));
    for (std::size_t j = 0; j < 3; ++j)
        CHECK(hv[j] == doctest::Approx((g_up.gradient[j] - g_down.gradient[j]) / (2 * h)).epsilon(1e-6));
    // The dense Hessian: symmetric, and times the direction the hvp.
    std::vector<double> hessian(9);
    reduced.hessian(vm, batch, std::span<double>(hessian), std::span<const double>(weights));
    for (std::size_t i = 0; i < 3; ++i) {
        double row = 0;
        for (std::size_t j = 0; j < 3; ++j) {
            CHECK(hessian[i * 3 + j] == hessian[j * 3 + i]);
            row += hessian[i * 3 + j] * direction[j];
        }
        CHECK(row == doctest::Approx(hv[i]).epsilon(1e-12));
    }
    // Wrong sizes.
    std::vector<double> short_result(2), short_hessian(8);
    CHECK_THROWS_AS(
        reduced.hvp(vm, batch, std::span<const double>(direction), std::span<double>(short_result)),
        ShapeError);
    CHECK_THROWS_AS(
        reduced.hvp(vm, batch, std::span<const double>(direction).first(2), std::span<double>(hv)),
        ShapeError);
    CHECK_THROWS_AS(reduced.hessian(vm, batch, std::span<double>(short_hessian)), ShapeError);
    const reference::Vm recorded(tape);
    CHECK_THROWS_AS(reduced.hvp(recorded, batch, std::span<const double>(direction), std::span<double>(hv)),
                    Error);
}

TEST_CASE("reduced gradient: bad input is a clear error") {
    const Tape tape = model();
    CHECK_THROWS_AS(ReducedTape(tape, {4}), Error);     // out of range
    CHECK_THROWS_AS(ReducedTape(tape, {1, 1}), Error);  // named twice
    const Tape two = record(1, [](std::span<const Var> x) { return std::vector<Var>{x[0], 2.0 * x[0]}; });
    CHECK_THROWS_AS(ReducedTape(two, {}), Unsupported);

    const ReducedTape reduced(tape, {0, 2});
    const std::vector<double> inputs = {0.4, 0.6, -0.8, 0.1}, params = {0.9, -0.3, 1.1, 0.75};
    const Batch<double> batch{2, inputs, params};
    // An evaluator of the recorded tape, or of a ReducedTape of other parameters.
    const reference::Vm recorded(tape), other(ReducedTape(tape, {0}).tape()), vm(reduced.tape());
    CHECK_THROWS_AS(reduced.gradient(recorded, batch), Error);
    CHECK_THROWS_AS(reduced.gradient(other, batch), Error);
    CHECK_NOTHROW(reduced.gradient(vm, batch));
    // Parameters per point, inputs one short, weights one short, a gradient buffer too small.
    const std::vector<double> per_point(8, 0.5), short_inputs(3, 0.5), short_weights(1, 1.0);
    CHECK_THROWS_AS(reduced.gradient(vm, Batch<double>{2, inputs, per_point}), ShapeError);
    CHECK_THROWS_AS(reduced.gradient(vm, Batch<double>{2, short_inputs, params}), ShapeError);
    CHECK_THROWS_AS(reduced.gradient(vm, batch, std::span<const double>(short_weights)), ShapeError);
    std::vector<double> gradient(1);
    CHECK_THROWS_AS(reduced.gradient(vm, batch, std::span<double>(gradient)), ShapeError);
    // Zero points: F = 0 and a zero gradient.
    const auto empty = reduced.gradient(vm, Batch<double>{0, {}, params});
    CHECK(empty.value == 0.0);
    CHECK(empty.gradient == std::vector<double>(2, 0.0));
}

}  // namespace
}  // namespace tapevm
