// The benchmark's ceres peer (bench/adbench_ceres.cpp): Ceres's AutoDiffCostFunction on the
// ADBench block Jacobians gives the reference VM's blocks, on one thread and on several.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "adbench_backend.hpp"
#include "split_mix64.hpp"
#include "tapevm/error.hpp"
#include "tapevm/examples.hpp"

using namespace tapevm::bench::adbench;
using tapevm::bench::Precision;

TEST_CASE("the ceres peer's reprojection and weight blocks equal the reference VM's") {
    // 203 observations (not a multiple of the pool's shares), inputs around ADBench's test point.
    constexpr std::size_t points = 203, n = tapevm::examples::ba_inputs;
    tapevm::support::SplitMix64 rng(11);
    std::vector<double> inputs, params, weights;
    for (std::size_t k = 0; k < points; ++k) {
        for (double v : tapevm::examples::ba_test_inputs) inputs.push_back(v * rng.uniform(0.9, 1.1));
        params.push_back(tapevm::examples::ba_test_feature[0] + rng.uniform(-5, 5));
        params.push_back(tapevm::examples::ba_test_feature[1] + rng.uniform(-5, 5));
        weights.push_back(rng.uniform(0.2, 1.0));
    }
    const tapevm::Batch<double> batch{points, inputs, params}, weight_batch{points, weights, {}};
    const auto reference = make_block_jacobians("reference", Precision::f64, 1);
    std::vector<double> want(points * 2 * n), want_weight(points);
    reference->reprojection(batch, want);
    reference->weight(weight_batch, want_weight);
    for (const unsigned threads : {1u, 3u}) {
        CAPTURE(threads);
        const auto ceres = make_block_jacobians("ceres", Precision::f64, threads);
        CHECK(ceres->name().find("ceres autodiff") == 0);
        std::vector<double> got(points * 2 * n, std::nan("")), got_weight(points, std::nan(""));
        ceres->reprojection(batch, got);
        ceres->weight(weight_batch, got_weight);
        double worst = 0;
        for (std::size_t i = 0; i < got.size(); ++i)
            worst = std::max(worst, std::abs(got[i] - want[i]) / std::max(1.0, std::abs(want[i])));
        CHECK(worst <= 1e-12);
        for (std::size_t k = 0; k < points; ++k)
            CHECK(got_weight[k] == doctest::Approx(-2 * weights[k]).epsilon(1e-15));
    }
    CHECK_THROWS_AS(make_block_jacobians("ceres", Precision::f32, 1), tapevm::Unsupported);
}
