// The training loop: Trainer::fit runs optimizer steps over micro-batches with gradient
// accumulation, clipping, a learning-rate schedule, optional fp16 loss scaling and periodic
// validation, and reports every step to a callback (the logger hook; checkpoint from there
// with save_checkpoint, which lives in checkpoint.cpp, library tapevm_nn_train_io).
//
// Batches come from a BatchSource: a function of the batch's global index (step x
// accumulation + micro-batch), so the data position is the step count and resuming from a
// checkpoint replays exactly the batches a straight run would have seen.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "tapevm/nn/gpt.hpp"
#include "tapevm/nn/module.hpp"
#include "tapevm/nn/optim.hpp"

namespace tapevm::nn {

struct Batch {
    Tensor inputs;
    Tensor targets;
};

/// Batch number `index` (deterministic in it).
using BatchSource = std::function<Batch(std::uint64_t index)>;

/// What fit trains: a module, its loss on a batch and the backward pass of that loss.
class Objective {
public:
    virtual ~Objective() = default;
    virtual Module& module() = 0;
    /// The mean loss on `batch` (one element on the device); keeps what backward needs; the
    /// gradient it will propagate is multiplied by grad_scale.
    virtual Tensor loss(const Batch& batch, double grad_scale) = 0;
    /// Adds the last loss's gradients into the parameters' gradients.
    virtual void backward() = 0;
    /// Tokens (or samples) in a batch, for throughput.
    virtual std::size_t count(const Batch& batch) const { return batch.targets.size(); }
};

/// A GPT's next-token cross-entropy (targets i32 [B][T], rows with pad_id excluded).
class LanguageModelObjective : public Objective {
public:
    explicit LanguageModelObjective(GPT& model, std::int32_t pad_id = -1) : model_(model), pad_id_(pad_id) {}
    Module& module() override { return model_; }
    Tensor loss(const Batch& batch, double grad_scale) override;
    void backward() override { model_.backward_loss(); }

private:
    GPT& model_;
    std::int32_t pad_id_;
};

/// Mean squared error of module(inputs) against targets.
class RegressionObjective : public Objective {
public:
    explicit RegressionObjective(Module& model) : model_(model) {}
    Module& module() override { return model_; }
    Tensor loss(const Batch& batch, double grad_scale) override;
    void backward() override;
    std::size_t count(const Batch& batch) const override {
        return batch.inputs.rank() ? batch.inputs.dim(0) : 1;
    }

private:
    Module& model_;
    Tensor grad_;
};

struct TrainerOptions {
    std::size_t steps = 1000;      // optimizer steps fit runs up to (counting resumed ones)
    std::size_t accumulation = 1;  // micro-batches per step
    double clip = 0;               // global-norm clipping threshold; 0: none
    // Without loss scaling the clip factor is computed and read on the device (no host wait
    // per step); false reads the norm on the host first, as loss scaling always does.
    bool clip_on_device = true;
    std::optional<CosineSchedule> schedule;  // else the optimizer's lr stays
    std::size_t eval_interval = 0;           // validate every this many steps (and at the end); 0: never
    std::size_t eval_batches = 4;            // validation batches per evaluation
    LossScaler* loss_scaler = nullptr;       // fp16: dynamic loss scaling (gradients in compute dtype)
};

/// What the callback hears after each step.
struct StepReport {
    std::size_t step = 0;  // 1-based: steps done
    std::size_t total_steps = 0;
    double loss = 0;  // mean over the step's micro-batches
    std::optional<double> validation_loss;
    double lr = 0;
    double grad_norm = 0;    // before clipping (unscaled)
    bool skipped = false;    // non-finite gradients under loss scaling
    std::size_t tokens = 0;  // this step's tokens (or samples)
    double seconds = 0;      // wall time of this step
    double elapsed = 0;      // wall time since fit began
};

class Trainer {
public:
    Trainer(Objective& objective, Optimizer& optimizer, TrainerOptions options);

    /// Runs steps from step() to options.steps; returns the last report. The callback of step
    /// n runs once step n + 1 is recorded (its loss is read while step n + 1 runs: no idle
    /// device between steps), except at evaluation steps and the last, where it runs before
    /// the next step is recorded, so that the evaluation sees the parameters of step n.
    StepReport fit(const BatchSource& train, const BatchSource& validation = {},
                   const std::function<void(const StepReport&)>& callback = {});
    /// One optimizer step on batches step() x accumulation ...
    StepReport train_step(const BatchSource& train);
    /// Mean loss over `batches` batches of `source` (indices 0 ..), in evaluation mode.
    double evaluate(const BatchSource& source, std::size_t batches);

    std::size_t step() const { return step_; }

    /// Training checkpoint (safetensors): parameters under their names, optimizer state
    /// under "optimizer.<name>", and in the metadata the step, the optimizer's step count and
    /// lr, the loss scaler and each Dropout's seed and counter, plus `extra` metadata.
    void save_checkpoint(const std::filesystem::path& path,
                         const std::vector<std::pair<std::string, std::string>>& extra = {}) const;
    /// Restores everything save_checkpoint wrote (exact resume). Throws tapevm::Error when the
    /// file holds another model (a missing tensor or another shape).
    void load_checkpoint(const std::filesystem::path& path);

private:
    /// A step recorded, its losses on their way to the host.
    struct RecordedStep {
        StepReport report;
        std::vector<PendingHostCopy> losses;
        std::optional<PendingHostCopy> norm_squared;  // clipping on the device: the norm, read later
        double loss_scale = 1;
    };
    RecordedStep record_step(const BatchSource& train);
    static StepReport finish_step(RecordedStep& step);

    Objective& objective_;
    Optimizer& optimizer_;
    TrainerOptions options_;
    std::size_t step_ = 0;
};

/// Saves a module's parameters (names as keys) with `metadata`; PyTorch loads it with
/// safetensors.torch.load_file.
void save_model(Module& module, const std::filesystem::path& path,
                const std::vector<std::pair<std::string, std::string>>& metadata = {});
/// Loads parameters saved by save_model (or a training checkpoint) into `module`, converting
/// dtypes; throws tapevm::Error naming the first missing tensor or mismatched shape.
void load_model(Module& module, const std::filesystem::path& path);

}  // namespace tapevm::nn
