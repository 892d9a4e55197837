// Losses: each returns the loss (a one-element tensor on the device, read it with
// to_double()[0] where the host needs it) and its gradient with respect to the prediction,
// ready for the model's backward. `grad_scale` multiplies the gradient only (1 / micro-batch
// count for gradient accumulation, the loss scale for mixed precision).
#pragma once

#include <cstdint>

#include "tapevm/nn/tensor.hpp"

namespace tapevm::nn {

struct LossOutput {
    Tensor loss;  // one element: the mean
    Tensor grad;  // dL/dprediction * grad_scale, the prediction's shape and dtype
};

/// Mean squared error, mean over every element: (1/n) sum (prediction - target)^2 (an
/// elementwise tape and a reduction). target has prediction's shape and dtype.
LossOutput mse_loss(const Tensor& prediction, const Tensor& target, double grad_scale = 1);

/// Softmax cross-entropy (the fused kernel): logits [..., V], targets i32 with logits' leading
/// shape; mean over the rows whose target is not pad_id (a loss of 0 when every row is pad).
/// The loss has the device's accumulate dtype; grad is written in the logits' dtype.
LossOutput cross_entropy_loss(const Tensor& logits, const Tensor& targets, std::int32_t pad_id = -1,
                              double grad_scale = 1);

}  // namespace tapevm::nn
