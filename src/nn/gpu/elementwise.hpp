// Elementwise tapes on the gpu device: GpuBackend::elementwise and elementwise_backward call
// these (kernels.hpp states the contracts; the front end, kernels.cpp, has checked counts,
// shapes, dtypes and the device).
//
// The tape becomes one GLSL kernel around the tape compiler's code generator
// (vm_gpu/codegen.hpp: generate_body, values in registers), with one storage buffer per
// tensor (float, or uint16_t for f16/bf16 through 16-bit storage, converted with
// nn_dtype.glsl: f32 arithmetic, round to nearest even on store), the broadcast index maps
// (scalar, row [N], column [..., 1]) and the parameters in push constants (at most 28), one
// invocation per element. glslang compiles it at run time; pipelines are cached by (tape,
// dtypes, broadcast kinds, mode). Backward: full-shape input gradients are added to in place;
// a broadcast input's gradient goes through an f32 scratch buffer of the call's shape, summed
// over the broadcast axes by the backend's reduce_sum (a fixed order: deterministic, no
// atomics), then added. Everything is recorded into the backend's stream. At most 15 tensors
// per call (the backend's bindings), at most 2^31 elements. Guards of tapes recorded
// through C++ branches are not checked (elements follow the recorded branch, as on the
// reference device).
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
