// The interpreter's compute kernels: the embedded SPIR-V (shaders/*.comp, compiled at build
// time in float and double), their common descriptor-set and pipeline layouts, and the
// pipelines, created on first use.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "float_controls.hpp"
#include "tapevm/tape.hpp"
#include "vulkan.hpp"

namespace tapevm::gpu::detail {

#include "push_constants.h"  // shaders/push_constants.h: the one definition GLSL shares
static_assert(sizeof(PushConstants) == TV_PUSH_CONSTANT_FIELDS * sizeof(std::uint32_t),
              "push constants are 32-bit fields without padding on both sides");

/// forward_compact and reverse_compact run the compact program (compact.hpp) instead of the
/// program in slot order, with its homes in the work buffer; forward_local and reverse_local
/// run it with the homes in per-invocation local memory (shaders/compact.glsl), no work
/// buffer, one dispatch per chunk. The Runner picks among them for forward and reverse
/// (tuning.hpp).
enum class Kernel : std::uint32_t {
    forward,
    tangent,
    reverse,
    hvp,
    forward_compact,
    reverse_compact,
    forward_local,
    reverse_local
};
inline constexpr std::size_t kernel_count = 8;

/// True for the kernels whose homes are local memory sized by specialization constant 1.
constexpr bool is_local(Kernel kernel) {
    return kernel == Kernel::forward_local || kernel == Kernel::reverse_local;
}

/// Workgroup size of every kernel: specialization constant 0 of shaders/interpreter.glsl
/// (local_size_x_id = 0), set at pipeline creation (64 unless TAPEVM_GPU_WORKGROUP says).
std::uint32_t workgroup_size();

/// The home count a local kernel's pipeline is specialised for (specialization constant 1,
/// HOME_COUNT in shaders/compact.glsl) when a call needs `homes` homes per point: the next
/// power of two, at least local_home_minimum, so that a handful of pipelines per kernel and
/// precision serve every tape (each costs seconds to compile on lavapipe). Never less than
/// `homes`; the unused tail only reserves local memory, it adds no traffic.
inline constexpr std::uint32_t local_home_minimum = 16;
constexpr std::uint32_t local_home_count(std::uint32_t homes) {
    return std::bit_ceil(std::max(homes, local_home_minimum));
}

/// The ops a compact or local pipeline handles (specialization constants 2 and 3,
/// shaders/op_set.glsl): bit i for op number i. The driver's compiler drops the other ops'
/// cases from the kernel's dispatch switches.
using OpSet = std::uint64_t;
inline constexpr OpSet all_ops = ~OpSet{0};
static_assert(op_count <= 64, "an OpSet holds one bit per op");
/// The ops of `tape`'s instructions.
OpSet tape_ops(const Tape& tape);
/// True for the kernels built with shaders/op_set.glsl (the compact and local ones).
constexpr bool takes_op_set(Kernel kernel) {
    return kernel == Kernel::forward_compact || kernel == Kernel::reverse_compact || is_local(kernel);
}

/// What an interpreter pipeline is made for besides its kernel and precision: its
/// specialization constants (shaders/compact.glsl, shaders/op_set.glsl).
struct Specialization {
    std::uint32_t home_count = 0;  // 1: the local kernels' home array (0 for the others)
    OpSet ops = all_ops;           // 2 and 3: the ops the compact and local kernels handle
    std::uint32_t directions = 0;  // 4: their seeds K in reverse mode (0: the push constant says)
    friend auto operator<=>(const Specialization&, const Specialization&) = default;
};

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
/// "forward", "tangent", "reverse", "hvp", "forward_compact", "reverse_compact", "forward_local",
/// "reverse_local".
const char* kernel_name(Kernel kernel);

/// Makes every device forget the compiled kernels' pipelines it made (as a new process
/// starts; those in use stay alive). For tests, through clear_spirv_memory_cache().
void forget_compiled_pipelines();

/// Optional device features the pipelines use.
struct KernelsFeatures {
    /// VK_KHR_pipeline_executable_properties is enabled: each pipeline's statistics are printed
    /// to stderr when created (TAPEVM_GPU_PIPELINE_STATS).
    bool statistics = false;
    /// VK_EXT_pipeline_creation_feedback is enabled: compiled kernels' pipelines say whether
    /// they came from their pipeline cache.
    bool creation_feedback = false;
    /// VK_EXT_shader_module_identifier is enabled (with pipeline creation cache control): the
    /// device's identifier algorithm UUID in hex, else "" (identified_pipeline()).
    std::string identifier_algorithm;
};

/// Where a compiled kernel's pipeline came from and what it took (compiled_pipeline()).
struct PipelineReport {
    bool reused = false;      // the device had made it before in this process
    double cache_load_s = 0;  // its pipeline cache: the blob from disk, vkCreatePipelineCache
    double create_s = 0;      // vkCreateShaderModule and vkCreateComputePipelines
    double store_s = 0;  // the pipeline cache's data and module identifier to disk (a newly made pipeline)
    bool from_identifier = false;  // made by identified_pipeline(): no SPIR-V
    /// From pipeline creation feedback: whether the driver found the pipeline in the
    /// pipeline cache (nothing where it does not say).
    std::optional<bool> driver_cache_hit;
};

class Kernels {
public:
    /// `controls`: the device's float controls, which decide the widths whose subnormals
    /// the kernels ask to preserve (float_controls.hpp).
    /// `cache_key`: names the device and its driver version; the pipeline caches of compiled
    /// kernels are kept on disk under it.
    Kernels(const vk::raii::Device& device, bool float64, const FloatControls& controls,
            KernelsFeatures features, std::string cache_key);
    ~Kernels();

    const vk::raii::DescriptorSetLayout& set_layout() const { return set_layout_; }
    const vk::raii::PipelineLayout& layout() const { return layout_; }
    /// The pipeline of `kernel` in double or float; created on first use and kept per
    /// (kernel, precision, specialization) (the caller holds the device's mutex).
    /// `specialization.home_count`: for the local kernels, the length of their home array (a
    /// local_home_count() value, at least the homes per point of every call that runs the
    /// pipeline); 0 for the others. Its ops and directions apply to takes_op_set() kernels only.
    /// Throws Unsupported for double on a device without shaderFloat64.
    const vk::raii::Pipeline& pipeline(Kernel kernel, bool double_precision,
                                       Specialization specialization = {});
    /// The pipeline of SPIR-V compiled at run time (the tape compiler, compiler.hpp) under
    /// `cache_key` (its kernel's key), created on first use by create_pipeline() and then kept
    /// for the device's life with `metadata` (the compiler's sizes of the kernel): every Vm of
    /// the program that runs the same kernel shares it (a CPU device such as lavapipe takes up
    /// to seconds per pipeline and caches none itself). `report` (when given) says what it
    /// took. The caller holds the device's mutex.
    const vk::raii::Pipeline& compiled_pipeline(std::span<const std::uint32_t> spirv, bool double_precision,
                                                const std::string& name, std::string_view cache_key,
                                                PipelineReport* report = nullptr,
                                                std::span<const std::byte> metadata = {});
    /// The pipeline under `cache_key` without its SPIR-V, or null: the one this device made
    /// before (with its metadata), else, with module identifiers, one the driver finds in the
    /// kernel's pipeline cache on disk by the module identifier stored beside it (then
    /// `metadata` is what compiled_pipeline() stored with it). Null where neither is there or
    /// the driver needs the SPIR-V: then compiled_pipeline(). The caller holds the device's mutex.
    const vk::raii::Pipeline* identified_pipeline(bool double_precision, const std::string& name,
                                                  std::string_view cache_key, PipelineReport& report,
                                                  std::vector<std::byte>& metadata);
    /// A pipeline of SPIR-V compiled at run time (the tape compiler, compiler.hpp), with the
    /// interpreter's layout, workgroup size and DenormPreserve patch, through a pipeline cache
    /// of its own, loaded from the disk cache (disk_cache.hpp) under `cache_key` (the kernel's
    /// key) and this device's key, and stored there when the driver compiled the kernel now;
    /// with module identifiers, the module's identifier and `metadata` stored beside it.
    /// The caller holds the device's mutex.
    vk::raii::Pipeline create_pipeline(std::span<const std::uint32_t> spirv, bool double_precision,
                                       const std::string& name, std::string_view cache_key,
                                       PipelineReport& report, std::span<const std::byte> metadata = {});

private:
    /// A module's code, or (code empty) its identifier alone.
    struct ShaderSource {
        std::span<const std::uint32_t> spirv;
        std::span<const std::uint8_t> identifier;
        std::vector<std::uint8_t>* identifier_out = nullptr;  // receives the module's identifier
    };
    struct PipelineCacheBlob {
        std::vector<std::byte> blob;  // empty: nothing on disk (or the driver refused it)
        vk::raii::PipelineCache cache{nullptr};
    };
    struct CompiledPipeline {
        vk::raii::Pipeline pipeline;
        std::vector<std::byte> metadata;
    };
    PipelineCacheBlob load_pipeline_cache(std::string_view cache_key, bool double_precision) const;
    std::string pipeline_cache_key(std::string_view cache_key, bool double_precision) const;
    std::string identifier_key(std::string_view cache_key, bool double_precision) const;

    /// Sets specialization constant 0 (the workgroup size) and those of `specialization` that
    /// differ from their defaults. `driver_cache_hit` (when given, with creation feedback on)
    /// receives whether the driver found the pipeline in `cache`. From an identifier the
    /// pipeline is null (getConstructorSuccessCode() ePipelineCompileRequired) unless the
    /// driver found it in `cache`.
    vk::raii::Pipeline make_pipeline(ShaderSource source, bool double_precision,
                                     const vk::raii::PipelineCache* cache, Specialization specialization = {},
                                     std::optional<bool>* driver_cache_hit = nullptr) const;
    void print_statistics(const vk::raii::Pipeline& pipeline, const std::string& name) const;

    const vk::raii::Device& device_;
    bool float64_;
    bool statistics_;
    bool creation_feedback_;
    std::string identifier_algorithm_;
    std::array<std::vector<std::uint32_t>, 2> denorm_widths_;   // float, double
    std::array<std::vector<std::uint32_t>, 2> inf_nan_widths_;  // float, double
    std::map<std::string, CompiledPipeline> compiled_;          // compiled_pipeline()'s, by key
    vk::raii::DescriptorSetLayout set_layout_{nullptr};
    vk::raii::PipelineLayout layout_{nullptr};
    // By (kernel, double precision, specialization); std::map keeps references stable.
    std::map<std::tuple<Kernel, bool, Specialization>, vk::raii::Pipeline> pipelines_;
    std::string cache_key_;
};

}  // namespace tapevm::gpu::detail
