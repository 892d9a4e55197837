#include "kernels.hpp"

#include <span>

#include "errors.hpp"
#include "tapevm/error.hpp"

// Generated from shaders/*.comp by glslangValidator (shaders/meson.build).
#include "forward_f32.spv.h"
#include "forward_f32_basic.spv.h"
#include "forward_f64.spv.h"
#include "forward_f64_basic.spv.h"
#include "hvp_f32.spv.h"
#include "hvp_f32_basic.spv.h"
#include "hvp_f64.spv.h"
#include "hvp_f64_basic.spv.h"
#include "reverse_f32.spv.h"
#include "reverse_f32_basic.spv.h"
#include "reverse_f64.spv.h"
#include "reverse_f64_basic.spv.h"
#include "tangent_f32.spv.h"
#include "tangent_f32_basic.spv.h"
#include "tangent_f64.spv.h"
#include "tangent_f64_basic.spv.h"

namespace tapevm::gpu::detail {

std::vector<std::array<std::uint32_t, 4>> device_program(const Tape& tape) {
    static_assert(op_count <= (1u << TV_PROGRAM_ARITY_SHIFT), "op numbers fit below the arity");
    std::vector<std::array<std::uint32_t, 4>> program;
    program.reserve(tape.instructions().size());
    for (const Instruction& ins : tape.instructions()) {
        const auto op = static_cast<std::uint32_t>(ins.op);
        program.push_back({op | arity(ins.op) << TV_PROGRAM_ARITY_SHIFT, ins.a, ins.b, ins.c});
    }
    return program;
}

#define TV_SPIRV(name) std::span<const std::uint32_t>(tapevm_spirv_##name)

std::span<const std::uint32_t> embedded_spirv(Kernel kernel, bool double_precision, bool basic_ops) {
    switch (kernel) {
        case Kernel::forward:
            if (basic_ops) return double_precision ? TV_SPIRV(forward_f64_basic) : TV_SPIRV(forward_f32_basic);
            return double_precision ? TV_SPIRV(forward_f64) : TV_SPIRV(forward_f32);
        case Kernel::tangent:
            if (basic_ops) return double_precision ? TV_SPIRV(tangent_f64_basic) : TV_SPIRV(tangent_f32_basic);
            return double_precision ? TV_SPIRV(tangent_f64) : TV_SPIRV(tangent_f32);
        case Kernel::reverse:
            if (basic_ops) return double_precision ? TV_SPIRV(reverse_f64_basic) : TV_SPIRV(reverse_f32_basic);
            return double_precision ? TV_SPIRV(reverse_f64) : TV_SPIRV(reverse_f32);
        case Kernel::hvp:
            if (basic_ops) return double_precision ? TV_SPIRV(hvp_f64_basic) : TV_SPIRV(hvp_f32_basic);
            return double_precision ? TV_SPIRV(hvp_f64) : TV_SPIRV(hvp_f32);
    }
    return {};
}

#undef TV_SPIRV

bool basic_ops_only(const Tape& tape) {
    for (const Instruction& ins : tape.instructions()) {
        if (!has_flag(ins.op, op_flag::leaf) && !has_flag(ins.op, op_flag::basic)) return false;
    }
    return true;
}

const char* kernel_name(Kernel kernel) {
    switch (kernel) {
        case Kernel::forward: return "forward";
        case Kernel::tangent: return "tangent";
        case Kernel::reverse: return "reverse";
        case Kernel::hvp: return "hvp";
    }
    return "?";
}

Kernels::Kernels(const vk::raii::Device& device, bool float64, const FloatControls& controls)
    : device_(device),
      float64_(float64),
      denorm_widths_{denorm_preserve_widths(controls, false), denorm_preserve_widths(controls, true)} {
    try {
        std::array<vk::DescriptorSetLayoutBinding, binding_count> bindings;
        for (std::uint32_t b = 0; b < binding_count; ++b) {
            bindings[b] = vk::DescriptorSetLayoutBinding(b, vk::DescriptorType::eStorageBuffer, 1,
                                                         vk::ShaderStageFlagBits::eCompute);
        }
        set_layout_ = vk::raii::DescriptorSetLayout(device_, vk::DescriptorSetLayoutCreateInfo({}, bindings));
        const vk::PushConstantRange push(vk::ShaderStageFlagBits::eCompute, 0, sizeof(PushConstants));
        const vk::DescriptorSetLayout set_layout = *set_layout_;
        layout_ = vk::raii::PipelineLayout(device_, vk::PipelineLayoutCreateInfo({}, set_layout, push));
    } catch (...) {
        rethrow_setup_error("gpu::Kernels: cannot create the pipeline layout");
    }
}

const vk::raii::Pipeline& Kernels::pipeline(Kernel kernel, bool double_precision, bool basic_ops) {
    if (double_precision && !float64_) {
        throw Unsupported("gpu: this device has no shaderFloat64; evaluate in float (f32) instead of double");
    }
    auto& slot =
        pipelines_[(static_cast<std::size_t>(kernel) * 2 + (double_precision ? 1 : 0)) * 2 + (basic_ops ? 1 : 0)];
    if (slot) return *slot;
    try {
        // The embedded module with the DenormPreserve modes this device allows.
        const auto code = with_denorm_preserve(embedded_spirv(kernel, double_precision, basic_ops),
                                               denorm_widths_[double_precision ? 1 : 0]);
        const vk::raii::ShaderModule module(
            device_, vk::ShaderModuleCreateInfo({}, code.size() * sizeof(std::uint32_t), code.data()));
        const vk::SpecializationMapEntry local_size(0, 0, sizeof(workgroup_size));
        const vk::SpecializationInfo specialization(1, &local_size, sizeof(workgroup_size), &workgroup_size);
        const vk::PipelineShaderStageCreateInfo stage({}, vk::ShaderStageFlagBits::eCompute, *module, "main",
                                                      &specialization);
        slot.emplace(device_, nullptr, vk::ComputePipelineCreateInfo({}, stage, *layout_));
    } catch (...) {
        rethrow_setup_error(std::string("gpu::Kernels: cannot create the ") + kernel_name(kernel) + " (" +
                            (double_precision ? "double" : "float") + (basic_ops ? ", basic ops" : "") +
                            ") pipeline");
    }
    return *slot;
}

}  // namespace tapevm::gpu::detail
