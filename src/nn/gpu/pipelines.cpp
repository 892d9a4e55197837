#include "pipelines.hpp"

#include "backend.hpp"  // the binding and push-constant limits

#include <array>
#include <cstdlib>
#include <iostream>
#include <mutex>
#include <string>
#include <string_view>

#include "errors.hpp"
#include "float_controls.hpp"
#include "glsl_compiler.hpp"
#include "kernels.hpp"              // print_pipeline_statistics
#include "gpu/nn_shader_table.hpp"  // generated (build/src/nn/gpu)
#include "tapevm/error.hpp"
#include "tuning.hpp"

namespace tapevm::nn::detail {

std::span<const std::uint32_t> embedded_nn_spirv(std::string_view name) {
    for (const auto& entry : shader_table::spirv_entries)
        if (entry.name == name) return entry.code;
    return {};
}

std::vector<std::string_view> embedded_nn_shader_names() {
    std::vector<std::string_view> names;
    for (const auto& entry : shader_table::spirv_entries) names.push_back(entry.name);
    return names;
}

namespace {

// `source` with each `#include "name"` of an embedded nn GLSL file replaced by its text (the
// run-time compiler resolves only vm_gpu's own library).
std::string with_nn_includes(std::string_view source) {
    constexpr std::string_view directive = "#include \"";
    std::string text;
    std::size_t done = 0;
    for (std::size_t at = source.find(directive); at != std::string_view::npos;
         at = source.find(directive, done)) {
        const std::size_t name_begin = at + directive.size();
        const std::size_t name_end = source.find('"', name_begin);
        if (name_end == std::string_view::npos) break;
        const std::string_view name = source.substr(name_begin, name_end - name_begin);
        text.append(source.substr(done, at - done));
        std::string_view replacement = source.substr(at, name_end + 1 - at);  // not ours: kept
        for (const auto& entry : shader_table::glsl_entries)
            if (!entry.name.empty() && entry.name == name) replacement = entry.text;
        text.append(replacement);
        done = name_end + 1;
    }
    text.append(source.substr(done));
    return text;
}

std::string specialization_key(std::string_view name, std::span<const std::uint32_t> specialization) {
    std::string key(name);
    for (const std::uint32_t value : specialization) {
        key.push_back('/');
        key.append(std::to_string(value));
    }
    return key;
}

}  // namespace

Pipelines::Pipelines(gpu::detail::Device& device) : device_(device) {
    try {
        std::array<vk::DescriptorSetLayoutBinding, error_binding + 1> bindings;
        for (std::uint32_t b = 0; b < bindings.size(); ++b)
            bindings[b] = vk::DescriptorSetLayoutBinding(b, vk::DescriptorType::eStorageBuffer, 1,
                                                         vk::ShaderStageFlagBits::eCompute);
        set_layout_ =
            vk::raii::DescriptorSetLayout(device.device(), vk::DescriptorSetLayoutCreateInfo({}, bindings));
        const vk::PushConstantRange push(vk::ShaderStageFlagBits::eCompute, 0, push_constant_bytes);
        const vk::DescriptorSetLayout set_layout = *set_layout_;
        layout_ =
            vk::raii::PipelineLayout(device.device(), vk::PipelineLayoutCreateInfo({}, set_layout, push));
    } catch (...) {
        gpu::detail::rethrow_setup_error("nn gpu: cannot create the kernels' pipeline layout");
    }
    denorm_widths_ = gpu::detail::denorm_preserve_widths(device.float_controls(), false);
    inf_nan_widths_ = gpu::detail::inf_nan_preserve_widths(device.float_controls(), false);
    // Measurement switch TAPEVM_NN_FLOAT_CONTROLS: 0 none, denorm or infnan only one patch.
    if (const char* env = std::getenv("TAPEVM_NN_FLOAT_CONTROLS"); env != nullptr) {
        const std::string_view mode(env);
        if (mode == "0" || mode == "infnan") denorm_widths_.clear();
        if (mode == "0" || mode == "denorm") inf_nan_widths_.clear();
    }
    statistics_ = gpu::detail::tuning().pipeline_stats &&
                  device.device().getDispatcher()->vkGetPipelineExecutableStatisticsKHR != nullptr;
}

Pipelines::~Pipelines() = default;

std::unique_ptr<GpuPipeline> Pipelines::make(const std::string& name, std::span<const std::uint32_t> spirv,
                                             std::span<const std::uint32_t> specialization) {
    auto made = std::make_unique<GpuPipeline>();
    made->name = name;
    try {
        const auto code = gpu::detail::with_inf_nan_preserve(
            gpu::detail::with_denorm_preserve(spirv, denorm_widths_), inf_nan_widths_);
        const vk::raii::ShaderModule module(
            device_.device(),
            vk::ShaderModuleCreateInfo({}, code.size() * sizeof(std::uint32_t), code.data()));
        std::vector<vk::SpecializationMapEntry> entries;
        for (std::uint32_t id = 0; id < specialization.size(); ++id)
            entries.emplace_back(id, id * static_cast<std::uint32_t>(sizeof(std::uint32_t)),
                                 sizeof(std::uint32_t));
        const vk::SpecializationInfo constants(static_cast<std::uint32_t>(entries.size()), entries.data(),
                                               specialization.size_bytes(), specialization.data());
        const vk::PipelineShaderStageCreateInfo stage({}, vk::ShaderStageFlagBits::eCompute, *module, "main",
                                                      specialization.empty() ? nullptr : &constants);
        const std::lock_guard lock(device_.mutex());
        const vk::PipelineCreateFlags flags =
            statistics_ ? vk::PipelineCreateFlagBits::eCaptureStatisticsKHR : vk::PipelineCreateFlags{};
        made->pipeline = vk::raii::Pipeline(device_.device(), nullptr,
                                            vk::ComputePipelineCreateInfo(flags, stage, *layout_));
        if (statistics_)
            gpu::detail::print_pipeline_statistics(
                device_.device(), made->pipeline,
                "nn gpu pipeline " + specialization_key(name, specialization));
    } catch (...) {
        gpu::detail::rethrow_setup_error("nn gpu: cannot create the pipeline of " + name);
    }
    return made;
}

const GpuPipeline& Pipelines::embedded(std::string_view shader,
                                       std::span<const std::uint32_t> specialization) {
    const std::string key = specialization_key(shader, specialization);
    if (const auto found = embedded_.find(key); found != embedded_.end()) return *found->second;
    const auto spirv = embedded_nn_spirv(shader);
    if (spirv.empty()) throw Error("nn gpu: no embedded shader named '" + std::string(shader) + "'");
    return *embedded_.emplace(key, make(std::string(shader), spirv, specialization)).first->second;
}

const GpuPipeline& Pipelines::glsl(const std::string& key, std::string_view source,
                                   std::span<const std::uint32_t> specialization) {
    const std::string full_key = specialization_key(key, specialization);
    if (const auto found = glsl_.find(full_key); found != glsl_.end()) return *found->second;
    const auto spirv = gpu::detail::compile_glsl(with_nn_includes(source));
    return *glsl_.emplace(full_key, make(key, spirv, specialization)).first->second;
}

const GpuPipeline* Pipelines::find_glsl(const std::string& key) const {
    const auto found = glsl_.find(key);
    return found == glsl_.end() ? nullptr : found->second.get();
}

}  // namespace tapevm::nn::detail
