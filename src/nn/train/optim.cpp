#include "tapevm/nn/optim.hpp"

#include <cmath>
#include <limits>
#include <numbers>
#include <span>
#include <string>
#include <vector>

#include "tapevm/error.hpp"
#include "tapevm/nn/kernels.hpp"
#include "tapevm/var.hpp"

namespace tapevm::nn {
namespace {

// SGD's update with gradient multiplier `scale`: inputs p, g, buf; params lr, momentum,
// weight_decay; outputs p, buf.
std::vector<Var> sgd_body(std::span<const Var> x, std::span<const Var> h, const Var& scale) {
    const Var& p = x[0];
    const Var g = x[1] * scale + h[2] * p;
    const Var buf = h[1] * x[2] + g;
    return {p - h[0] * buf, buf};
}

// Adam's: inputs p, g, m, v; params lr, beta1, beta2, eps, l2, decoupled_decay,
// bias_correction1, bias_correction2; outputs p, m, v.
std::vector<Var> adam_body(std::span<const Var> x, std::span<const Var> h, const Var& scale) {
    const Var& p = x[0];
    const Var g = x[1] * scale + h[4] * p;
    const Var m = h[1] * x[2] + (1.0 - h[1]) * g;
    const Var v = h[2] * x[3] + (1.0 - h[2]) * g * g;
    const Var m_hat = m / h[6];
    const Var v_hat = v / h[7];
    const Var decayed = p - h[0] * h[5] * p;
    return {decayed - h[0] * m_hat / (sqrt(v_hat) + h[3]), m, v};
}

// An update tape from `body`: the multiplier is the last parameter (host) or the last input
// (a one-element tensor, broadcast).
template <class Body> Tape update_tape(std::size_t inputs, std::size_t params, bool device_scale, Body body) {
    if (device_scale) {
        return record(inputs + 1, params,
                      [&](std::span<const Var> x, std::span<const Var> h) { return body(x, h, x[inputs]); });
    }
    return record(inputs, params + 1,
                  [&](std::span<const Var> x, std::span<const Var> h) { return body(x, h, h[params]); });
}

const Tape& sgd_tape(bool device_scale) {
    static const Tape host = update_tape(3, 3, false, sgd_body);
    static const Tape device = update_tape(3, 3, true, sgd_body);
    return device_scale ? device : host;
}

const Tape& adam_tape(bool device_scale) {
    static const Tape host = update_tape(4, 8, false, adam_body);
    static const Tape device = update_tape(4, 8, true, adam_body);
    return device_scale ? device : host;
}

// Input norm_squared; params max_norm, inv_scale; output clip_factor(sqrt(ns) inv_scale,
// max_norm) inv_scale.
const Tape& clip_tape() {
    static const Tape tape = record(1, 2, [](std::span<const Var> x, std::span<const Var> h) {
        const Var norm = sqrt(x[0]) * h[1];
        const Var factor = select(norm < std::numeric_limits<double>::infinity(),
                                  min(Var(1.0), h[0] / (norm + 1e-6)), Var(1.0));
        return std::vector<Var>{factor * h[1]};
    });
    return tape;
}

// A one-element tensor argument, or a typed error naming it.
void require_one_element(const Tensor& tensor, const char* where, const char* argument) {
    if (!tensor.defined()) throw Error(std::string(where) + ": " + argument + " is an undefined tensor");
    if (tensor.size() != 1) throw ShapeError(where, argument, 1, tensor.size());
}

void refresh_compute(Parameter& parameter) {
    if (parameter.compute.defined()) copy(parameter.value, parameter.compute);
}

}  // namespace

Optimizer::Optimizer(std::vector<NamedParameter> parameters) : parameters_(std::move(parameters)) {
    for (const NamedParameter& p : parameters_) {
        if (p.parameter == nullptr || !p.parameter->value.defined() || !p.parameter->grad.defined()) {
            throw Error("Optimizer: parameter '" + p.name + "' has no value or gradient");
        }
    }
}

void Optimizer::step(double grad_scale) { step_with(GradScale{grad_scale, {}}); }

void Optimizer::step(const Tensor& grad_scale) {
    require_one_element(grad_scale, "Optimizer::step", "grad_scale");
    step_with(GradScale{1, grad_scale});
}

void Optimizer::step_with(const GradScale& scale) {
    ++steps_;
    master_grads_.resize(parameters_.size());
    for (std::size_t i = 0; i < parameters_.size(); ++i) {
        Parameter& parameter = *parameters_[i].parameter;
        Tensor grad = parameter.grad;
        if (grad.dtype() != parameter.value.dtype()) {
            // Mixed precision: the update runs in the master's dtype on a converted copy.
            if (!master_grads_[i].defined() || master_grads_[i].dtype() != parameter.value.dtype()) {
                master_grads_[i] =
                    parameter.value.device().empty(parameter.value.shape(), parameter.value.dtype());
            }
            copy(grad, master_grads_[i]);
            grad = master_grads_[i];
        }
        update(i, parameter, grad, scale);
        refresh_compute(*parameters_[i].parameter);
    }
}

void Optimizer::zero_grad() {
    for (const NamedParameter& p : parameters_) zero(p.parameter->grad);
}

SGD::SGD(std::vector<NamedParameter> parameters, SGDOptions options)
    : Optimizer(std::move(parameters)), options_(options) {
    lr_ = options.lr;
    for (const NamedParameter& p : parameters_) {
        const Tensor& v = p.parameter->value;
        momentum_.push_back(v.device().zeros(v.shape(), v.dtype()));
    }
}

void SGD::update(std::size_t index, Parameter& parameter, const Tensor& grad, const GradScale& scale) {
    std::vector<Tensor> inputs = {parameter.value, grad, momentum_[index]};
    std::vector<double> params = {lr_, options_.momentum, options_.weight_decay};
    const bool device_scale = scale.device.defined();
    if (device_scale) {
        inputs.push_back(scale.device);
    } else {
        params.push_back(scale.host);
    }
    const Tensor outputs[] = {parameter.value, momentum_[index]};
    elementwise(sgd_tape(device_scale), inputs, outputs, params);
}

std::vector<std::pair<std::string, Tensor>> SGD::state() const {
    std::vector<std::pair<std::string, Tensor>> out;
    for (std::size_t i = 0; i < parameters_.size(); ++i)
        out.emplace_back(parameters_[i].name + ".momentum", momentum_[i]);
    return out;
}

Adam::Adam(std::vector<NamedParameter> parameters, AdamOptions options, bool decoupled)
    : Optimizer(std::move(parameters)), options_(options), decoupled_(decoupled) {
    lr_ = options.lr;
    for (const NamedParameter& p : parameters_) {
        const Tensor& v = p.parameter->value;
        exp_avg_.push_back(v.device().zeros(v.shape(), v.dtype()));
        exp_avg_sq_.push_back(v.device().zeros(v.shape(), v.dtype()));
    }
}

void Adam::update(std::size_t index, Parameter& parameter, const Tensor& grad, const GradScale& scale) {
    const double t = static_cast<double>(steps_);
    const double correction1 = 1.0 - std::pow(options_.beta1, t);
    const double correction2 = 1.0 - std::pow(options_.beta2, t);
    const bool decays = options_.decay_all || parameter.value.rank() >= 2;
    const double l2 = decoupled_ ? 0.0 : options_.weight_decay;
    const double decoupled = decoupled_ && decays ? options_.weight_decay : 0.0;
    std::vector<Tensor> inputs = {parameter.value, grad, exp_avg_[index], exp_avg_sq_[index]};
    std::vector<double> params = {lr_, options_.beta1, options_.beta2, options_.eps,
                                  l2,  decoupled,      correction1,    correction2};
    const bool device_scale = scale.device.defined();
    if (device_scale) {
        inputs.push_back(scale.device);
    } else {
        params.push_back(scale.host);
    }
    const Tensor outputs[] = {parameter.value, exp_avg_[index], exp_avg_sq_[index]};
    elementwise(adam_tape(device_scale), inputs, outputs, params);
}

std::vector<std::pair<std::string, Tensor>> Adam::state() const {
    std::vector<std::pair<std::string, Tensor>> out;
    for (std::size_t i = 0; i < parameters_.size(); ++i) {
        out.emplace_back(parameters_[i].name + ".exp_avg", exp_avg_[i]);
        out.emplace_back(parameters_[i].name + ".exp_avg_sq", exp_avg_sq_[i]);
    }
    return out;
}

double CosineSchedule::at(std::size_t step) const {
    if (step < warmup) return lr * static_cast<double>(step + 1) / static_cast<double>(warmup + 1);
    if (step >= total) return min_lr;
    const double progress =
        static_cast<double>(step - warmup) / static_cast<double>(std::max<std::size_t>(total - warmup, 1));
    const double coefficient = 0.5 * (1.0 + std::cos(std::numbers::pi * progress));
    return min_lr + coefficient * (lr - min_lr);
}

Tensor grad_norm_squared_tensor(const std::vector<NamedParameter>& parameters) {
    if (parameters.empty())
        throw Error("grad_norm_squared_tensor: no parameters (no device to hold the norm)");
    std::vector<Tensor> grads;
    for (const NamedParameter& p : parameters) grads.push_back(p.parameter->grad);
    const Device device = grads.front().device();
    const Tensor out = device.empty({1}, device.accumulate_dtype());
    global_norm_squared(grads, out);
    return out;
}

double grad_norm_squared(const std::vector<NamedParameter>& parameters) {
    if (parameters.empty()) return 0;
    return grad_norm_squared_tensor(parameters).to_double()[0];
}

double grad_norm(const std::vector<NamedParameter>& parameters) {
    return std::sqrt(grad_norm_squared(parameters));
}

double clip_factor(double norm, double max_norm) {
    if (!(max_norm > 0) || !std::isfinite(norm)) return 1.0;
    return std::min(1.0, max_norm / (norm + 1e-6));
}

Tensor clip_factor(const Tensor& norm_squared, double max_norm, double inv_scale) {
    require_one_element(norm_squared, "clip_factor", "norm_squared");
    if (!(max_norm > 0)) throw Error("clip_factor: max_norm must be > 0, got " + std::to_string(max_norm));
    const Tensor factor = norm_squared.device().empty({1}, norm_squared.dtype());
    const Tensor inputs[] = {norm_squared};
    const Tensor outputs[] = {factor};
    const double params[] = {max_norm, inv_scale};
    elementwise(clip_tape(), inputs, outputs, params);
    return factor;
}

bool LossScaler::update(bool finite) {
    if (!finite) {
        scale_ = std::max(scale_ / 2, 1.0);
        good_steps_ = 0;
        ++skipped_;
        return false;
    }
    if (++good_steps_ >= growth_interval_) {
        scale_ *= 2;
        good_steps_ = 0;
    }
    return true;
}

void enable_mixed_precision(const std::vector<NamedParameter>& parameters, DType compute) {
    if (compute != DType::f16 && compute != DType::bf16) {
        throw Error("enable_mixed_precision: compute: " + std::string(dtype_name(compute)) +
                    " is not f16 or bf16");
    }
    for (const NamedParameter& p : parameters) {
        Parameter& parameter = *p.parameter;
        if (parameter.compute.defined()) continue;
        const Device device = parameter.value.device();
        parameter.compute = device.empty(parameter.value.shape(), compute);
        copy(parameter.value, parameter.compute);
        parameter.grad = device.zeros(parameter.value.shape(), compute);
    }
}

}  // namespace tapevm::nn
