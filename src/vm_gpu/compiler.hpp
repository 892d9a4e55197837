// The tape compiler's pipelines: a generated kernel (codegen.hpp) compiled to SPIR-V by glslang
// at run time (glsl_compiler.hpp) and made a pipeline, cached at three levels:
//   - pipelines per device, shared by the Vms of a program (Kernels::compiled_pipeline), and
//     per Vm one per KernelSpec, looked up on first use;
//   - SPIR-V in memory (the process) and on disk (disk_cache.hpp, under the user's cache
//     folder), keyed by kernel_key(): a 128-bit hash of the tape, the spec and the generator's
//     fingerprint (its sources, the op table and the embedded GLSL library, hashed at build
//     time), so that a hit generates no GLSL;
//   - the driver's compiled code in a VkPipelineCache per kernel, kept on disk per device and
//     driver version (Kernels::create_pipeline).
// A disk entry that is missing, truncated or corrupted is rebuilt, never trusted.
//
// Builds run off the caller's thread (compile_pool.hpp): with CompileWait::background a call
// whose kernel is not built yet runs on the interpreter and starts the build on the compile
// pool; a later call runs the compiled kernel once it is ready. Nothing here needs the device's
// mutex: the caches lock themselves (Kernels::compiled_pipeline makes the driver's pipeline
// outside its lock), so interpreter calls go on while the driver compiles.
//
// Tapes too large for one kernel fall back to the interpreter: a kernel of more statements
// than statement_limit() is not compiled (compile time and register spills grow with it; on a
// CPU device such as lavapipe, compiling takes ~1 ms per statement and far more per inlined
// math-library call, so the limit is lower there and counts the calls: over_limit()).
#pragma once

#include <cstddef>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "codegen.hpp"
#include "kernels.hpp"
#include "tapevm/tape.hpp"
#include "vulkan.hpp"

namespace tapevm::gpu::detail {

class Device;

/// Statements a compiled kernel may have on a device of `device_type` (DeviceInfo::type):
/// TAPEVM_GPU_COMPILE_LIMIT, else 20000 on GPUs and 2500 on CPU devices.
std::size_t statement_limit(std::string_view device_type);

/// Why `kernel` is not compiled on a device of `device_type`, or "" when it is: its size over
/// statement_limit(). On GPUs the size is its statements. On CPU devices each math-library
/// call also counts as 25 statements in float and 150 in double: lavapipe's LLVM takes time
/// that grows faster than the inlined code (trig16's f64 forward kernel, 227 statements and
/// 64 calls, took 210 s to compile there, its f32 one 6 s; rosenbrock16's f64 gradient, 632
/// statements and no calls, well under a second).
std::string over_limit(const GeneratedKernel& kernel, std::string_view device_type, bool double_precision);
std::string over_limit(std::size_t statements, std::size_t library_calls, std::string_view device_type,
                       bool double_precision);
/// The same against an explicit `limit` (statement_limit() read earlier, on the caller's thread).
std::string over_limit(std::size_t statements, std::size_t library_calls, std::string_view device_type,
                       bool double_precision, std::size_t limit);

/// Why no kernel is compiled on the device named `device_name` at all, or "": lavapipe's LLVM
/// optimiser (Mesa 22.3, LLVM 15) miscompiles some compiled kernels (f32 exp feeding a
/// logarithm: log1p(exp(x)) gave 5.9e-39 for 1.23; tests/gpu/test_gpu_compiler.cpp), so on
/// llvmpipe the interpreter runs unless GALLIVM_PERF holds "nopt" (the optimiser off).
std::string device_refuses(std::string_view device_name);

/// Where a compiled kernel's time went the last time it was built.
struct CompileReport {
    bool compiled = false;  // false: the interpreter runs this spec
    std::string reason;     // why not (empty when compiled)
    std::size_t statements = 0;
    std::size_t library_calls = 0;
    bool spirv_from_cache = false;  // SPIR-V from memory or disk: no GLSL generated, no glslang
    double key_s = 0;               // kernel_key()
    double spirv_load_s = 0;        // looking the SPIR-V up in memory and on disk
    double generate_s = 0, glslang_s = 0;
    PipelineReport pipeline;
    double pipeline_s = 0;    // all of the pipeline step (Kernels::compiled_pipeline)
    double total_s = 0;       // the whole build (on a compile thread, or the caller's when waited for)
    bool background = false;  // built on the compile pool while calls ran on the interpreter
    double queued_s = 0;      // from the request to the build's start (waiting for a compile thread)
};

/// What names the kernel of `spec` for `tape` in the caches: "kernel-" and a 128-bit hash of
/// codegen_fingerprint, the spec's fields and the tape's contents (every field of every
/// instruction, constant, output and guard).
std::string kernel_key(const Tape& tape, const KernelSpec& spec);

/// A kernel's SPIR-V with the sizes the limit checks (what the caches hold).
struct CachedKernel {
    std::vector<std::uint32_t> spirv;
    std::size_t statements = 0;
    std::size_t library_calls = 0;
};

/// The kernel under `key` from the process's memory, else the disk cache (then kept in
/// memory); null on a miss. An entry that is not SPIR-V is a miss.
std::shared_ptr<const CachedKernel> cached_kernel(const std::string& key);
/// Compiles `kernel`'s GLSL with glslang and keeps the result under `key` in memory and on disk.
std::shared_ptr<const CachedKernel> compile_and_store(const std::string& key, const GeneratedKernel& kernel,
                                                      double& glslang_s);
/// Forgets the SPIR-V and the devices' pipelines held in memory (as a new process starts): the
/// next build of a kernel reads the disk cache. For tests.
void clear_spirv_memory_cache();

/// One kernel's build, shared by the Vm that asked for it and the compile pool's job, so that
/// either may end first. `state` moves queued -> running -> done under `mutex`; `done` is
/// notified when it is done. Whoever moves it from queued to running builds it.
struct KernelBuild {
    enum class State { queued, running, done };
    KernelSpec spec;
    std::size_t limit = 0;  // statement_limit(), read on the requesting thread
    std::string refused;    // device_refuses(), read on the requesting thread
    std::chrono::steady_clock::time_point requested;
    std::mutex mutex;
    std::condition_variable done;
    State state = State::queued;
    bool abandoned = false;                        // its Vm is gone: a queued build is skipped
    const vk::raii::Pipeline* pipeline = nullptr;  // the device's (Kernels::compiled_pipeline)
    CompileReport report;
};

class CompiledKernels {
public:
    /// `background`: pipeline() starts a new kernel's build on the compile pool and returns null
    /// meanwhile; else pipeline() builds it on the caller's thread and waits.
    CompiledKernels(std::shared_ptr<Device> device, std::shared_ptr<const Tape> tape, bool background);
    /// Abandons the builds still queued; a running one finishes on its thread (it owns what it
    /// uses) and its pipeline stays with the device.
    ~CompiledKernels();
    CompiledKernels(const CompiledKernels&) = delete;
    CompiledKernels& operator=(const CompiledKernels&) = delete;

    /// The pipeline of `spec` if it is built, or null: the interpreter runs the call (the
    /// kernel is over the limit or failed, report(spec) says why, or, in background mode, it is
    /// still being built). Needs no lock held; never blocks in background mode.
    /// `pending` (when given) is set to whether the build is still running.
    const vk::raii::Pipeline* pipeline(const KernelSpec& spec, bool* pending = nullptr);
    /// What happened to `spec`, building it first (and waiting for it) when it is not done.
    CompileReport report(const KernelSpec& spec);
    /// What happened to `spec` so far without waiting: nothing when it was never asked for;
    /// `pending` true while it is being built.
    std::optional<CompileReport> report_now(const KernelSpec& spec, bool& pending);

private:
    std::shared_ptr<KernelBuild> find(const KernelSpec& spec);
    std::shared_ptr<KernelBuild> start(const KernelSpec& spec, bool background);
    /// Waits for `build`, building it on this thread when no compile thread has started it.
    void wait(KernelBuild& build);

    std::shared_ptr<Device> device_;
    std::shared_ptr<const Tape> tape_;
    bool background_;
    std::mutex mutex_;
    std::vector<std::shared_ptr<KernelBuild>> builds_;
};

}  // namespace tapevm::gpu::detail
