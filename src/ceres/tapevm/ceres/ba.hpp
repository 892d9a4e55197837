// Ceres Solver adapter for bundle adjustment (issue 23 item 5): every reprojection residual
// block of a ceres::Problem evaluated by one batched tapevm Jacobian per Ceres evaluation.
//
// How it works. BaResiduals is the problem's ceres::EvaluationCallback. Before each
// evaluation Ceres calls PrepareForEvaluation (the parameter blocks then hold the point being
// evaluated); it gathers every observation's 15 inputs (camera 11, point 3, weight) and runs
// one batched call of the ADBench reprojection tape (examples::example_tape("ba-param"), the
// same recording `tapevm adbench ba` measures): a Jacobian when Ceres asks for Jacobians, else
// values only. Each residual block's CostFunction::Evaluate then copies its two residuals and
// its 2x11 and 2x3 Jacobian blocks out of those buffers.
//
// The residual is ADBench's w (proj - feature) with the weight w and the feature constants of
// the observation: the parameter blocks are the camera (11 values, ADBench's layout) and the
// point (3). The residuals come out of the same Jacobian call: d r / d w = proj - feature
// exactly, so r = w * (d r / d w) is the value the forward pass gives, bit for bit.
//
// Where a block cannot take its values from the buffers (its parameters are not those
// PrepareForEvaluation gathered, as when the problem was built without this callback, or the
// observation leaves the recorded branch: a zero rotation vector), Evaluate computes the block
// itself with Ceres's Jets (AutoDiffReprojection below), so the result is always right.
#pragma once

#include <array>
#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <ceres/ceres.h>

#include "tapevm/examples.hpp"

namespace tapevm::ceres {

/// Values per parameter block and residuals per block.
inline constexpr int camera_size = 11, point_size = 3, residual_size = 2;

/// The reprojection residual as a templated functor for ceres::AutoDiffCostFunction<
/// AutoDiffReprojection, 2, 11, 3> (the peer the adapter is measured against), written with
/// the same template the tape is recorded from (examples::ba_residual).
struct AutoDiffReprojection {
    double weight = 1;
    std::array<double, 2> feature{};

    template <class T> bool operator()(const T* camera, const T* point, T* residual) const {
        std::array<T, examples::ba_inputs> x;
        for (int i = 0; i < camera_size; ++i) x[i] = camera[i];
        for (int i = 0; i < point_size; ++i) x[examples::ba_point + i] = point[i];
        x[examples::ba_weight] = T(weight);
        const auto r = examples::ba_residual<T, double>(std::span<const T>(x), feature.data());
        residual[0] = r[0];
        residual[1] = r[1];
        return true;
    }
};

/// A new AutoDiffCostFunction for one observation (the caller or the problem owns it).
::ceres::CostFunction* make_autodiff_reprojection(double weight, std::array<double, 2> feature);

enum class Device { cpu, gpu };

struct Options {
    Device device = Device::cpu;
    /// CPU worker threads, the calling one included; 0: all hardware threads.
    unsigned threads = 0;
    /// GPU device selection (gpu::Options::device): "" = TAPEVM_DEVICE, else the first GPU.
    std::string gpu_device;
};

/// PrepareForEvaluation's calls that evaluated values only and Jacobians, and the seconds
/// spent gathering the inputs and in the batched calls of each kind, summed over calls.
struct Timings {
    std::size_t value_calls = 0, jacobian_calls = 0;
    double gather = 0, values = 0, jacobians = 0;
};

/// The evaluation callback that owns the batched buffers. Create it, create the problem with
/// Problem::Options::evaluation_callback = &adapter (the adapter must outlive the problem),
/// then add each observation with add_residual_block. The problem owns the blocks' cost
/// functions: removing one of them from the problem is not supported (check_problem says so
/// when it was). Not thread-safe while adding; Evaluate (called from Ceres's threads) only
/// reads. The buffers are laid out in the order Ceres's Schur solvers evaluate the blocks
/// (grouped by point), so Evaluate reads them front to back.
class BaResiduals final : public ::ceres::EvaluationCallback {
public:
    /// Throws tapevm::Unsupported for Device::gpu in a build without the GPU VM and
    /// DeviceUnavailable when no GPU is found.
    explicit BaResiduals(Options options = {});
    ~BaResiduals() override;
    BaResiduals(const BaResiduals&) = delete;
    BaResiduals& operator=(const BaResiduals&) = delete;

    /// Adds one observation's residual block to `problem` (its cost function is owned by the
    /// problem) and returns its id. `camera` must hold 11 values and `point` 3, and where the
    /// problem already has either block it must have that size; `weight` and `feature` must be
    /// finite. Anything else throws tapevm::Error naming the argument.
    ::ceres::ResidualBlockId add_residual_block(::ceres::Problem& problem, std::span<double> camera,
                                                std::span<double> point, double weight,
                                                std::array<double, 2> feature);

    /// Throws tapevm::Error unless every residual block of `problem` is one this adapter
    /// added (with a camera of 11 and a point of 3 values) and every block it added is there:
    /// a problem whose blocks are not this adapter's BA blocks is not one it can evaluate.
    /// Then lays the buffers out for the blocks added (done by the first evaluation
    /// otherwise, inside Ceres's timing): call it once after the last add_residual_block.
    void check_problem(const ::ceres::Problem& problem);

    /// EvaluationCallback: evaluates every observation at the parameter blocks' current
    /// values, the Jacobian when `evaluate_jacobians`, else the residuals. When the point is
    /// not new and what is asked for is already there, does nothing.
    void PrepareForEvaluation(bool evaluate_jacobians, bool new_evaluation_point) override;

    std::size_t observations() const;
    /// "cpu (avx2, 2 threads)", "gpu (NVIDIA H100 ...)".
    std::string evaluator_name() const;
    /// Observations that the last evaluation left to Jets (off the recorded branch).
    std::size_t diverged() const;
    const Timings& timings() const;
    /// Block evaluations that Jets computed (not from the buffers), summed over calls.
    std::size_t jets_blocks() const;

    struct State;  // the buffers and the evaluator (ba.cpp)

private:
    std::unique_ptr<State> state_;
};

}  // namespace tapevm::ceres
