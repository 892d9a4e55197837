// Ceres Solver's AutoDiffCostFunction (Jets) as the ADBench BA Jacobian backend "ceres": the
// peer for tapevm inside Ceres (src/ceres). Each observation's reprojection block is
// differentiated by AutoDiffCostFunction<..., 2, 11, 3, 1> (camera, point, weight; the
// feature a constant of the functor) over the same template the tapes are recorded from
// (examples::ba_residual), on `threads` threads (a WorkerPool, contiguous shares); the weight
// rows by AutoDiffCostFunction<..., 1, 1> on the caller's threads (weight_in_parts). Built
// only with the ceres feature (bench/meson.build).
#include <array>
#include <memory>
#include <span>
#include <string>

#include <ceres/ceres.h>

#include "adbench_backend.hpp"
#include "tapevm/error.hpp"
#include "tapevm/examples.hpp"
#include "worker_pool.hpp"

namespace tapevm::bench::adbench {
namespace {

constexpr std::size_t n = examples::ba_inputs;

/// The reprojection residual with the weight as a parameter block; the feature is read from
/// the thread's current observation (one cost function per thread, set per observation).
struct Reprojection {
    const std::array<double, 2>* feature = nullptr;

    template <class T> bool operator()(const T* camera, const T* point, const T* weight, T* residual) const {
        std::array<T, n> x;
        for (std::size_t i = 0; i < examples::ba_point; ++i) x[i] = camera[i];
        for (std::size_t i = 0; i < 3; ++i) x[examples::ba_point + i] = point[i];
        x[examples::ba_weight] = weight[0];
        const auto r = examples::ba_residual<T, double>(std::span<const T>(x), feature->data());
        residual[0] = r[0];
        residual[1] = r[1];
        return true;
    }
};

struct WeightError {
    template <class T> bool operator()(const T* weight, T* error) const {
        error[0] = examples::ba_weight_error(weight[0]);
        return true;
    }
};

using ReprojectionCost = ::ceres::AutoDiffCostFunction<Reprojection, 2, 11, 3, 1>;
using WeightCost = ::ceres::AutoDiffCostFunction<WeightError, 1, 1>;

class CeresBlocks final : public BlockJacobians {
public:
    explicit CeresBlocks(unsigned threads) : pool_(threads) {}

    void reprojection(const Batch<double>& batch, std::span<double> jacobians) const override {
        pool_.run(batch.points, 64, [&](std::size_t begin, std::size_t end) {
            std::array<double, 2> feature{};
            const ReprojectionCost cost(new Reprojection{&feature});
            double residual[2], camera_jacobian[2 * 11], point_jacobian[2 * 3], weight_jacobian[2];
            double* blocks[3] = {camera_jacobian, point_jacobian, weight_jacobian};
            for (std::size_t k = begin; k < end; ++k) {
                const double* x = batch.inputs.data() + k * n;
                feature = {batch.params[2 * k], batch.params[2 * k + 1]};
                const double* parameters[3] = {x, x + examples::ba_point, x + examples::ba_weight};
                cost.Evaluate(parameters, residual, blocks);  // the functor always succeeds
                double* rows = jacobians.data() + k * 2 * n;
                for (std::size_t r = 0; r < 2; ++r) {
                    double* row = rows + r * n;
                    for (std::size_t i = 0; i < 11; ++i) row[i] = camera_jacobian[r * 11 + i];
                    for (std::size_t i = 0; i < 3; ++i)
                        row[examples::ba_point + i] = point_jacobian[r * 3 + i];
                    row[examples::ba_weight] = weight_jacobian[r];
                }
            }
        });
    }
    void reprojection(const Batch<float>&, std::span<float>) const override {
        throw Unsupported("ceres evaluates in double only");
    }
    void weight(const Batch<double>& batch, std::span<double> derivatives) const override {
        const WeightCost cost(new WeightError);
        for (std::size_t k = 0; k < batch.points; ++k) {
            const double* parameters[1] = {batch.inputs.data() + k};
            double error = 0;
            double* blocks[1] = {derivatives.data() + k};
            cost.Evaluate(parameters, &error, blocks);
        }
    }
    void weight(const Batch<float>&, std::span<float>) const override {
        throw Unsupported("ceres evaluates in double only");
    }
    bool weight_in_parts() const override { return true; }
    std::string name() const override {
        return "ceres autodiff (jets, " + std::to_string(pool_.threads()) +
               (pool_.threads() == 1 ? " thread)" : " threads)");
    }

private:
    mutable WorkerPool pool_;
};

}  // namespace

std::unique_ptr<BlockJacobians> make_ceres_block_jacobians(unsigned threads) {
    return std::make_unique<CeresBlocks>(threads == 0 ? 1 : threads);
}

}  // namespace tapevm::bench::adbench
