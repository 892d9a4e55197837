// The GPU VM: a tape interpreter on Vulkan compute, one invocation per point.
//
//   tapevm::gpu::Vm vm(tape);                         // DeviceUnavailable when no device
//   vm.jacobian(batch, std::span<float>(jacobians));  // host spans in and out, chunked
//
//   auto x = vm.upload<float>(inputs);                // device-resident: upload once,
//   auto j = vm.allocate<float>(points * m * n);      // evaluate many times, results
//   vm.jacobian(points, x, nullptr, j);               // stay on the device
//   vm.download(j, std::span<float>(host));
//
// Same operations and semantics as the reference VM (evaluator.hpp, batch.hpp). The batch is
// processed in chunks sized to the device's limits; uploads, compute and downloads of
// consecutive chunks overlap. No Vulkan type appears here: the Vulkan objects and their
// dispatcher live in src/vm_gpu/.
//
// Device selection: Options::device, else the environment variable TAPEVM_DEVICE, else the
// first discrete GPU, else the first device. A selector is a device index (as listed by
// devices() and `tapevm devices`) or a case-insensitive substring of the device name.
// The Khronos validation layer is enabled by Options::validation or TAPEVM_VULKAN_VALIDATION=1
// when it is installed; its messages are collected (validation_messages()).
//
// Threads (docs/THREADS.md): every call is const and may come from any thread, on one Vm or on
// many. The Vms of a process share one Vulkan device per physical device (and validation
// setting), its pipelines and its lock: calls on one device run one at a time, in any order,
// each with the results it would have alone. A Buffer may be used by any Vm of its device on any
// thread, but not destroyed while another thread's call uses it. last_timing() is per thread. A
// lost device fails every Vm on it (DeviceLost); Vms made later open a new device. The kernel
// disk cache may be shared by threads and processes: entries are written to a temporary file and
// renamed, and checked when read, so a load never sees part of an entry.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "tapevm/evaluator.hpp"

namespace tapevm::gpu {

/// A Vulkan device as the loader reports it.
struct DeviceInfo {
    std::size_t index = 0;  // position in devices(), what TAPEVM_DEVICE=<index> selects
    std::string name;
    std::string type;                // "discrete", "integrated", "virtual", "cpu", "other"
    std::uint64_t memory_bytes = 0;  // the largest device-local heap
    bool float64 = false;            // shaderFloat64: double precision available
    // Subnormal numbers: true when the kernels keep them on this device in float (double),
    // because its float controls (shaderDenormPreserveFloat32/64) let them request the
    // DenormPreserve mode; false: the driver may flush subnormal inputs and results of that
    // precision to zero, which the reference VM never does.
    bool subnormals_float = false;
    bool subnormals_double = false;
    std::uint64_t max_storage_buffer_range = 0;
    std::uint32_t max_workgroup_count_x = 0;
    std::uint32_t max_workgroup_size_x = 0;
    std::uint32_t max_shared_memory_bytes = 0;  // per workgroup (maxComputeSharedMemorySize)
    std::uint32_t subgroup_size = 0;
    /// Compute shaders may use subgroupShuffle/subgroupShuffleXor (GL_KHR_shader_subgroup_shuffle).
    bool subgroup_shuffle = false;
    std::string driver;       // driver name and version info
    std::string api_version;  // "1.3.239"
};

/// Every Vulkan device. Throws DeviceUnavailable (with the reason) when there is no Vulkan
/// loader or no instance can be created; an empty list when the loader finds no device.
std::vector<DeviceInfo> devices();

/// Messages the validation layer reported since the last call (and forgets them). Empty
/// unless validation is enabled; the test suites fail on any message.
std::vector<std::string> validation_messages();

/// How a Vm evaluates a tape.
///   interpreter  the interpreter's kernels, compiled once at build time for every tape: values
///                and derivatives in a work buffer in device memory.
///   compiled     the tape compiler: for each mode and precision, a kernel generated from this
///                tape (GLSL straight-line code, values and adjoints in registers, forward and
///                reverse fused in one pass), compiled by glslang at run time on first use and
///                cached in memory and on disk (SPIR-V and the driver's pipeline cache, under
///                TAPEVM_CACHE_DIR, else $XDG_CACHE_HOME/tapevm, else ~/.cache/tapevm). A kernel
///                too large to compile well (TAPEVM_GPU_COMPILE_LIMIT statements, default
///                20000 on GPUs and 2500 on CPU devices such as lavapipe, whose compiler is
///                far slower) falls back to the interpreter; compile_plan() says which runs.
enum class Engine { interpreter, compiled };

/// When Engine::compiled builds a tape's kernel for a mode and precision (on the first call
/// that needs it):
///   background  the call does not wait: it runs on the interpreter (whose kernels are built
///               into the program) while the kernel is built on a compile thread (a pool of
///               min(hardware threads, 4) shared by every Vm, TAPEVM_GPU_COMPILE_THREADS, so
///               several tapes' kernels compile at once); later calls run the compiled kernel
///               once it is ready. Results are right either way, but the first calls (the
///               interpreter) may differ from later ones (the compiled kernel) in the last bits
///               where the driver optimises the two differently (fused multiply-adds, for
///               example): use `wait` for bit-for-bit repeatable results from the first call.
///   wait        the call builds the kernel (or waits for the build under way) and runs it: a
///               first call pays the compile, every call runs the same kernel.
///   automatic   TAPEVM_GPU_COMPILE ("background" or "wait"), else background.
/// A build that fails (glslang, the driver, a kernel over the size limit) leaves the
/// interpreter running that mode; compile_plan() says why. compile_plan() always waits.
enum class CompileWait { automatic, background, wait };

/// What runs one mode: the compiled kernel or the interpreter, and what compiling it took.
struct CompilePlan {
    bool compiled = false;
    std::string reason;             // why the interpreter runs it (empty when compiled)
    std::size_t statements = 0;     // statements of the generated kernel
    std::size_t library_calls = 0;  // math-library calls in it (exp, sin, pow, ...)
    /// The kernel from a cache (keyed by the tape and mode): SPIR-V from memory or disk, or a
    /// pipeline made before or found by its module identifier; no GLSL generated, no glslang.
    bool spirv_from_cache = false;
    /// The driver found the pipeline in its pipeline cache by the shader module's identifier
    /// (VK_EXT_shader_module_identifier, where offered): no SPIR-V read or passed.
    bool pipeline_from_identifier = false;
    double spirv_load_s = 0;       // hashing the tape and looking its kernel up in memory and on disk
    double generate_s = 0;         // generating the GLSL (a cache miss)
    double glslang_s = 0;          // GLSL to SPIR-V (a cache miss)
    double pipeline_s = 0;         // the pipeline: all of the next three, and bookkeeping
    double pipeline_cache_s = 0;   // the kernel's pipeline cache from disk into the driver
    double pipeline_create_s = 0;  // the driver's vkCreateShaderModule and vkCreateComputePipelines
    double pipeline_store_s = 0;   // the driver's compiled code to the disk cache (newly compiled)
    bool pipeline_reused = false;  // the device had made this pipeline earlier in the process
    /// Whether the driver found the pipeline in its pipeline cache (pipeline creation feedback;
    /// empty where the driver does not say, or the pipeline was reused).
    std::optional<bool> driver_cache_hit;
    double total_s = 0;  // the whole build (on a compile thread with CompileWait::background)
    /// Built in the background (CompileWait::background) while calls ran on the interpreter.
    bool background = false;
    /// From the request (the first call of the mode) to the build's start on a compile thread.
    double queued_s = 0;
    /// compile_status() only: the kernel is still being built (the interpreter runs meanwhile).
    bool pending = false;
};

/// The GLSL the tape compiler generates for `tape` in `mode` ("forward", "gradient", "jacobian",
/// "jvp", "vjp", "hvp", "value_and_gradient") and precision. Needs no device.
std::string generated_glsl(const Tape& tape, std::string_view mode, bool double_precision);

/// What Engine::compiled would run for `tape` in `mode` on a GPU: the compiled kernel, or the
/// interpreter when the kernel is over the size limit (the reason says so). Compiles nothing
/// and needs no device; only `compiled`, `reason`, `statements` and `library_calls` are set.
CompilePlan planned_compile(const Tape& tape, std::string_view mode, bool double_precision);

struct Options {
    /// "" = TAPEVM_DEVICE, else the first discrete GPU, else any; an index or a name substring.
    std::string device;
    /// Points per chunk; 0 = from the device's limits (2^20 on GPUs, a cache-sized working set on CPU
    /// devices). Rounded up to a multiple of the workgroup size (64).
    std::size_t chunk_points = 0;
    /// Enable VK_LAYER_KHRONOS_validation when installed (also TAPEVM_VULKAN_VALIDATION=1).
    bool validation = false;
    /// Interpreter or tape compiler (Engine).
    Engine engine = Engine::interpreter;
    /// Engine::compiled: whether a call waits for its kernel's build (CompileWait).
    CompileWait compile = CompileWait::automatic;
};

class Vm;
namespace detail {
struct BufferStorage;
struct BufferAccess;
}  // namespace detail

/// Device memory holding `size()` values of Real (float or double), allocated by a Vm and
/// usable by the Vms of the same device. Move-only; frees the memory when destroyed.
template <class Real> class Buffer {
public:
    Buffer() = default;
    Buffer(Buffer&&) noexcept = default;
    Buffer& operator=(Buffer&&) noexcept = default;
    Buffer(const Buffer&) = delete;
    Buffer& operator=(const Buffer&) = delete;
    ~Buffer() = default;

    std::size_t size() const { return size_; }

private:
    friend struct detail::BufferAccess;
    Buffer(std::shared_ptr<detail::BufferStorage> storage, std::size_t size)
        : storage_(std::move(storage)), size_(size) {}
    std::shared_ptr<detail::BufferStorage> storage_;
    std::size_t size_ = 0;
};

class Vm final : public EvaluatorBase<Vm> {
public:
    /// Throws DeviceUnavailable when no device matches (the message says why).
    explicit Vm(Tape tape, Options options = {});
    ~Vm() override;
    Vm(Vm&&) noexcept;
    Vm& operator=(Vm&&) noexcept;

    const Tape& tape() const override;
    /// "gpu (NVIDIA H100 80GB HBM3)"
    std::string name() const override;
    const DeviceInfo& device() const;
    /// True when the validation layer is active for this Vm's device.
    bool validation() const;
    /// Points per chunk for a call in `mode` ("forward", "gradient", "jacobian", "jvp", "vjp",
    /// "hvp") and precision Real: what the device's limits and the working-set target allow.
    template <class Real> std::size_t chunk_points(std::string_view mode) const;

    using EvaluatorBase<Vm>::forward;
    using EvaluatorBase<Vm>::gradient;
    using EvaluatorBase<Vm>::jacobian;
    using EvaluatorBase<Vm>::jvp;
    using EvaluatorBase<Vm>::vjp;
    using EvaluatorBase<Vm>::hvp;

    // Device-resident use. Sizes are checked as for host spans (ShapeError); `params` may be
    // null for a tape without parameters, else holds param_count values (shared) or
    // points * param_count (per point).
    template <class Real> Buffer<Real> upload(std::span<const Real> values) const;
    template <class Real> Buffer<Real> allocate(std::size_t count) const;
    template <class Real> void download(const Buffer<Real>& buffer, std::span<Real> out) const;
    template <class Real>
    Report forward(std::size_t points, const Buffer<Real>& inputs,
                   const std::type_identity_t<Buffer<Real>>* params, Buffer<Real>& outputs) const;
    template <class Real>
    Report gradient(std::size_t points, const Buffer<Real>& inputs,
                    const std::type_identity_t<Buffer<Real>>* params, Buffer<Real>& gradients) const;
    template <class Real>
    Report jacobian(std::size_t points, const Buffer<Real>& inputs,
                    const std::type_identity_t<Buffer<Real>>* params, Buffer<Real>& jacobians,
                    JacobianMode mode = JacobianMode::automatic) const;

    /// The loss and its gradient in one dispatch (a tape with one output; with the compiled
    /// engine one kernel writes both, the interpreter runs forward then gradient): values
    /// [points], gradients [points][n], on the device.
    template <class Real>
    Report value_and_gradient(std::size_t points, const Buffer<Real>& inputs,
                              const std::type_identity_t<Buffer<Real>>* params, Buffer<Real>& values,
                              Buffer<Real>& gradients) const;

    /// The engine this Vm was made with.
    Engine engine() const;
    /// What runs `mode` (as chunk_points names it, or "value_and_gradient") in precision Real.
    /// With Engine::compiled this compiles the kernel now if it is new (so a first call's
    /// latency can be paid up front and measured); with the interpreter it compiles nothing.
    template <class Real> CompilePlan compile_plan(std::string_view mode) const;
    /// What runs `mode` in precision Real now, without waiting or starting a build: the plan of
    /// the finished build, or `pending` while it runs (the interpreter runs meanwhile); with
    /// Engine::compiled and no build asked for yet, not compiled and the reason "not requested
    /// yet". With the interpreter as compile_plan().
    template <class Real> CompilePlan compile_status(std::string_view mode) const;
    /// The compile mode this Vm uses (Options::compile, with automatic resolved).
    CompileWait compile_wait() const;

    /// Seconds of GPU time (timestamp queries) the last call on this thread spent in compute
    /// dispatches and in transfers (uploads and downloads); 0 where the device has no timestamps.
    struct Timing {
        double compute_s = 0;
        double transfer_s = 0;
        /// The call ran a compiled kernel (false: the interpreter's kernels).
        bool compiled = false;
    };
    Timing last_timing() const;

    struct Impl;

private:
    friend class EvaluatorBase<Vm>;
    template <class Real> Report forward_impl(const Batch<Real>& batch, std::span<Real> outputs) const;
    template <class Real> Report gradient_impl(const Batch<Real>& batch, std::span<Real> gradients) const;
    template <class Real>
    Report jacobian_impl(const Batch<Real>& batch, std::span<Real> jacobians, JacobianMode mode) const;
    template <class Real>
    Report jvp_impl(const Batch<Real>& batch, std::span<const Real> tangents, std::span<Real> results) const;
    template <class Real>
    Report vjp_impl(const Batch<Real>& batch, std::span<const Real> cotangents,
                    std::span<Real> results) const;
    template <class Real>
    Report hvp_impl(const Batch<Real>& batch, std::span<const Real> cotangents,
                    std::span<const Real> directions, std::span<Real> results) const;

    std::unique_ptr<Impl> impl_;
};

}  // namespace tapevm::gpu
