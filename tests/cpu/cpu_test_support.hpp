// Shared by the CPU VM suites: random batches for the example tapes and the comparison of a
// CPU VM result with the reference VM's, all operations at once.
#pragma once

#include <cmath>
#include <cstddef>
#include <random>
#include <span>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "../test_util.hpp"
#include "tapevm/cpu.hpp"
#include "tapevm/examples.hpp"
#include "tapevm/reference.hpp"

namespace tapevm::cpu_test {

/// Inputs, params, cotangents and directions for `points` points of `tape`. The BA tapes get
/// points near ADBench's test instance (where their values are meaningful), the others
/// uniform in [-2, 2].
template <class Real> struct RandomBatch {
    std::size_t points = 0;
    std::vector<Real> inputs, params, cotangents, directions;

    RandomBatch(const Tape& tape, std::size_t count, std::uint64_t seed, bool ba_like) : points(count) {
        std::mt19937_64 generator(seed);
        std::uniform_real_distribution<double> uniform(-2.0, 2.0);
        const std::size_t n = tape.input_count();
        inputs.resize(points * n);
        for (std::size_t p = 0; p < points; ++p) {
            for (std::size_t i = 0; i < n; ++i) {
                const double u = uniform(generator);
                inputs[p * n + i] =
                    static_cast<Real>(ba_like ? examples::ba_test_inputs[i] * (1 + 0.05 * u) : u);
            }
        }
        params.resize(points * tape.param_count());
        for (Real& v : params) v = static_cast<Real>(ba_like ? 100 * uniform(generator) : uniform(generator));
        cotangents.resize(points * tape.output_count());
        for (Real& v : cotangents) v = static_cast<Real>(uniform(generator));
        directions.resize(points * n);
        for (Real& v : directions) v = static_cast<Real>(uniform(generator));
    }
    Batch<Real> batch() const { return {points, inputs, params}; }
};

inline bool is_ba(const std::string& name) { return name.rfind("ba", 0) == 0; }

/// Relative tolerance (to max(1, |value|)) of CPU against reference results in Real: double
/// differs in the last bits of the transcendental functions; float also by the cancellation
/// in BA's residual (feature - projection of ~1e3).
template <class Real> double tolerance(const std::string& tape_name) {
    if constexpr (sizeof(Real) == 8) {
        return 1e-11;
    } else {
        return is_ba(tape_name) ? 3e-3 : 2e-5;
    }
}

/// Checks every element of `got` against `expected` (both NaN counts as equal).
template <class Real>
void check_close(const std::vector<Real>& got, const std::vector<Real>& expected, double relative,
                 const std::string& what) {
    REQUIRE(got.size() == expected.size());
    std::size_t bad = 0;
    std::size_t first_bad = 0;
    for (std::size_t k = 0; k < got.size(); ++k) {
        if (!test::close(got[k], expected[k], relative)) {
            if (bad++ == 0) first_bad = k;
        }
    }
    INFO(what << ": " << bad << " of " << got.size() << " differ; first at " << first_bad << ": "
              << (bad ? double(got[first_bad]) : 0.0) << " vs " << (bad ? double(expected[first_bad]) : 0.0));
    CHECK(bad == 0);
}

/// Every operation of `vm` against `reference` on `data`: results within `relative`,
/// diverged lists equal.
template <class Real>
void check_all_operations(const Evaluator& vm, const Evaluator& reference, const RandomBatch<Real>& data,
                          double relative, const std::string& what) {
    const Batch<Real> batch = data.batch();
    const auto compare = [&](const Evaluation<Real>& got, const Evaluation<Real>& expected,
                             const char* operation) {
        check_close(got.values, expected.values, relative, what + " " + operation);
        CHECK_MESSAGE(got.report.diverged == expected.report.diverged, what << " " << operation << " guards");
    };
    compare(vm.forward(batch), reference.forward(batch), "forward");
    if (vm.tape().output_count() == 1) compare(vm.gradient(batch), reference.gradient(batch), "gradient");
    compare(vm.jacobian(batch, JacobianMode::forward), reference.jacobian(batch, JacobianMode::forward),
            "jacobian forward");
    compare(vm.jacobian(batch, JacobianMode::reverse), reference.jacobian(batch, JacobianMode::reverse),
            "jacobian reverse");
    const std::span<const Real> cotangents(data.cotangents);
    const std::span<const Real> directions(data.directions);
    compare(vm.jvp(batch, directions), reference.jvp(batch, directions), "jvp");
    compare(vm.vjp(batch, cotangents), reference.vjp(batch, cotangents), "vjp");
    compare(vm.hvp(batch, cotangents, directions), reference.hvp(batch, cotangents, directions), "hvp");
}

}  // namespace tapevm::cpu_test
