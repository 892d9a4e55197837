// Elementwise tapes on the gpu device: Backend::elementwise and elementwise_backward of the
// gpu backend call these (kernels.hpp states the contracts; the front end, kernels.cpp, has
// checked counts, shapes, dtypes and the device).
//
// The tape becomes one GLSL kernel through the tape compiler's code generator
// (vm_gpu/codegen.hpp: generate_body, values in registers), with one storage buffer per
// tensor, the broadcast index maps (scalar, row [N], column [..., 1]) and f16/bf16 storage
// packed in 32-bit words (each invocation owns two consecutive elements, so no two
// invocations write one word). glslang compiles it at run time; pipelines are cached by
// (tape, dtypes, broadcast kinds, mode). Backward: full-shape input gradients accumulate in
// place; a broadcast input's gradient goes through an f32 buffer of the call's shape, reduced
// over the broadcast axes by a fixed-order reduction kernel, then added (deterministic, no
// atomics). Everything is recorded into the backend's stream.
#pragma once

#include <span>

#include "tapevm/nn/tensor.hpp"
#include "tapevm/tape.hpp"

namespace tapevm::nn::detail {

class GpuBackend;

/// outputs[j] = tape output j of the inputs, element by element (kernels.hpp: elementwise).
void gpu_elementwise(GpuBackend& backend, const Tape& tape, std::span<const Tensor> inputs,
                     std::span<const Tensor> outputs, std::span<const double> params);

/// input_grads[i] += vjp (kernels.hpp: elementwise_backward); undefined input_grads skipped.
void gpu_elementwise_backward(GpuBackend& backend, const Tape& tape, std::span<const Tensor> inputs,
                              std::span<const Tensor> output_grads, std::span<const Tensor> input_grads,
                              std::span<const double> params);

}  // namespace tapevm::nn::detail
