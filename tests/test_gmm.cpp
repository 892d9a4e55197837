// ADBench's GMM objective (tapevm/gmm.hpp) through ReducedTape: the hand-written gradient
// against central differences of the hand-written objective; tapevm's reduced gradient (the
// point tape summed over the batch, plus the prior tape's gradient) against the hand-written
// one on the reference VM and the CPU VM; the same bits on 1 and 2 threads.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <tuple>
#include <utility>
#include <vector>

#include <doctest/doctest.h>

#include "tapevm/cpu.hpp"
#include "tapevm/error.hpp"
#include "tapevm/gmm.hpp"
#include "tapevm/reduced.hpp"
#include "tapevm/reference.hpp"

namespace tapevm {
namespace {

using examples::GmmInstance;

// E and dE/dtheta through tapevm: the point tape reduced over the points, the prior tape's
// value and gradient at theta.
struct TapevmGmm {
    double value = 0;
    std::vector<double> gradient;
};
TapevmGmm tapevm_gmm(const GmmInstance& g, const Evaluator& points_vm, const ReducedTape& reduced,
                     const Evaluator& prior_vm) {
    const std::vector<double> theta = g.theta();
    const ReducedGradient<double> sum = reduced.gradient(points_vm, Batch<double>{g.n, g.x, theta});
    const Evaluation<double> prior_value = prior_vm.forward(single_point<double>(theta));
    const Evaluation<double> prior_gradient = prior_vm.gradient(single_point<double>(theta));
    TapevmGmm out{sum.value + prior_value.values[0], sum.gradient};
    for (std::size_t j = 0; j < theta.size(); ++j) out.gradient[j] += prior_gradient.values[j];
    return out;
}

void check_close(const std::vector<double>& got, const std::vector<double>& want, double relative) {
    REQUIRE(got.size() == want.size());
    double scale = 0;
    for (const double w : want) scale = std::max(scale, std::fabs(w));
    for (std::size_t j = 0; j < got.size(); ++j) {
        INFO("entry " << j << ": " << got[j] << " against " << want[j]);
        CHECK(std::fabs(got[j] - want[j]) <= relative * std::max(std::fabs(want[j]), 1e-3 * scale));
    }
}

TEST_CASE("gmm: the hand-written gradient against central differences of the objective") {
    for (const auto& [d, k] : {std::pair<std::size_t, std::size_t>{1, 1}, {2, 3}, {3, 4}}) {
        GmmInstance g = examples::gmm_instance(d, k, 9, 5);
        g.m = 2;  // the prior's m term too
        g.gamma = 0.75;
        const std::vector<double> gradient = examples::gmm_gradient(g);
        std::vector<double> differences(gradient.size());
        std::vector<double> theta = g.theta();
        for (std::size_t j = 0; j < theta.size(); ++j) {
            const double h = 1e-6 * std::max(1.0, std::fabs(theta[j]));
            auto at = [&](double delta) {
                GmmInstance moved = g;
                std::vector<double> t = theta;
                t[j] += delta;
                std::copy_n(t.begin(), g.k, moved.alphas.begin());
                std::copy_n(t.begin() + static_cast<std::ptrdiff_t>(g.k), g.k * g.d, moved.means.begin());
                std::copy(t.begin() + static_cast<std::ptrdiff_t>(g.k + g.k * g.d), t.end(),
                          moved.icf.begin());
                return examples::gmm_objective(moved);
            };
            differences[j] = (at(h) - at(-h)) / (2 * h);
        }
        check_close(gradient, differences, 1e-5);
    }
}

TEST_CASE("gmm: tapevm's reduced gradient and value equal the hand-written ones") {
    for (const auto& [d, k, n] : {std::tuple<std::size_t, std::size_t, std::size_t>{2, 3, 50}, {4, 5, 130}}) {
        GmmInstance g = examples::gmm_instance(d, k, n, 11);
        g.m = 1;
        const ReducedTape reduced = ReducedTape::all_params(examples::gmm_point_tape(d, k));
        const Tape prior = examples::gmm_prior_tape(d, k, n, g.gamma, g.m);
        const double want_value = examples::gmm_objective(g);
        const std::vector<double> want = examples::gmm_gradient(g);
        const reference::Vm reference_vm(reduced.tape()), reference_prior(prior);
        const TapevmGmm on_reference = tapevm_gmm(g, reference_vm, reduced, reference_prior);
        CHECK(on_reference.value == doctest::Approx(want_value).epsilon(1e-12));
        check_close(on_reference.gradient, want, 1e-11);

        // The CPU VM on 1 and 2 threads: the same bits, and the hand-written gradient.
        cpu::Options one, two;
        one.threads = 1;
        two.threads = 2;
        const cpu::Vm cpu1(reduced.tape(), one), cpu2(reduced.tape(), two), cpu_prior(prior, one);
        const TapevmGmm on_one = tapevm_gmm(g, cpu1, reduced, cpu_prior);
        const TapevmGmm on_two = tapevm_gmm(g, cpu2, reduced, cpu_prior);
        CHECK(std::bit_cast<std::uint64_t>(on_one.value) == std::bit_cast<std::uint64_t>(on_two.value));
        for (std::size_t j = 0; j < want.size(); ++j)
            CHECK(std::bit_cast<std::uint64_t>(on_one.gradient[j]) ==
                  std::bit_cast<std::uint64_t>(on_two.gradient[j]));
        CHECK(on_one.value == doctest::Approx(want_value).epsilon(1e-12));
        check_close(on_one.gradient, want, 1e-11);
    }
}

TEST_CASE("gmm: the hand-written objective and gradient give the same bits on any thread count") {
    const GmmInstance g = examples::gmm_instance(3, 4, 300, 2);
    CHECK(std::bit_cast<std::uint64_t>(examples::gmm_objective(g, 1)) ==
          std::bit_cast<std::uint64_t>(examples::gmm_objective(g, 3)));
    CHECK(examples::gmm_gradient(g, 1) == examples::gmm_gradient(g, 3));
    CHECK_THROWS_AS(examples::gmm_instance(0, 4, 10, 1), Error);
    CHECK_THROWS_AS(examples::gmm_instance(2, 0, 10, 1), Error);
    CHECK_THROWS_AS(examples::gmm_instance(2, 4, 0, 1), Error);
}

}  // namespace
}  // namespace tapevm
