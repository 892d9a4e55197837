// Optimizers, learning-rate schedules, gradient clipping and dynamic loss scaling.
//
// Every update is an elementwise tape run in place over (parameter, gradient, state...), with
// the hyper-parameters as the tape's parameters, so one recorded tape serves every step and
// every device. `step(grad_scale)` multiplies the gradients by grad_scale first (clipping,
// loss-scale removal, micro-batch averaging), so callers never rewrite gradients.
//
//   AdamW opt(model.parameters(), {.lr = 1e-3, .weight_decay = 0.1});
//   model.zero_grad(); model.loss(x, y); model.backward_loss();
//   opt.set_lr(schedule.at(step));
//   opt.step(clip_factor(grad_norm_squared_tensor(opt.parameters()), 1.0));  // no host wait
// (or, reading the norm on the host first: opt.step(clip_factor(grad_norm(opt.parameters()), 1.0))).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "tapevm/nn/module.hpp"
#include "tapevm/nn/tensor.hpp"

namespace tapevm::nn {

class Optimizer {
public:
    explicit Optimizer(std::vector<NamedParameter> parameters);
    virtual ~Optimizer() = default;
    Optimizer(const Optimizer&) = delete;
    Optimizer& operator=(const Optimizer&) = delete;

    /// One update from the gradients times grad_scale; counts a step. After it, parameters'
    /// compute copies (mixed precision) are refreshed from the master values.
    void step(double grad_scale = 1);
    /// The same with the multiplier read by the device from `grad_scale`, one element on the
    /// parameters' device (e.g. clip_factor() of grad_norm_squared_tensor()): nothing waits for
    /// the device to produce it.
    void step(const Tensor& grad_scale);
    /// Sets every gradient to 0.
    void zero_grad();

    double lr() const { return lr_; }
    void set_lr(double lr) { lr_ = lr; }
    /// Updates made so far (Adam's bias correction reads it); set when resuming.
    std::uint64_t steps() const { return steps_; }
    void set_steps(std::uint64_t steps) { steps_ = steps; }
    const std::vector<NamedParameter>& parameters() const { return parameters_; }
    /// The state tensors by name ("<parameter>.exp_avg", "<parameter>.exp_avg_sq",
    /// "<parameter>.momentum"), for checkpoints: loading writes into them.
    virtual std::vector<std::pair<std::string, Tensor>> state() const = 0;

protected:
    /// The gradient multiplier of one step: `device`, a one-element tensor, when defined, else
    /// `host`.
    struct GradScale {
        double host = 1;
        Tensor device;
    };
    /// Updates parameter `index` from `grad` (the gradient in the value's dtype) times `scale`.
    virtual void update(std::size_t index, Parameter& parameter, const Tensor& grad,
                        const GradScale& scale) = 0;

    std::vector<NamedParameter> parameters_;
    std::vector<Tensor> master_grads_;  // f32 copies of lower-precision gradients (mixed precision)
    double lr_ = 0;
    std::uint64_t steps_ = 0;

private:
    void step_with(const GradScale& scale);
};

struct SGDOptions {
    double lr = 0.01;
    double momentum = 0;
    double weight_decay = 0;  // L2: added to the gradient
};

/// buf = momentum buf + (g + wd p); p -= lr buf (PyTorch's SGD without dampening).
class SGD : public Optimizer {
public:
    SGD(std::vector<NamedParameter> parameters, SGDOptions options = {});
    std::vector<std::pair<std::string, Tensor>> state() const override;

protected:
    void update(std::size_t index, Parameter& parameter, const Tensor& grad, const GradScale& scale) override;

private:
    SGDOptions options_;
    std::vector<Tensor> momentum_;
};

struct AdamOptions {
    double lr = 1e-3;
    double beta1 = 0.9;
    double beta2 = 0.999;
    double eps = 1e-8;
    double weight_decay = 0;
    /// AdamW only: decay every parameter (else only those of rank >= 2, as nanoGPT: no decay
    /// of biases, norm weights).
    bool decay_all = false;
};

/// Adam (weight decay as L2 in the gradient, as torch.optim.Adam), and with `decoupled`
/// AdamW (p -= lr wd p, as torch.optim.AdamW).
class Adam : public Optimizer {
public:
    Adam(std::vector<NamedParameter> parameters, AdamOptions options = {}, bool decoupled = false);
    std::vector<std::pair<std::string, Tensor>> state() const override;
    const AdamOptions& options() const { return options_; }

protected:
    void update(std::size_t index, Parameter& parameter, const Tensor& grad, const GradScale& scale) override;

private:
    AdamOptions options_;
    bool decoupled_;
    std::vector<Tensor> exp_avg_;
    std::vector<Tensor> exp_avg_sq_;
};

class AdamW : public Adam {
public:
    AdamW(std::vector<NamedParameter> parameters, AdamOptions options = {.weight_decay = 0.01})
        : Adam(std::move(parameters), options, true) {}
};

/// Linear warm-up from lr / (warmup + 1) to lr over `warmup` steps, then cosine decay to
/// min_lr at step `total`, min_lr after (nanoGPT's get_lr).
struct CosineSchedule {
    double lr = 1e-3;
    double min_lr = 1e-4;
    std::size_t warmup = 100;
    std::size_t total = 5000;
    double at(std::size_t step) const;
};

/// The squared global norm of the parameters' gradients (one kernel, one host read); NaN or
/// inf when any gradient holds one.
double grad_norm_squared(const std::vector<NamedParameter>& parameters);
double grad_norm(const std::vector<NamedParameter>& parameters);
/// The same left on the device: one element of the device's accumulate dtype, no host read.
Tensor grad_norm_squared_tensor(const std::vector<NamedParameter>& parameters);
/// min(1, max_norm / (norm + 1e-6)): the gradient multiplier of global-norm clipping; 1 when
/// the norm is not finite.
double clip_factor(double norm, double max_norm);
/// The same on the device, for Optimizer::step(const Tensor&): from norm_squared (one element,
/// grad_norm_squared_tensor) with norm = sqrt(norm_squared) * inv_scale, a tensor holding
/// clip_factor(norm, max_norm) * inv_scale (inv_scale removes a loss scale). Computed in the
/// tensor's dtype (f32 on the cpu and gpu devices).
Tensor clip_factor(const Tensor& norm_squared, double max_norm, double inv_scale = 1);

/// Dynamic loss scaling for fp16: multiply the loss gradient by scale(); after backward call
/// update(finite) with whether every gradient is finite. A non-finite step must be skipped:
/// the scale halves; after `growth_interval` finite steps in a row it doubles.
class LossScaler {
public:
    explicit LossScaler(double initial = 65536, std::size_t growth_interval = 2000)
        : scale_(initial), growth_interval_(growth_interval) {}
    double scale() const { return scale_; }
    /// Returns `finite` (true: apply the step with grad_scale 1 / scale() as it was).
    bool update(bool finite);
    std::size_t skipped() const { return skipped_; }
    void set_state(double scale, std::size_t good_steps) {
        scale_ = scale;
        good_steps_ = good_steps;
    }
    std::size_t good_steps() const { return good_steps_; }

private:
    double scale_;
    std::size_t growth_interval_;
    std::size_t good_steps_ = 0;
    std::size_t skipped_ = 0;
};

/// Mixed precision: gives every parameter an f16 (or bf16) compute copy and a gradient of that
/// dtype; the values stay the f32 masters the optimizer updates.
void enable_mixed_precision(const std::vector<NamedParameter>& parameters, DType compute = DType::f16);

}  // namespace tapevm::nn
