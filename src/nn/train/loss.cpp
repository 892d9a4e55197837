#include "tapevm/nn/loss.hpp"

#include <algorithm>
#include <span>
#include <string>

#include "tapevm/error.hpp"
#include "tapevm/nn/kernels.hpp"
#include "tapevm/var.hpp"

namespace tapevm::nn {
namespace {

const Tape& squared_difference_tape() {
    static const Tape tape = record(2, [](std::span<const Var> x) {
        const Var d = x[0] - x[1];
        return d * d;
    });
    return tape;
}

// p0 (prediction - target): the scaled gradient of the squared difference.
const Tape& difference_scaled_tape() {
    static const Tape tape =
        record(2, 1, [](std::span<const Var> x, std::span<const Var> p) { return (x[0] - x[1]) * p[0]; });
    return tape;
}

const Tape& scale_tape() {
    static const Tape tape =
        record(1, 1, [](std::span<const Var> x, std::span<const Var> p) { return x[0] * p[0]; });
    return tape;
}

// x *= factor, in place.
void scale_in_place(const Tensor& x, double factor) {
    const double params[] = {factor};
    elementwise(scale_tape(), std::span<const Tensor>(&x, 1), std::span<const Tensor>(&x, 1), params);
}

}  // namespace

LossOutput mse_loss(const Tensor& prediction, const Tensor& target, double grad_scale) {
    if (!prediction.defined() || !target.defined()) throw Error("mse_loss: undefined tensor");
    if (prediction.shape() != target.shape()) {
        throw Error("mse_loss: target: " + target.describe() + " does not match prediction " +
                    prediction.describe());
    }
    const Device device = prediction.device();
    const std::size_t n = prediction.size();
    if (n == 0) throw Error("mse_loss: prediction: no elements");
    const Tensor inputs[] = {prediction, target};
    Tensor squares = device.empty(prediction.shape(), prediction.dtype());
    elementwise(squared_difference_tape(), inputs, std::span<const Tensor>(&squares, 1));
    LossOutput out;
    out.loss = device.empty({1}, prediction.dtype());
    reduce_sum(squares.reshape({n}), out.loss, 0);
    scale_in_place(out.loss, 1.0 / static_cast<double>(n));
    out.grad = device.empty(prediction.shape(), prediction.dtype());
    const double params[] = {2.0 * grad_scale / static_cast<double>(n)};
    elementwise(difference_scaled_tape(), inputs, std::span<const Tensor>(&out.grad, 1), params);
    return out;
}

LossOutput cross_entropy_loss(const Tensor& logits, const Tensor& targets, std::int32_t pad_id,
                              double grad_scale) {
    if (!logits.defined() || !targets.defined()) throw Error("cross_entropy_loss: undefined tensor");
    if (logits.rank() == 0) throw Error("cross_entropy_loss: logits: a scalar has no classes");
    const std::size_t vocab = logits.dim(-1);
    const std::size_t rows = logits.size() / std::max<std::size_t>(vocab, 1);
    if (targets.size() != rows) throw ShapeError("cross_entropy_loss", "targets", rows, targets.size());
    std::size_t counted = rows;
    if (pad_id >= 0) {
        const std::vector<std::int32_t> host = targets.to_int();
        counted = rows - static_cast<std::size_t>(std::count(host.begin(), host.end(), pad_id));
    }
    const Device device = logits.device();
    const double mean = counted == 0 ? 0.0 : 1.0 / static_cast<double>(counted);
    Tensor losses = device.empty({rows}, device.accumulate_dtype());
    LossOutput out;
    out.grad = device.empty(logits.shape(), logits.dtype());
    cross_entropy(logits.reshape({rows, vocab}), targets.reshape({rows}), losses,
                  out.grad.reshape({rows, vocab}), pad_id, grad_scale * mean);
    out.loss = device.empty({1}, device.accumulate_dtype());
    reduce_sum(losses, out.loss, 0);
    scale_in_place(out.loss, mean);
    return out;
}

}  // namespace tapevm::nn
