// Elementwise tapes on the cpu device: Backend::elementwise and elementwise_backward of
// CpuBackend call these (kernels.hpp states the contracts; the front end, kernels.cpp, has
// checked counts, shapes, dtypes and the device).
//
// The tape runs on the CPU VM (vm_cpu) over tensor bindings (tapevm/cpu_tensors.hpp): each
// block of lanes loads every input slot straight from its tensor (broadcast by index map:
// scalar, row [N], column [..., 1]; f16/bf16 converted to f32) and stores every output straight
// to its tensor, forward and vjp alike. A Vm per tape is kept in a small process-wide cache
// (its own worker pool, the backend's thread count). Backward: full-shape input gradients
// accumulate in place (dx += ...); a broadcast input's gradient goes through an f32 buffer of
// the call's shape, reduced over the broadcast axes in a fixed order (the same bits whatever
// the thread count), then added. Guards of tapes recorded through C++ branches are not checked
// (elements follow the recorded branch, as on the reference device).
#pragma once

#include <span>

#include "tapevm/nn/tensor.hpp"
#include "tapevm/tape.hpp"

namespace tapevm::nn::detail {

class CpuBackend;

/// outputs[j] = tape output j of the inputs, element by element (kernels.hpp: elementwise).
void cpu_elementwise(const CpuBackend& backend, const Tape& tape, std::span<const Tensor> inputs,
                     std::span<const Tensor> outputs, std::span<const double> params);

/// input_grads[i] += vjp (kernels.hpp: elementwise_backward); undefined input_grads skipped.
void cpu_elementwise_backward(const CpuBackend& backend, const Tape& tape, std::span<const Tensor> inputs,
                              std::span<const Tensor> output_grads, std::span<const Tensor> input_grads,
                              std::span<const double> params);

}  // namespace tapevm::nn::detail
