#include "tapevm/nn/trainer.hpp"

#include <chrono>
#include <cmath>

#include "tapevm/error.hpp"
#include "tapevm/nn/kernels.hpp"
#include "tapevm/nn/loss.hpp"

namespace tapevm::nn {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

Tensor LanguageModelObjective::loss(const Batch& batch, double grad_scale) {
    return model_.loss(batch.inputs, batch.targets, pad_id_, grad_scale);
}

Tensor RegressionObjective::loss(const Batch& batch, double grad_scale) {
    LossOutput out = mse_loss(model_.forward(batch.inputs), batch.targets, grad_scale);
    grad_ = out.grad;
    return out.loss;
}

void RegressionObjective::backward() {
    if (!grad_.defined()) throw Error("RegressionObjective::backward: no loss() before it");
    model_.backward(grad_);
    grad_ = Tensor();
}

Trainer::Trainer(Objective& objective, Optimizer& optimizer, TrainerOptions options)
    : objective_(objective), optimizer_(optimizer), options_(std::move(options)) {
    if (options_.accumulation == 0) throw Error("Trainer: accumulation must be at least 1");
}

StepReport Trainer::train_step(const BatchSource& train) {
    RecordedStep step = record_step(train);
    return finish_step(step);
}

StepReport Trainer::finish_step(RecordedStep& step) {
    double total = 0;
    for (PendingHostCopy& loss : step.losses) total += loss.to_double()[0];
    step.report.loss = total / static_cast<double>(step.losses.size());
    if (step.norm_squared) {
        step.report.grad_norm = std::sqrt(step.norm_squared->to_double()[0]) / step.loss_scale;
        step.norm_squared.reset();
    }
    return step.report;
}

Trainer::RecordedStep Trainer::record_step(const BatchSource& train) {
    const Clock::time_point start = Clock::now();
    RecordedStep recorded;
    StepReport& report = recorded.report;
    report.total_steps = options_.steps;
    if (options_.schedule) optimizer_.set_lr(options_.schedule->at(step_));
    report.lr = optimizer_.lr();
    const double loss_scale = options_.loss_scaler ? options_.loss_scaler->scale() : 1.0;
    const std::size_t micro = options_.accumulation;
    objective_.module().train(true);
    optimizer_.zero_grad();
    std::vector<Tensor> losses;
    for (std::size_t m = 0; m < micro; ++m) {
        const Batch batch = train(static_cast<std::uint64_t>(step_) * micro + m);
        losses.push_back(objective_.loss(batch, loss_scale / static_cast<double>(micro)));
        objective_.backward();
        report.tokens += objective_.count(batch);
    }
    // The losses start their way to the host now: without loss scaling nothing
    // below waits for the device, and the host goes on recording while this step runs.
    for (const Tensor& loss : losses) recorded.losses.push_back(loss.to_host_later());

    // Clipping alone runs on the device: the factor is computed there from the norm and the
    // update reads it, so nothing waits; the norm reaches the report with the losses. Loss
    // scaling decides on the host whether the step runs, so it reads the norm now.
    recorded.loss_scale = loss_scale;
    if (options_.clip > 0 && options_.loss_scaler == nullptr && options_.clip_on_device) {
        const Tensor norm_squared = grad_norm_squared_tensor(optimizer_.parameters());
        optimizer_.step(clip_factor(norm_squared, options_.clip, 1.0 / loss_scale));
        recorded.norm_squared = norm_squared.to_host_later();
    } else {
        double factor = 1.0 / loss_scale;
        if (options_.loss_scaler || options_.clip > 0) {
            const double norm_squared = grad_norm_squared(optimizer_.parameters());
            report.grad_norm = std::sqrt(norm_squared) / loss_scale;
            const bool finite = std::isfinite(norm_squared);
            if (options_.loss_scaler && !options_.loss_scaler->update(finite)) report.skipped = true;
            if (options_.clip > 0) factor *= clip_factor(report.grad_norm, options_.clip);
        }
        if (!report.skipped) optimizer_.step(factor);
    }
    ++step_;
    report.step = step_;
    report.seconds = seconds_since(start);
    return recorded;
}

double Trainer::evaluate(const BatchSource& source, std::size_t batches) {
    Module& module = objective_.module();
    module.train(false);
    double total = 0;
    std::vector<Tensor> losses;
    for (std::size_t i = 0; i < batches; ++i) losses.push_back(objective_.loss(source(i), 0.0));
    for (const Tensor& loss : losses) total += loss.to_double()[0];
    module.train(true);
    return batches == 0 ? 0.0 : total / static_cast<double>(batches);
}

StepReport Trainer::fit(const BatchSource& train, const BatchSource& validation,
                        const std::function<void(const StepReport&)>& callback) {
    if (!train) throw Error("Trainer::fit: no training batches");
    const Clock::time_point start = Clock::now();
    StepReport report;
    std::optional<RecordedStep> previous;
    const auto deliver = [&](RecordedStep& step) {
        report = finish_step(step);
        report.elapsed = seconds_since(start);
    };
    while (step_ < options_.steps) {
        RecordedStep current = record_step(train);
        if (previous) {
            deliver(*previous);
            previous.reset();
            if (callback) callback(report);
        }
        const bool last = step_ == options_.steps;
        if (last || (validation && options_.eval_interval > 0 && step_ % options_.eval_interval == 0)) {
            deliver(current);
            if (validation && options_.eval_interval > 0) {
                report.validation_loss = evaluate(validation, options_.eval_batches);
                report.elapsed = seconds_since(start);
            }
            if (callback) callback(report);
        } else {
            previous = std::move(current);
        }
    }
    return report;
}

}  // namespace tapevm::nn
