// The interpreter's compute kernels: the embedded SPIR-V (shaders/*.comp, compiled at build
// time in float and double), their common descriptor-set and pipeline layouts, and the
// pipelines, created on first use.
#pragma once

#include <array>
#include <cstdint>
#include <optional>

#include "vulkan.hpp"

namespace tapevm::gpu::detail {

#include "push_constants.h"  // shaders/push_constants.h: the one definition GLSL shares
static_assert(sizeof(PushConstants) == TV_PUSH_CONSTANT_FIELDS * sizeof(std::uint32_t),
              "push constants are 32-bit fields without padding on both sides");

enum class Kernel : std::uint32_t { forward, tangent, reverse, hvp };
inline constexpr std::size_t kernel_count = 4;

/// Workgroup size of every kernel (local_size_x in shaders/interpreter.glsl).
inline constexpr std::uint32_t workgroup_size = 64;

/// The storage-buffer bindings of set 0, as declared in shaders/interpreter.glsl.
enum Binding : std::uint32_t {
    binding_program = 0,
    binding_constants,
    binding_output_slots,
    binding_guards,
    binding_inputs,
    binding_params,
    binding_extra0,
    binding_extra1,
    binding_results,
    binding_work,
    binding_flags,
    binding_count
};

class Kernels {
public:
    Kernels(const vk::raii::Device& device, bool float64);

    const vk::raii::DescriptorSetLayout& set_layout() const { return set_layout_; }
    const vk::raii::PipelineLayout& layout() const { return layout_; }
    /// The pipeline of `kernel` in double or float; created on first use (the caller holds
    /// the device's mutex). Throws Unsupported for double on a device without shaderFloat64.
    const vk::raii::Pipeline& pipeline(Kernel kernel, bool double_precision);

private:
    const vk::raii::Device& device_;
    bool float64_;
    vk::raii::DescriptorSetLayout set_layout_{nullptr};
    vk::raii::PipelineLayout layout_{nullptr};
    std::array<std::optional<vk::raii::Pipeline>, 2 * kernel_count> pipelines_;
};

}  // namespace tapevm::gpu::detail
