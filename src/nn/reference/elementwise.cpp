// The reference elementwise kernels: the tape runs on tapevm's reference VM (f64), one point
// per element of the call's shape S. Each input's value at element e is gathered by its
// broadcast rule; backward adds each point's vjp into the input gradients in element order,
// which sums broadcast inputs' gradients in a fixed order.
#include <vector>

#include "reference/reference_backend.hpp"
#include "tapevm/reference.hpp"

namespace tapevm::nn::detail {

namespace {

/// The index of element e of shape `shape` in `input` (S itself, one element, a row [N] or a
/// column [..., 1]); the front end has checked that one of these holds.
std::size_t broadcast_index(const Tensor& input, const Shape& shape, std::size_t e) {
    if (input.shape() == shape) return e;
    if (input.size() == 1) return 0;
    const std::size_t last = shape.back();
    if (input.shape() == Shape{last}) return e % last;  // row: the element's last index
    return e / last;                                    // column: the element's row
}

/// The batch inputs [points][n_inputs]: each element's inputs, gathered.
std::vector<double> gather_inputs(std::span<const Tensor> inputs, const Shape& shape) {
    const std::size_t points = element_count(shape);
    std::vector<double> gathered(points * inputs.size());
    for (std::size_t e = 0; e < points; ++e) {
        for (std::size_t i = 0; i < inputs.size(); ++i) {
            gathered[e * inputs.size() + i] = f64_data(inputs[i])[broadcast_index(inputs[i], shape, e)];
        }
    }
    return gathered;
}

}  // namespace

void ReferenceBackend::elementwise(const Tape& tape, std::span<const Tensor> inputs,
                                   std::span<const Tensor> outputs, std::span<const double> params) {
    count_kernel();
    const Shape& shape = outputs[0].shape();
    const std::size_t points = element_count(shape);
    const std::vector<double> gathered = gather_inputs(inputs, shape);
    const tapevm::reference::Vm vm(tape);
    std::vector<double> results(points * outputs.size());
    vm.forward(Batch<double>{points, gathered, params}, std::span<double>(results));
    // Written only now: an output may be one of the inputs.
    for (std::size_t e = 0; e < points; ++e) {
        for (std::size_t j = 0; j < outputs.size(); ++j)
            f64_data(outputs[j])[e] = results[e * outputs.size() + j];
    }
}

void ReferenceBackend::elementwise_backward(const Tape& tape, std::span<const Tensor> inputs,
                                            std::span<const Tensor> output_grads,
                                            std::span<const Tensor> input_grads,
                                            std::span<const double> params) {
    count_kernel();
    const Shape& shape = output_grads[0].shape();
    const std::size_t points = element_count(shape);
    const std::vector<double> gathered = gather_inputs(inputs, shape);
    std::vector<double> cotangents(points * output_grads.size());
    for (std::size_t e = 0; e < points; ++e) {
        for (std::size_t j = 0; j < output_grads.size(); ++j) {
            cotangents[e * output_grads.size() + j] = f64_data(output_grads[j])[e];
        }
    }
    const tapevm::reference::Vm vm(tape);
    std::vector<double> results(points * inputs.size());
    vm.vjp(Batch<double>{points, gathered, params}, std::span<const double>(cotangents),
           std::span<double>(results));
    for (std::size_t e = 0; e < points; ++e) {  // element order: a fixed order for broadcast sums
        for (std::size_t i = 0; i < inputs.size(); ++i) {
            if (!input_grads[i].defined()) continue;
            f64_data(input_grads[i])[broadcast_index(inputs[i], shape, e)] += results[e * inputs.size() + i];
        }
    }
}

}  // namespace tapevm::nn::detail
