// The Ceres BA adapter (tapevm/ceres/ba.hpp): the batched buffers, the per-block cost
// function that reads them, and the checks.
#include "tapevm/ceres/ba.hpp"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstdint>
#include <cmath>
#include <cstring>
#include <numeric>
#include <unordered_map>

#include "tapevm/cpu.hpp"
#include "tapevm/error.hpp"
#include "tapevm/evaluator.hpp"
#include "tapevm/gpu.hpp"
#include "timing.hpp"

namespace tapevm::ceres {
namespace {

constexpr std::size_t inputs_per_observation = examples::ba_inputs;  // camera, point, weight
constexpr std::size_t jacobian_per_observation = residual_size * inputs_per_observation;
/// Lanes per block of the CPU Vm in f64: the value bench/adbench_backend.hpp measured fastest
/// for this tape (cpu_reprojection_block_lanes).
constexpr std::size_t cpu_block_lanes = 128;

using AutoDiffCost =
    ::ceres::AutoDiffCostFunction<AutoDiffReprojection, residual_size, camera_size, point_size>;

const std::string where = "tapevm::ceres::BaResiduals";

}  // namespace

::ceres::CostFunction* make_autodiff_reprojection(double weight, std::array<double, 2> feature) {
    return new AutoDiffCost(new AutoDiffReprojection{weight, feature});
}

class BatchedReprojection;

/// True when camera (11 values) and point (3) hold exactly the gathered inputs x[0, 14)
/// (bitwise: -0.0 and 0.0 differ, a NaN differs from itself), without a call to memcmp.
inline bool same_values(const double* camera, const double* x, const double* point) {
    std::uint64_t differ = 0;
    for (int i = 0; i < camera_size; ++i)
        differ |= std::bit_cast<std::uint64_t>(camera[i]) ^ std::bit_cast<std::uint64_t>(x[i]);
    for (int i = 0; i < point_size; ++i)
        differ |=
            std::bit_cast<std::uint64_t>(point[i]) ^ std::bit_cast<std::uint64_t>(x[examples::ba_point + i]);
    return differ == 0;
}

struct BaResiduals::State {
    Options options;
    std::unique_ptr<Evaluator> evaluator;
    // Per observation, in the order added: where its parameter blocks live, its constants,
    // its block.
    std::vector<const double*> cameras, points;
    std::vector<double> weights;
    std::vector<std::array<double, 2>> features;
    std::vector<BatchedReprojection*> blocks;
    // The buffers are in slot order (lay_out): observations grouped by point, points in the
    // order first added, the last added first within a point, which is about the order
    // Ceres's Schur solvers evaluate the blocks in (residual blocks grouped by their eliminated
    // block; the points are ordered by degree first), so that Evaluate reads the buffers
    // nearly front to back. Per slot: its observation's camera, point and weight.
    std::size_t laid_out = 0;
    std::vector<const double*> slot_cameras, slot_points;
    std::vector<double> slot_weights;
    // The last evaluation, per slot: inputs [p][15], params (features) [p][2], values [p][2],
    // jacobians [p][2][15]; which slots Jets take (off the recorded branch).
    std::vector<double> inputs, params, values, jacobians;
    std::vector<std::size_t> diverged;
    std::vector<unsigned char> use_jets;
    bool have_values = false, have_jacobians = false;
    Timings timings;
    mutable std::atomic<std::size_t> jets_blocks{0};
};

/// One observation's block: copies from the adapter's buffers when they hold this block's
/// parameters, else computes with Jets.
class BatchedReprojection final : public ::ceres::SizedCostFunction<residual_size, camera_size, point_size> {
public:
    BatchedReprojection(const BaResiduals::State& state, std::size_t index) : state_(state), index_(index) {}

    /// Where this block's values are in the buffers (set by lay_out before any evaluation).
    void set_slot(std::size_t slot) { slot_ = slot; }

    bool Evaluate(double const* const* parameters, double* residuals, double** jacobians) const override {
        const BaResiduals::State& s = state_;
        const bool want_jacobians =
            jacobians != nullptr && (jacobians[0] != nullptr || jacobians[1] != nullptr);
        const double* x = s.inputs.data() + slot_ * inputs_per_observation;
        prefetch_ahead(s);
        const bool prepared = (want_jacobians ? s.have_jacobians : (s.have_values || s.have_jacobians)) &&
                              !s.use_jets[slot_] && same_values(parameters[0], x, parameters[1]);
        if (!prepared) return evaluate_with_jets(parameters, residuals, jacobians);
        if (s.have_jacobians) {
            // Row r of the [2][15] block: camera columns 0-10, point 11-13, weight 14.
            const double* jacobian = s.jacobians.data() + slot_ * jacobian_per_observation;
            const double weight = s.slot_weights[slot_];
            for (int r = 0; r < residual_size; ++r) {
                const double* row = jacobian + r * inputs_per_observation;
                residuals[r] = weight * row[examples::ba_weight];
                if (!want_jacobians) continue;
                if (jacobians[0] != nullptr)
                    std::memcpy(jacobians[0] + r * camera_size, row, camera_size * sizeof(double));
                if (jacobians[1] != nullptr)
                    std::memcpy(jacobians[1] + r * point_size, row + examples::ba_point,
                                point_size * sizeof(double));
            }
        } else {
            for (int r = 0; r < residual_size; ++r) residuals[r] = s.values[slot_ * residual_size + r];
        }
        return true;
    }

    const BaResiduals::State* owner() const { return &state_; }

private:
    bool evaluate_with_jets(double const* const* parameters, double* residuals, double** jacobians) const {
        state_.jets_blocks.fetch_add(1, std::memory_order_relaxed);
        const AutoDiffCost cost(new AutoDiffReprojection{state_.weights[index_], state_.features[index_]});
        return cost.Evaluate(parameters, residuals, jacobians);
    }

    /// Ceres evaluates the blocks about in slot order, each after a few hundred cycles of its
    /// own work: fetch the rows of a block a few slots ahead now so that they are in cache when
    /// its turn comes (the hardware prefetcher does not follow this pattern).
    void prefetch_ahead(const BaResiduals::State& s) const {
        constexpr std::size_t ahead = 8;
        if (slot_ + ahead >= s.slot_weights.size()) return;
        const double* x = s.inputs.data() + (slot_ + ahead) * inputs_per_observation;
        const double* j = (s.have_jacobians ? s.jacobians.data() : s.values.data()) +
                          (slot_ + ahead) * (s.have_jacobians ? jacobian_per_observation : residual_size);
        for (std::size_t line = 0; line < inputs_per_observation * sizeof(double); line += 64)
            __builtin_prefetch(reinterpret_cast<const char*>(x) + line);
        if (!s.have_jacobians) return __builtin_prefetch(j);
        for (std::size_t line = 0; line < jacobian_per_observation * sizeof(double); line += 64)
            __builtin_prefetch(reinterpret_cast<const char*>(j) + line);
    }

    const BaResiduals::State& state_;
    std::size_t index_, slot_ = 0;
};

namespace {

/// Puts the buffers in slot order (State) and tells each block its slot; resets what the
/// buffers held.
void lay_out(BaResiduals::State& s) {
    const std::size_t p = s.cameras.size();
    std::unordered_map<const double*, std::size_t> point_rank;
    for (const double* point : s.points) point_rank.emplace(point, point_rank.size());
    std::vector<std::size_t> order(p);
    std::iota(order.begin(), order.end(), std::size_t{0});
    // Within a point, the last added first: Ceres's bucket sort of the residual blocks
    // (LexicographicallyOrderResidualBlocks, Ceres 2.1) places each bucket's blocks from its end.
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        const std::size_t rank_a = point_rank[s.points[a]], rank_b = point_rank[s.points[b]];
        return rank_a != rank_b ? rank_a < rank_b : a > b;
    });
    s.slot_cameras.resize(p);
    s.slot_points.resize(p);
    s.slot_weights.resize(p);
    s.params.resize(p * 2);
    for (std::size_t slot = 0; slot < p; ++slot) {
        const std::size_t k = order[slot];
        s.slot_cameras[slot] = s.cameras[k];
        s.slot_points[slot] = s.points[k];
        s.slot_weights[slot] = s.weights[k];
        std::copy_n(s.features[k].data(), 2, s.params.data() + 2 * slot);
        s.blocks[k]->set_slot(slot);
    }
    s.use_jets.assign(p, 0);
    s.diverged.clear();
    s.have_values = s.have_jacobians = false;
    s.laid_out = p;
}

}  // namespace

BaResiduals::BaResiduals(Options options) : state_(std::make_unique<State>()) {
    state_->options = options;
    Tape tape = examples::example_tape("ba-param");
    if (options.device == Device::cpu) {
        cpu::Options cpu_options;
        cpu_options.threads = options.threads;
        cpu_options.block_lanes = cpu_block_lanes;
        state_->evaluator = std::make_unique<cpu::Vm>(std::move(tape), cpu_options);
    } else {
        gpu::Options gpu_options;
        gpu_options.device = options.gpu_device;
        state_->evaluator = std::make_unique<gpu::Vm>(std::move(tape), gpu_options);
    }
}

BaResiduals::~BaResiduals() = default;

::ceres::ResidualBlockId BaResiduals::add_residual_block(::ceres::Problem& problem, std::span<double> camera,
                                                         std::span<double> point, double weight,
                                                         std::array<double, 2> feature) {
    const std::string call = where + "::add_residual_block";
    if (camera.size() != camera_size)
        throw Error(call + ": camera has " + std::to_string(camera.size()) + " values, expected " +
                    std::to_string(camera_size));
    if (point.size() != point_size)
        throw Error(call + ": point has " + std::to_string(point.size()) + " values, expected " +
                    std::to_string(point_size));
    if (problem.HasParameterBlock(camera.data()) && problem.ParameterBlockSize(camera.data()) != camera_size)
        throw Error(call + ": camera: the problem already has this parameter block with " +
                    std::to_string(problem.ParameterBlockSize(camera.data())) + " values, expected " +
                    std::to_string(camera_size));
    if (problem.HasParameterBlock(point.data()) && problem.ParameterBlockSize(point.data()) != point_size)
        throw Error(call + ": point: the problem already has this parameter block with " +
                    std::to_string(problem.ParameterBlockSize(point.data())) + " values, expected " +
                    std::to_string(point_size));
    if (camera.data() == point.data()) throw Error(call + ": camera and point are the same parameter block");
    if (!std::isfinite(weight)) throw Error(call + ": weight is not finite");
    if (!std::isfinite(feature[0]) || !std::isfinite(feature[1]))
        throw Error(call + ": feature is not finite");

    State& s = *state_;
    const std::size_t index = s.cameras.size();
    auto block = std::make_unique<BatchedReprojection>(s, index);
    s.cameras.push_back(camera.data());
    s.points.push_back(point.data());
    s.weights.push_back(weight);
    s.features.push_back(feature);
    s.blocks.push_back(block.get());
    s.have_values = s.have_jacobians = false;
    s.laid_out = 0;
    return problem.AddResidualBlock(block.release(), nullptr, camera.data(), point.data());
}

void BaResiduals::check_problem(const ::ceres::Problem& problem) {
    const std::string call = where + "::check_problem";
    std::vector<::ceres::ResidualBlockId> ids;
    problem.GetResidualBlocks(&ids);
    for (std::size_t i = 0; i < ids.size(); ++i) {
        const auto* block =
            dynamic_cast<const BatchedReprojection*>(problem.GetCostFunctionForResidualBlock(ids[i]));
        if (block == nullptr || block->owner() != state_.get())
            throw Error(
                call + ": residual block " + std::to_string(i) +
                " is not a BA reprojection block of this adapter (add blocks with add_residual_block)");
        std::vector<double*> blocks;
        problem.GetParameterBlocksForResidualBlock(ids[i], &blocks);
        if (blocks.size() != 2 || problem.ParameterBlockSize(blocks[0]) != camera_size ||
            problem.ParameterBlockSize(blocks[1]) != point_size)
            throw Error(call + ": residual block " + std::to_string(i) +
                        ": parameter blocks are not a camera of 11 and a point of 3 values");
    }
    if (ids.size() != state_->blocks.size())
        throw Error(call + ": the problem has " + std::to_string(ids.size()) +
                    " residual blocks, the adapter added " + std::to_string(state_->blocks.size()) +
                    " (a block was removed)");
    if (state_->laid_out != state_->blocks.size()) lay_out(*state_);
}

void BaResiduals::PrepareForEvaluation(bool evaluate_jacobians, bool new_evaluation_point) {
    State& s = *state_;
    if (!new_evaluation_point && (s.have_jacobians || (!evaluate_jacobians && s.have_values))) return;
    const std::size_t p = s.cameras.size();
    auto start = support::Clock::now();
    if (s.laid_out != p) lay_out(s);
    s.inputs.resize(p * inputs_per_observation);
    for (std::size_t slot = 0; slot < p; ++slot) {
        double* x = s.inputs.data() + slot * inputs_per_observation;
        std::memcpy(x, s.slot_cameras[slot], camera_size * sizeof(double));
        std::memcpy(x + examples::ba_point, s.slot_points[slot], point_size * sizeof(double));
        x[examples::ba_weight] = s.slot_weights[slot];
    }
    s.timings.gather += support::seconds_since(start);
    start = support::Clock::now();
    const Batch<double> batch{p, s.inputs, s.params};
    s.have_values = s.have_jacobians = false;
    for (std::size_t slot : s.diverged) s.use_jets[slot] = 0;
    Report report;
    if (evaluate_jacobians) {
        s.jacobians.resize(p * jacobian_per_observation);
        report = s.evaluator->jacobian(batch, std::span<double>(s.jacobians));
        s.have_jacobians = true;
        ++s.timings.jacobian_calls;
    } else {
        s.values.resize(p * residual_size);
        report = s.evaluator->forward(batch, std::span<double>(s.values));
        s.have_values = true;
        ++s.timings.value_calls;
    }
    s.diverged = std::move(report.diverged);
    for (std::size_t slot : s.diverged) s.use_jets[slot] = 1;
    (evaluate_jacobians ? s.timings.jacobians : s.timings.values) += support::seconds_since(start);
}

std::size_t BaResiduals::observations() const { return state_->cameras.size(); }
std::string BaResiduals::evaluator_name() const { return state_->evaluator->name(); }
std::size_t BaResiduals::diverged() const { return state_->diverged.size(); }
const Timings& BaResiduals::timings() const { return state_->timings; }
std::size_t BaResiduals::jets_blocks() const { return state_->jets_blocks.load(std::memory_order_relaxed); }

}  // namespace tapevm::ceres
