// The interpreter's compute kernels: the embedded SPIR-V (shaders/*.comp, compiled at build
// time in float and double), their common descriptor-set and pipeline layouts, and the
// pipelines, created on first use.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "float_controls.hpp"
#include "tapevm/tape.hpp"
#include "vulkan.hpp"

namespace tapevm::gpu::detail {

#include "push_constants.h"  // shaders/push_constants.h: the one definition GLSL shares
static_assert(sizeof(PushConstants) == TV_PUSH_CONSTANT_FIELDS * sizeof(std::uint32_t),
              "push constants are 32-bit fields without padding on both sides");

/// forward_compact and reverse_compact run the compact program (compact.hpp) instead of the
/// program in slot order; the Runner picks them for forward and reverse (tuning.hpp).
enum class Kernel : std::uint32_t { forward, tangent, reverse, hvp, forward_compact, reverse_compact };
inline constexpr std::size_t kernel_count = 6;

/// Workgroup size of every kernel: specialization constant 0 of shaders/interpreter.glsl
/// (local_size_x_id = 0), set at pipeline creation (64 unless TAPEVM_GPU_WORKGROUP says).
std::uint32_t workgroup_size();

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

/// The program buffer of `tape`: its instructions as uvec4s {op, a, b, c}, with the op's
/// number of slot operands (tapevm::arity: 0 for leaves, 1 for Powi) added to the op word
/// at bit TV_PROGRAM_ARITY_SHIFT, so the kernels load only the operands an op has.
std::vector<std::array<std::uint32_t, 4>> device_program(const Tape& tape);

/// The kernel's SPIR-V as compiled at build time (before the DenormPreserve patch).
std::span<const std::uint32_t> embedded_spirv(Kernel kernel, bool double_precision);
/// "forward", "tangent", "reverse", "hvp", "forward_compact", "reverse_compact".
const char* kernel_name(Kernel kernel);

class Kernels {
public:
    /// `controls`: the device's float controls, which decide the widths whose subnormals
    /// the kernels ask to preserve (float_controls.hpp).
    /// `statistics`: the device has VK_KHR_pipeline_executable_properties enabled, and each
    /// pipeline's statistics are printed to stderr when created (TAPEVM_GPU_PIPELINE_STATS).
    /// `cache_key`: names the device and its driver version; the pipeline cache of compiled
    /// kernels is kept on disk under it.
    Kernels(const vk::raii::Device& device, bool float64, const FloatControls& controls, bool statistics,
            std::string cache_key);
    ~Kernels();

    const vk::raii::DescriptorSetLayout& set_layout() const { return set_layout_; }
    const vk::raii::PipelineLayout& layout() const { return layout_; }
    /// The pipeline of `kernel` in double or float; created on first use (the caller holds
    /// the device's mutex). Throws Unsupported for double on a device without shaderFloat64.
    const vk::raii::Pipeline& pipeline(Kernel kernel, bool double_precision);
    /// A pipeline of SPIR-V compiled at run time (the tape compiler, compiler.hpp), with the
    /// interpreter's layout, workgroup size and DenormPreserve patch, through the device's
    /// pipeline cache, which is loaded from and saved to the disk cache (disk_cache.hpp).
    /// The caller holds the device's mutex.
    vk::raii::Pipeline create_pipeline(std::span<const std::uint32_t> spirv, bool double_precision,
                                       const std::string& name);

private:
    vk::raii::Pipeline make_pipeline(std::span<const std::uint32_t> spirv, bool double_precision,
                                     const vk::raii::PipelineCache* cache) const;
    void save_pipeline_cache() const;
    void print_statistics(const vk::raii::Pipeline& pipeline, const std::string& name) const;

    const vk::raii::Device& device_;
    bool float64_;
    bool statistics_;
    std::array<std::vector<std::uint32_t>, 2> denorm_widths_;  // float, double
    vk::raii::DescriptorSetLayout set_layout_{nullptr};
    vk::raii::PipelineLayout layout_{nullptr};
    std::array<std::optional<vk::raii::Pipeline>, 2 * kernel_count> pipelines_;
    std::string cache_key_;
    std::optional<vk::raii::PipelineCache> cache_;  // compiled kernels', created on first use
};

}  // namespace tapevm::gpu::detail
