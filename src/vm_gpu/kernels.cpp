#include "kernels.hpp"

#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <optional>
#include <span>
#include <string>
#include <tuple>

#include "disk_cache.hpp"
#include "errors.hpp"
#include "tapevm/error.hpp"
#include "tuning.hpp"

// tapevm_spirv_<kernel>_<f32|f64>, generated from shaders/*.comp by glslangValidator
// (shaders/meson.build), one header each.
#define TV_INTERPRETER_SPIRV_INCLUDES
#include "interpreter_kernels.hpp"

namespace tapevm::gpu::detail {

std::uint32_t workgroup_size() { return tuning().workgroup_size; }

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

std::span<const std::uint32_t> embedded_spirv(Kernel kernel, bool double_precision) {
    switch (kernel) {
#define TV_KERNEL_SPIRV(name)                                                               \
    case Kernel::name:                                                                      \
        return double_precision ? std::span<const std::uint32_t>(tapevm_spirv_##name##_f64) \
                                : std::span<const std::uint32_t>(tapevm_spirv_##name##_f32);
        TV_INTERPRETER_KERNELS(TV_KERNEL_SPIRV)
#undef TV_KERNEL_SPIRV
    }
    return {};
}

const char* kernel_name(Kernel kernel) {
    switch (kernel) {
#define TV_KERNEL_NAME(name) \
    case Kernel::name: return #name;
        TV_INTERPRETER_KERNELS(TV_KERNEL_NAME)
#undef TV_KERNEL_NAME
    }
    return "?";
}

Kernels::Kernels(const vk::raii::Device& device, bool float64, const FloatControls& controls,
                 KernelsFeatures features, std::string cache_key)
    : device_(device), float64_(float64), statistics_(features.statistics),
      creation_feedback_(features.creation_feedback),
      identifier_algorithm_(std::move(features.identifier_algorithm)),
      denorm_widths_{denorm_preserve_widths(controls, false), denorm_preserve_widths(controls, true)},
      inf_nan_widths_{inf_nan_preserve_widths(controls, false), inf_nan_preserve_widths(controls, true)},
      cache_key_(std::move(cache_key)) {
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

OpSet tape_ops(const Tape& tape) {
    OpSet ops = 0;
    for (const Instruction& ins : tape.instructions()) ops |= OpSet{1} << static_cast<std::uint32_t>(ins.op);
    return ops;
}

OpSet special_function_ops() {
    OpSet ops = 0;
    for (const Op op : {Op::Erf, Op::Erfc, Op::Lgamma, Op::Digamma})
        ops |= OpSet{1} << static_cast<std::uint32_t>(op);
    return ops;
}

const vk::raii::Pipeline& Kernels::pipeline(Kernel kernel, bool double_precision,
                                            Specialization specialization) {
    if (double_precision && !float64_) {
        throw Unsupported("gpu: this device has no shaderFloat64; evaluate in float (f32) instead of double");
    }
    const std::uint32_t home_count = specialization.home_count;
    if (is_local(kernel) != (home_count > 0)) {
        throw Error(std::string("gpu: internal error: the ") + kernel_name(kernel) + " pipeline asked for " +
                    std::to_string(home_count) + " homes");
    }
    if (!takes_op_set(kernel)) specialization.ops = all_ops, specialization.directions = 0;
    const auto key = std::tuple(kernel, double_precision, specialization);
    if (const auto found = pipelines_.find(key); found != pipelines_.end()) return found->second;
    const OpSet ops = specialization.ops;
    const std::string name =
        std::string(kernel_name(kernel)) + (double_precision ? " f64" : " f32") +
        (home_count > 0 ? " homes=" + std::to_string(home_count) : "") +
        (ops != all_ops ? " ops=" + std::to_string(std::popcount(ops)) : "") +
        (specialization.directions > 0 ? " K=" + std::to_string(specialization.directions) : "");
    // Through a pipeline cache kept on disk as a compiled kernel's is: the driver's code for
    // these pipelines comes from there in later processes (the H100 takes 1.6 s (float) to
    // 3.3 s (double) to compile the ones a first tape needs; bench/RESULTS.md, fifth pass).
    const std::span<const std::uint32_t> spirv = embedded_spirv(kernel, double_precision);
    const std::string cache_key = interpreter_cache_key(kernel, spirv, specialization);
    std::optional<vk::raii::Pipeline> pipeline;
    try {
        const PipelineCacheBlob cache = load_pipeline_cache(cache_key, double_precision);
        std::optional<bool> driver_cache_hit;
        pipeline.emplace(make_pipeline({spirv, {}, nullptr}, double_precision, &cache.cache, specialization,
                                       &driver_cache_hit));
        keep_pipeline_cache(cache, cache_key, double_precision, driver_cache_hit);
    } catch (...) {
        rethrow_setup_error("gpu::Kernels: cannot create the " + name + " pipeline");
    }
    if (statistics_) print_statistics(*pipeline, name);
    return pipelines_.emplace(key, std::move(*pipeline)).first->second;
}

Kernels::~Kernels() = default;

vk::raii::Pipeline Kernels::make_pipeline(ShaderSource source, bool double_precision,
                                          const vk::raii::PipelineCache* cache, Specialization specialization,
                                          std::optional<bool>* driver_cache_hit) const {
    // The module with the DenormPreserve and SignedZeroInfNanPreserve modes this device allows;
    // or no module but its identifier, and the driver's cached pipeline or nothing.
    vk::raii::ShaderModule module(nullptr);
    const bool by_identifier = source.spirv.empty();
    if (!by_identifier) {
        const std::size_t precision = double_precision ? 1 : 0;
        const auto code = with_inf_nan_preserve(with_denorm_preserve(source.spirv, denorm_widths_[precision]),
                                                inf_nan_widths_[precision]);
        module = vk::raii::ShaderModule(
            device_, vk::ShaderModuleCreateInfo({}, code.size() * sizeof(std::uint32_t), code.data()));
        if (source.identifier_out != nullptr) {
            const vk::ShaderModuleIdentifierEXT identifier = module.getIdentifierEXT();
            source.identifier_out->assign(identifier.identifier.begin(),
                                          identifier.identifier.begin() + identifier.identifierSize);
        }
    }
    // Specialization constants (shaders/bindings.h): the workgroup size; the home count (local
    // kernels only); the op set's low and high words (compact and local kernels, where not all);
    // the seeds (where not 0).
    const OpSet ops = specialization.ops;
    std::array<std::uint32_t, spec_count> values{};
    std::array<bool, spec_count> set{};
    values[spec_workgroup] = workgroup_size();
    set[spec_workgroup] = true;
    values[spec_home_count] = specialization.home_count;
    set[spec_home_count] = specialization.home_count > 0;
    values[spec_ops_0] = static_cast<std::uint32_t>(ops);
    set[spec_ops_0] = ops != all_ops;
    values[spec_ops_1] = static_cast<std::uint32_t>(ops >> 32);
    set[spec_ops_1] = ops != all_ops;
    values[spec_directions] = specialization.directions;
    set[spec_directions] = specialization.directions > 0;
    std::vector<vk::SpecializationMapEntry> entries;
    for (std::uint32_t id = 0; id < values.size(); ++id)
        if (set[id])
            entries.emplace_back(id, id * static_cast<std::uint32_t>(sizeof(std::uint32_t)),
                                 sizeof(std::uint32_t));
    const vk::SpecializationInfo constants(static_cast<std::uint32_t>(entries.size()), entries.data(),
                                           values.size() * sizeof(std::uint32_t), values.data());
    vk::PipelineShaderStageCreateInfo stage({}, vk::ShaderStageFlagBits::eCompute, *module, "main",
                                            &constants);
    const vk::PipelineShaderStageModuleIdentifierCreateInfoEXT identifier(
        static_cast<std::uint32_t>(source.identifier.size()), source.identifier.data());
    vk::PipelineCreateFlags flags =
        statistics_ ? vk::PipelineCreateFlagBits::eCaptureStatisticsKHR : vk::PipelineCreateFlags{};
    if (by_identifier) {
        stage.setPNext(&identifier);
        flags |= vk::PipelineCreateFlagBits::eFailOnPipelineCompileRequired;
    }
    vk::ComputePipelineCreateInfo info(flags, stage, *layout_);
    vk::PipelineCreationFeedback whole, stage_feedback;
    const vk::PipelineCreationFeedbackCreateInfo feedback(&whole, 1, &stage_feedback);
    if (driver_cache_hit != nullptr && creation_feedback_) info.setPNext(&feedback);
    vk::raii::Pipeline pipeline(
        device_, cache != nullptr ? vk::Optional<const vk::raii::PipelineCache>(*cache) : nullptr, info);
    if (driver_cache_hit != nullptr && (whole.flags & vk::PipelineCreationFeedbackFlagBits::eValid))
        *driver_cache_hit =
            bool(whole.flags & vk::PipelineCreationFeedbackFlagBits::eApplicationPipelineCacheHit);
    return pipeline;
}

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
}

const char* precision_suffix(bool double_precision) { return double_precision ? "-f64" : "-f32"; }

// forget_compiled_pipelines()'s count: part of compiled_'s keys, so forgotten pipelines stay
// alive for the Vms that hold them but are found no more.
std::atomic<unsigned> compiled_generation{0};

// compiled_'s key of a kernel.
std::string memory_key(std::string_view cache_key, bool double_precision) {
    return std::string(cache_key) + precision_suffix(double_precision) + "#" +
           std::to_string(compiled_generation.load());
}

// What is stored beside a kernel's pipeline cache for identified_pipeline(): the module
// identifier's size (u32), the identifier, then the caller's metadata.
std::vector<std::byte> identifier_payload(std::span<const std::uint8_t> identifier,
                                          std::span<const std::byte> metadata) {
    const auto size = static_cast<std::uint32_t>(identifier.size());
    std::vector<std::byte> payload(sizeof size);
    std::memcpy(payload.data(), &size, sizeof size);
    const auto bytes = std::as_bytes(identifier);
    payload.insert(payload.end(), bytes.begin(), bytes.end());
    payload.insert(payload.end(), metadata.begin(), metadata.end());
    return payload;
}

// identifier_payload()'s parts: false for a payload too short or an identifier size Vulkan
// does not allow.
bool read_identifier_payload(std::span<const std::byte> payload, std::span<const std::uint8_t>& identifier,
                             std::span<const std::byte>& metadata) {
    std::uint32_t size = 0;
    if (payload.size() < sizeof size) return false;
    std::memcpy(&size, payload.data(), sizeof size);
    if (size == 0 || size > VK_MAX_SHADER_MODULE_IDENTIFIER_SIZE_EXT || payload.size() < sizeof size + size)
        return false;
    identifier = {reinterpret_cast<const std::uint8_t*>(payload.data()) + sizeof size, size};
    metadata = payload.subspan(sizeof size + size);
    return true;
}

}  // namespace

void forget_compiled_pipelines() { ++compiled_generation; }

const vk::raii::Pipeline& Kernels::compiled_pipeline(std::span<const std::uint32_t> spirv,
                                                     bool double_precision, const std::string& name,
                                                     std::string_view cache_key, PipelineReport* report,
                                                     std::span<const std::byte> metadata) {
    if (double_precision && !float64_) {
        throw Unsupported("gpu: this device has no shaderFloat64; evaluate in float (f32) instead of double");
    }
    PipelineReport ignored;
    PipelineReport& out = report != nullptr ? *report : ignored;
    const std::string key = memory_key(cache_key, double_precision);
    {
        const std::lock_guard lock(compiled_mutex_);
        if (const auto found = compiled_.find(key); found != compiled_.end()) {
            out.reused = true;
            return found->second.pipeline;
        }
    }
    // The driver compiles outside the lock, so that other kernels' builds and lookups go on; two
    // threads making the same pipeline at once keep the first one stored.
    CompiledPipeline made{create_pipeline(spirv, double_precision, name, cache_key, out, metadata),
                          {metadata.begin(), metadata.end()}};
    const std::lock_guard lock(compiled_mutex_);
    const auto [found, inserted] = compiled_.emplace(key, std::move(made));
    out.reused = !inserted;
    return found->second.pipeline;
}

const vk::raii::Pipeline* Kernels::identified_pipeline(bool double_precision, const std::string& name,
                                                       std::string_view cache_key, PipelineReport& report,
                                                       std::vector<std::byte>& metadata) {
    if (double_precision && !float64_) return nullptr;  // compiled_pipeline() says why
    const std::string key = memory_key(cache_key, double_precision);
    {
        const std::lock_guard lock(compiled_mutex_);
        if (const auto found = compiled_.find(key); found != compiled_.end()) {
            report.reused = true;
            metadata = found->second.metadata;
            return &found->second.pipeline;
        }
    }
    if (identifier_algorithm_.empty()) return nullptr;
    const auto start = Clock::now();
    const auto stored = DiskCache(default_cache_folder()).load(identifier_key(cache_key, double_precision));
    std::span<const std::uint8_t> identifier;
    std::span<const std::byte> stored_metadata;
    if (!stored || !read_identifier_payload(*stored, identifier, stored_metadata)) return nullptr;
    PipelineCacheBlob cache = load_pipeline_cache(cache_key, double_precision);
    if (cache.blob.empty()) return nullptr;  // nothing the driver could find it in
    report.cache_load_s = seconds_since(start);
    const auto create_start = Clock::now();
    std::optional<vk::raii::Pipeline> pipeline;
    try {
        pipeline.emplace(make_pipeline({{}, identifier, nullptr}, double_precision, &cache.cache, {},
                                       &report.driver_cache_hit));
    } catch (const vk::Error&) {  // the driver would rather have the SPIR-V: compiled_pipeline() then
        return nullptr;
    }
    report.create_s = seconds_since(create_start);
    if (pipeline->getConstructorSuccessCode() != vk::Result::eSuccess ||
        !static_cast<vk::Pipeline>(**pipeline))
        return nullptr;  // not in the driver's cache: it needs the SPIR-V
    report.from_identifier = true;
    if (statistics_) print_statistics(*pipeline, name + (double_precision ? " f64" : " f32"));
    metadata.assign(stored_metadata.begin(), stored_metadata.end());
    CompiledPipeline made{std::move(*pipeline), metadata};
    const std::lock_guard lock(compiled_mutex_);
    const auto [found, inserted] = compiled_.emplace(key, std::move(made));
    if (!inserted) metadata = found->second.metadata;
    return &found->second.pipeline;
}

std::string Kernels::identifier_key(std::string_view cache_key, bool double_precision) const {
    return "identifier-" + cache_key_ + "-" + identifier_algorithm_ + "-" + std::string(cache_key) +
           precision_suffix(double_precision);
}

Kernels::PipelineCacheBlob Kernels::load_pipeline_cache(std::string_view cache_key,
                                                        bool double_precision) const {
    // One pipeline cache per kernel and device (driver version included): loading it costs what
    // the kernel's own code costs, however many kernels the cache folder holds. The driver
    // checks the blob's header (vendor, device, cache UUID) and ignores one that is not its own;
    // the disk cache has checked its integrity before.
    PipelineCacheBlob result;
    if (auto stored = DiskCache(default_cache_folder()).load(pipeline_cache_key(cache_key, double_precision)))
        result.blob = std::move(*stored);
    try {
        result.cache = vk::raii::PipelineCache(
            device_, vk::PipelineCacheCreateInfo({}, result.blob.size(), result.blob.data()));
    } catch (const vk::Error&) {  // a blob the driver rejects: start empty
        result.blob.clear();
        result.cache = vk::raii::PipelineCache(device_, vk::PipelineCacheCreateInfo());
    }
    return result;
}

void Kernels::keep_pipeline_cache(const PipelineCacheBlob& cache, std::string_view cache_key,
                                  bool double_precision, std::optional<bool> driver_cache_hit) const {
    if (!cache.blob.empty() && driver_cache_hit != false) return;  // the driver had it there
    try {
        const std::vector<std::uint8_t> data = cache.cache.getData();
        DiskCache(default_cache_folder())
            .store(pipeline_cache_key(cache_key, double_precision), std::as_bytes(std::span(data)));
    } catch (const vk::Error&) {  // best effort: the cache is an optimisation
    }
}

std::string Kernels::interpreter_cache_key(Kernel kernel, std::span<const std::uint32_t> spirv,
                                           Specialization specialization) const {
    char text[160];
    std::snprintf(text, sizeof text, "interpreter-%s-%016llx-w%u-h%u-o%016llx-k%u", kernel_name(kernel),
                  static_cast<unsigned long long>(hash64(std::as_bytes(spirv))), workgroup_size(),
                  specialization.home_count, static_cast<unsigned long long>(specialization.ops),
                  specialization.directions);
    return text;
}

std::string Kernels::pipeline_cache_key(std::string_view cache_key, bool double_precision) const {
    return "pipeline-" + cache_key_ + "-" + std::string(cache_key) + precision_suffix(double_precision);
}

vk::raii::Pipeline Kernels::create_pipeline(std::span<const std::uint32_t> spirv, bool double_precision,
                                            const std::string& name, std::string_view cache_key,
                                            PipelineReport& report, std::span<const std::byte> metadata) {
    auto start = Clock::now();
    PipelineCacheBlob cache = load_pipeline_cache(cache_key, double_precision);
    report.cache_load_s = seconds_since(start);
    start = Clock::now();
    std::optional<vk::raii::Pipeline> pipeline;
    std::vector<std::uint8_t> identifier;
    try {
        pipeline.emplace(make_pipeline({spirv, {}, identifier_algorithm_.empty() ? nullptr : &identifier},
                                       double_precision, &cache.cache, {}, &report.driver_cache_hit));
    } catch (...) {
        rethrow_setup_error("gpu: cannot create the " + name + " (" +
                            (double_precision ? "double" : "float") + ") pipeline");
    }
    report.create_s = seconds_since(start);
    if (statistics_) print_statistics(*pipeline, name + (double_precision ? " f64" : " f32"));
    // Compiled now (no blob, or the driver says it missed the one it had): keep the driver's
    // code for the next process, and the module's identifier to find it by.
    start = Clock::now();
    keep_pipeline_cache(cache, cache_key, double_precision, report.driver_cache_hit);
    if (!identifier.empty())
        DiskCache(default_cache_folder())
            .store(identifier_key(cache_key, double_precision), identifier_payload(identifier, metadata));
    report.store_s = seconds_since(start);
    return std::move(*pipeline);
}

void print_pipeline_statistics(const vk::raii::Device& device, const vk::raii::Pipeline& pipeline,
                               const std::string& label) {
    try {
        const auto executables = device.getPipelineExecutablePropertiesKHR(vk::PipelineInfoKHR(*pipeline));
        for (std::uint32_t e = 0; e < executables.size(); ++e) {
            std::cerr << label << " [" << executables[e].name.data() << "]:";
            for (const auto& statistic :
                 device.getPipelineExecutableStatisticsKHR(vk::PipelineExecutableInfoKHR(*pipeline, e))) {
                std::cerr << ' ' << statistic.name.data() << '=';
                switch (statistic.format) {
                    case vk::PipelineExecutableStatisticFormatKHR::eBool32:
                        std::cerr << (statistic.value.b32 ? "true" : "false");
                        break;
                    case vk::PipelineExecutableStatisticFormatKHR::eInt64:
                        std::cerr << statistic.value.i64;
                        break;
                    case vk::PipelineExecutableStatisticFormatKHR::eUint64:
                        std::cerr << statistic.value.u64;
                        break;
                    case vk::PipelineExecutableStatisticFormatKHR::eFloat64:
                        std::cerr << statistic.value.f64;
                        break;
                }
                std::cerr << ';';
            }
            std::cerr << '\n';
        }
    } catch (const vk::Error& error) {
        std::cerr << label << ": no statistics (" << error.what() << ")\n";
    }
}

void Kernels::print_statistics(const vk::raii::Pipeline& pipeline, const std::string& name) const {
    print_pipeline_statistics(device_, pipeline, "gpu pipeline " + name);
}

}  // namespace tapevm::gpu::detail
