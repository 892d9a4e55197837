// tapevm::ceres::BaResiduals (src/ceres) against Ceres's own AutoDiffCostFunction on the same
// residual: every block's residuals and Jacobians, through the problem and block by block, the
// Jets fallback, a whole solve, and bad input.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "split_mix64.hpp"
#include "tapevm/ceres/ba.hpp"
#include "tapevm/error.hpp"

namespace {

using tapevm::ceres::BaResiduals;
using tapevm::ceres::camera_size;
using tapevm::ceres::point_size;

/// A small BA problem with distinct cameras and points: features are the projections of the
/// true values, the initial values are the true ones perturbed.
struct SmallBa {
    std::size_t cameras = 6, points = 50, observations = 300;
    std::vector<double> camera_values, point_values, weights, features;
    std::vector<int> observation_camera, observation_point;

    explicit SmallBa(std::uint64_t seed) {
        tapevm::support::SplitMix64 rng(seed);
        // ADBench ba1's camera and point, varied.
        const double camera[11] = {-0.758453,  -1.109613, -0.845551, 34.556073, 39.676747, 53.881673,
                                   419.194514, 5.864426,  -8.518870, 0.087812,  0.002739};
        const double point[3] = {7.203245, 0.001144, 3.023326};
        std::vector<double> true_cameras, true_points;
        for (std::size_t c = 0; c < cameras; ++c)
            for (double v : camera) true_cameras.push_back(v * rng.uniform(0.9, 1.1));
        for (std::size_t j = 0; j < points; ++j)
            for (int i = 0; i < 3; ++i) true_points.push_back(point[i] + rng.uniform(-2, 2));
        for (std::size_t k = 0; k < observations; ++k) {
            const int c = static_cast<int>(k % cameras), j = static_cast<int>((k * 7) % points);
            observation_camera.push_back(c);
            observation_point.push_back(j);
            weights.push_back(rng.uniform(0.3, 1.0));
            // The feature the true values project to: the residual with a zero feature is w * proj.
            const tapevm::ceres::AutoDiffReprojection zero{1.0, {0.0, 0.0}};
            double projected[2];
            zero(true_cameras.data() + 11 * c, true_points.data() + 3 * j, projected);
            features.push_back(projected[0] + rng.uniform(-0.5, 0.5));
            features.push_back(projected[1] + rng.uniform(-0.5, 0.5));
        }
        camera_values = true_cameras;
        point_values = true_points;
        for (double& v : camera_values) v *= rng.uniform(0.995, 1.005);
        for (double& v : point_values) v += rng.uniform(-0.05, 0.05);
    }

    std::array<double, 2> feature(std::size_t k) const { return {features[2 * k], features[2 * k + 1]}; }
};

/// A ceres::Problem over its own copy of the values, built with the adapter or with
/// AutoDiffCostFunction.
struct Built {
    std::vector<double> cameras, points;
    std::unique_ptr<BaResiduals> adapter;
    std::unique_ptr<ceres::Problem> problem;
    std::vector<ceres::ResidualBlockId> blocks;

    Built(const SmallBa& ba, bool use_adapter) : cameras(ba.camera_values), points(ba.point_values) {
        ceres::Problem::Options options;
        if (use_adapter) {
            adapter =
                std::make_unique<BaResiduals>(tapevm::ceres::Options{tapevm::ceres::Device::cpu, 2, ""});
            options.evaluation_callback = adapter.get();
        }
        problem = std::make_unique<ceres::Problem>(options);
        for (std::size_t k = 0; k < ba.observations; ++k) {
            double* camera = cameras.data() + 11 * ba.observation_camera[k];
            double* point = points.data() + 3 * ba.observation_point[k];
            if (adapter)
                blocks.push_back(adapter->add_residual_block(*problem, {camera, 11}, {point, 3},
                                                             ba.weights[k], ba.feature(k)));
            else
                blocks.push_back(problem->AddResidualBlock(
                    tapevm::ceres::make_autodiff_reprojection(ba.weights[k], ba.feature(k)), nullptr, camera,
                    point));
        }
    }
};

double relative(double a, double b) { return std::abs(a - b) / std::max(1.0, std::abs(a) + std::abs(b)); }

void check_close(const std::vector<double>& got, const std::vector<double>& want, const char* what) {
    REQUIRE(got.size() == want.size());
    double worst = 0;
    for (std::size_t i = 0; i < got.size(); ++i) worst = std::max(worst, relative(got[i], want[i]));
    INFO(what);
    CHECK(worst <= 1e-10);
}

/// Every block's residuals and Jacobians through `problem`'s cost functions, evaluated at the
/// current values (`jacobians` false: residuals only).
std::vector<double> blocks_of(const Built& built, bool jacobians) {
    std::vector<double> out;
    for (ceres::ResidualBlockId id : built.blocks) {
        std::vector<double*> parameters;
        built.problem->GetParameterBlocksForResidualBlock(id, &parameters);
        double residuals[2], camera_jacobian[22], point_jacobian[6];
        double* jacobian_pointers[2] = {camera_jacobian, point_jacobian};
        const double* const values[2] = {parameters[0], parameters[1]};
        REQUIRE(built.problem->GetCostFunctionForResidualBlock(id)->Evaluate(
            values, residuals, jacobians ? jacobian_pointers : nullptr));
        out.insert(out.end(), residuals, residuals + 2);
        if (jacobians) {
            out.insert(out.end(), camera_jacobian, camera_jacobian + 22);
            out.insert(out.end(), point_jacobian, point_jacobian + 6);
        }
    }
    return out;
}

}  // namespace

TEST_CASE("the adapter's residuals and Jacobians equal AutoDiffCostFunction's") {
    const SmallBa ba(23);
    Built tapevm_built(ba, true), autodiff(ba, false);
    tapevm_built.adapter->check_problem(*tapevm_built.problem);

    SUBCASE("through Problem::Evaluate (the callback prepares, the blocks copy)") {
        double cost_a = 0, cost_b = 0;
        std::vector<double> residuals_a, residuals_b;
        ceres::CRSMatrix jacobian_a, jacobian_b;
        REQUIRE(tapevm_built.problem->Evaluate({}, &cost_a, &residuals_a, nullptr, &jacobian_a));
        REQUIRE(autodiff.problem->Evaluate({}, &cost_b, &residuals_b, nullptr, &jacobian_b));
        CHECK(tapevm_built.adapter->timings().jacobian_calls >= 1);
        CHECK(tapevm_built.adapter->diverged() == 0);
        CHECK(tapevm_built.adapter->jets_blocks() == 0);  // every block from the buffers
        CHECK(relative(cost_a, cost_b) <= 1e-10);
        CHECK(cost_a > 1.0);  // a problem with something to solve
        check_close(residuals_a, residuals_b, "residuals");
        CHECK(jacobian_a.cols == jacobian_b.cols);
        CHECK(jacobian_a.rows == jacobian_b.rows);
        CHECK(jacobian_a.values.size() == ba.observations * 28);
        check_close(jacobian_a.values, jacobian_b.values, "Jacobian values");
    }
    SUBCASE("block by block, residuals only and with Jacobians") {
        tapevm_built.adapter->PrepareForEvaluation(false, true);
        CHECK(tapevm_built.adapter->timings().value_calls == 1);
        check_close(blocks_of(tapevm_built, false), blocks_of(autodiff, false),
                    "residuals from the forward pass");
        CHECK(tapevm_built.adapter->jets_blocks() == 0);
        // Jacobians asked for where only values were evaluated: Jets, still right.
        check_close(blocks_of(tapevm_built, true), blocks_of(autodiff, true),
                    "blocks before the Jacobian pass");
        CHECK(tapevm_built.adapter->jets_blocks() == ba.observations);
        tapevm_built.adapter->PrepareForEvaluation(true, false);
        CHECK(tapevm_built.adapter->timings().jacobian_calls == 1);
        check_close(blocks_of(tapevm_built, true), blocks_of(autodiff, true),
                    "blocks from the Jacobian pass");
        CHECK(tapevm_built.adapter->jets_blocks() == ba.observations);
        // Same point, already there: nothing is evaluated again.
        tapevm_built.adapter->PrepareForEvaluation(true, false);
        CHECK(tapevm_built.adapter->timings().jacobian_calls == 1);
    }
    SUBCASE("values the callback did not gather go to Jets, still right") {
        tapevm_built.adapter->PrepareForEvaluation(true, true);
        for (double& v : tapevm_built.points) v += 0.25;
        for (double& v : autodiff.points) v += 0.25;
        check_close(blocks_of(tapevm_built, true), blocks_of(autodiff, true),
                    "blocks after the values moved");
        CHECK(tapevm_built.adapter->jets_blocks() == ba.observations);
    }
    SUBCASE("an observation off the recorded branch (zero rotation) goes to Jets") {
        for (int i = 0; i < 3; ++i) tapevm_built.cameras[i] = autodiff.cameras[i] = 0.0;
        tapevm_built.adapter->PrepareForEvaluation(true, true);
        CHECK(tapevm_built.adapter->diverged() == ba.observations / ba.cameras);
        check_close(blocks_of(tapevm_built, true), blocks_of(autodiff, true),
                    "blocks with camera 0 unrotated");
        CHECK(tapevm_built.adapter->jets_blocks() == ba.observations / ba.cameras);
    }
}

TEST_CASE("a solve through the adapter reaches AutoDiffCostFunction's final cost") {
    const SmallBa ba(5);
    Built tapevm_built(ba, true), autodiff(ba, false);
    ceres::Solver::Options options;
    options.linear_solver_type = ceres::DENSE_SCHUR;
    options.max_num_iterations = 20;
    options.num_threads = 2;
    options.logging_type = ceres::SILENT;
    ceres::Solver::Summary a, b;
    ceres::Solve(options, tapevm_built.problem.get(), &a);
    ceres::Solve(options, autodiff.problem.get(), &b);
    INFO(a.BriefReport());
    INFO(b.BriefReport());
    CHECK(a.IsSolutionUsable());
    CHECK(a.initial_cost == doctest::Approx(b.initial_cost).epsilon(1e-10));
    CHECK(a.final_cost < 1e-2 * a.initial_cost);
    CHECK(std::abs(a.final_cost - b.final_cost) <= 1e-8 * a.initial_cost);
    CHECK(tapevm_built.adapter->timings().jacobian_calls >= 2);
    CHECK(tapevm_built.adapter->jets_blocks() == 0);
}

TEST_CASE("bad input is a tapevm::Error naming the argument") {
    const SmallBa ba(7);
    BaResiduals adapter(tapevm::ceres::Options{tapevm::ceres::Device::cpu, 1, ""});
    ceres::Problem::Options options;
    options.evaluation_callback = &adapter;
    ceres::Problem problem(options);
    std::vector<double> camera(ba.camera_values.begin(), ba.camera_values.begin() + 12);
    std::vector<double> point(ba.point_values.begin(), ba.point_values.begin() + 4);
    const std::array<double, 2> feature = ba.feature(0);
    CHECK_THROWS_WITH_AS(
        adapter.add_residual_block(problem, {camera.data(), 10}, {point.data(), 3}, 1.0, feature),
        doctest::Contains("camera has 10 values, expected 11"), tapevm::Error);
    CHECK_THROWS_WITH_AS(
        adapter.add_residual_block(problem, {camera.data(), 11}, {point.data(), 4}, 1.0, feature),
        doctest::Contains("point has 4 values, expected 3"), tapevm::Error);
    CHECK_THROWS_WITH_AS(
        adapter.add_residual_block(problem, {camera.data(), 11}, {point.data(), 3}, std::nan(""), feature),
        doctest::Contains("weight is not finite"), tapevm::Error);
    problem.AddParameterBlock(point.data(), 4);
    CHECK_THROWS_WITH_AS(
        adapter.add_residual_block(problem, {camera.data(), 11}, {point.data(), 3}, 1.0, feature),
        doctest::Contains("point: the problem already has this parameter block with 4 values"),
        tapevm::Error);
    CHECK(adapter.observations() == 0);

    // A problem whose blocks are not the adapter's BA blocks.
    ceres::Problem other(options);
    std::vector<double> camera2(camera), point2(3, 1.0);
    adapter.add_residual_block(other, {camera2.data(), 11}, {point2.data(), 3}, 1.0, feature);
    adapter.check_problem(other);
    other.AddResidualBlock(tapevm::ceres::make_autodiff_reprojection(1.0, feature), nullptr, camera2.data(),
                           point2.data());
    CHECK_THROWS_WITH_AS(adapter.check_problem(other),
                         doctest::Contains("residual block 1 is not a BA reprojection block"), tapevm::Error);
}
