#include "compiler.hpp"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <system_error>
#include <map>
#include <mutex>
#include <span>

#include "codegen_fingerprint.hpp"
#include "compile_pool.hpp"
#include "context.hpp"
#include "disk_cache.hpp"
#include "glsl_compiler.hpp"
#include "tapevm/error.hpp"

namespace tapevm::gpu::detail {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
}

std::span<const std::byte> bytes_of(std::string_view text) {
    return std::as_bytes(std::span<const char>(text.data(), text.size()));
}

std::string hex64(std::uint64_t value) {
    char text[24];
    std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(value));
    return text;
}

// The process's kernels, by key.
struct MemoryCache {
    std::mutex mutex;
    std::map<std::string, std::shared_ptr<const CachedKernel>> kernels;
};
MemoryCache& memory_cache() {
    static MemoryCache cache;
    return cache;
}

// Appends the bytes of `values` (trivially copyable fields, no padding) to `out`.
template <class T> void append(std::vector<std::byte>& out, std::span<const T> values) {
    const auto bytes = std::as_bytes(values);
    out.insert(out.end(), bytes.begin(), bytes.end());
}
template <class T> void append_value(std::vector<std::byte>& out, T value) {
    append(out, std::span<const T>(&value, 1));
}

// A kernel's sizes as stored: statements and library calls, two u64s (first in a SPIR-V disk
// entry's payload, and the metadata beside a module identifier).
constexpr std::size_t sizes_bytes = 2 * sizeof(std::uint64_t);

void append_sizes(std::vector<std::byte>& out, std::size_t statements, std::size_t library_calls) {
    append_value(out, static_cast<std::uint64_t>(statements));
    append_value(out, static_cast<std::uint64_t>(library_calls));
}

// The sizes at the start of `bytes` (at least sizes_bytes long).
void read_sizes(std::span<const std::byte> bytes, std::size_t& statements, std::size_t& library_calls) {
    std::uint64_t sizes[2];
    std::memcpy(sizes, bytes.data(), sizes_bytes);
    statements = static_cast<std::size_t>(sizes[0]);
    library_calls = static_cast<std::size_t>(sizes[1]);
}

}  // namespace

std::size_t statement_limit(std::string_view device_type) {
    if (const char* text = std::getenv("TAPEVM_GPU_COMPILE_LIMIT"); text != nullptr && *text != '\0') {
        char* end = nullptr;
        const unsigned long long value = std::strtoull(text, &end, 10);
        if (end == nullptr || *end != '\0' || *text == '-')
            throw Error(std::string("TAPEVM_GPU_COMPILE_LIMIT: expected a number of statements, got '") +
                        text + "'");
        return static_cast<std::size_t>(value);
    }
    return device_type == "cpu" ? 2500 : 20000;
}

std::string over_limit(const GeneratedKernel& kernel, std::string_view device_type, bool double_precision) {
    return over_limit(kernel.statements, kernel.library_calls, device_type, double_precision);
}

std::string over_limit(std::size_t statements, std::size_t library_calls, std::string_view device_type,
                       bool double_precision) {
    return over_limit(statements, library_calls, device_type, double_precision, statement_limit(device_type));
}

std::string over_limit(std::size_t statements, std::size_t library_calls, std::string_view device_type,
                       bool double_precision, std::size_t limit) {
    const bool cpu = device_type == "cpu";
    const std::size_t call_weight = !cpu ? 0 : (double_precision ? 150 : 25);
    const std::size_t size = statements + library_calls * call_weight;
    if (size <= limit) return {};
    std::string reason = std::to_string(statements) + " statements";
    if (call_weight != 0)
        reason += " and " + std::to_string(library_calls) + " math-library calls (size " +
                  std::to_string(size) + " on a CPU device)";
    return reason + ", over the limit of " + std::to_string(limit) + " (TAPEVM_GPU_COMPILE_LIMIT)";
}

std::string device_refuses(std::string_view device_name) {
    if (device_name.find("llvmpipe") == std::string_view::npos) return {};
    const char* perf = std::getenv("GALLIVM_PERF");
    if (perf != nullptr && std::string_view(perf).find("nopt") != std::string_view::npos) return {};
    return "lavapipe's LLVM optimiser miscompiles some compiled kernels; GALLIVM_PERF=nopt turns it off";
}

void clear_spirv_memory_cache() {
    MemoryCache& cache = memory_cache();
    const std::lock_guard lock(cache.mutex);
    cache.kernels.clear();
    forget_compiled_pipelines();
}

std::string kernel_key(const Tape& tape, const KernelSpec& spec) {
    std::vector<std::byte> data;
    data.reserve(64 + tape.instruction_count() * 16 + tape.constant_count() * 8);
    append(data, std::span<const char>(codegen_fingerprint, sizeof codegen_fingerprint));
    append(data, bytes_of("tapevm kernel cache 2"));
    for (const std::uint32_t field :
         {static_cast<std::uint32_t>(spec.kernel), std::uint32_t{spec.double_precision}, spec.directions,
          std::uint32_t{spec.seeds_from_buffer}, std::uint32_t{spec.write_values}, spec.workgroup,
          std::uint32_t{spec.staging}, tape.input_count(), tape.param_count(), tape.instruction_count(),
          tape.constant_count(), tape.output_count(), tape.guard_count()})
        append_value(data, field);
    for (const Instruction& ins : tape.instructions())  // field by field: no padding hashed
        for (const std::uint32_t field : {static_cast<std::uint32_t>(ins.op), ins.a, ins.b, ins.c})
            append_value(data, field);
    append(data, tape.constants());
    append(data, tape.outputs());
    for (const Guard& guard : tape.guards()) {
        append_value(data, guard.slot);
        append_value(data, guard.expected);
    }
    return "kernel-" + hex64(hash64(data)) + hex64(hash64(data, 0x9e3779b97f4a7c15ull));
}

std::shared_ptr<const CachedKernel> cached_kernel(const std::string& key) {
    MemoryCache& cache = memory_cache();
    {
        const std::lock_guard lock(cache.mutex);
        if (const auto found = cache.kernels.find(key); found != cache.kernels.end()) return found->second;
    }
    const auto stored = DiskCache(default_cache_folder()).load(key);
    if (!stored || stored->size() <= sizes_bytes || (stored->size() - sizes_bytes) % 4 != 0) return nullptr;
    auto kernel = std::make_shared<CachedKernel>();
    read_sizes(*stored, kernel->statements, kernel->library_calls);
    kernel->spirv.resize((stored->size() - sizes_bytes) / 4);
    std::memcpy(kernel->spirv.data(), stored->data() + sizes_bytes, stored->size() - sizes_bytes);
    if (kernel->spirv[0] != 0x07230203u) return nullptr;  // not SPIR-V's magic number
    const std::lock_guard lock(cache.mutex);
    return cache.kernels.emplace(key, std::move(kernel)).first->second;
}

std::shared_ptr<const CachedKernel> compile_and_store(const std::string& key, const GeneratedKernel& kernel,
                                                      double& glslang_s) {
    const auto start = Clock::now();
    auto compiled = std::make_shared<CachedKernel>();
    compiled->spirv = compile_glsl(kernel.glsl);
    compiled->statements = kernel.statements;
    compiled->library_calls = kernel.library_calls;
    glslang_s = seconds_since(start);
    std::vector<std::byte> payload;
    payload.reserve(sizes_bytes + compiled->spirv.size() * 4);
    append_sizes(payload, kernel.statements, kernel.library_calls);
    append(payload, std::span<const std::uint32_t>(compiled->spirv));
    DiskCache(default_cache_folder()).store(key, payload);
    MemoryCache& cache = memory_cache();
    const std::lock_guard lock(cache.mutex);
    return cache.kernels.insert_or_assign(key, std::move(compiled)).first->second;
}

namespace {

// Builds `build`'s kernel for `tape` on `device` (any thread, no lock held): its pipeline, or the
// reason the interpreter runs it. Never throws: a failure (glslang, the driver, a lost device)
// becomes the reason.
const vk::raii::Pipeline* build_kernel(Device& device, const Tape& tape, const KernelBuild& build,
                                       CompileReport& report) {
    const KernelSpec& spec = build.spec;
    const auto generate = [&] {
        const auto start = Clock::now();
        GeneratedKernel kernel = generate_glsl(tape, spec);
        report.generate_s = seconds_since(start);
        report.statements = kernel.statements;
        report.library_calls = kernel.library_calls;
        return kernel;
    };
    const std::string_view device_type = device.info().type;
    const auto over = [&](std::size_t statements, std::size_t calls) {
        return over_limit(statements, calls, device_type, spec.double_precision, build.limit);
    };
    const vk::raii::Pipeline* pipeline = nullptr;
    try {
        report.reason = build.refused;
        if (!report.reason.empty()) {
            generate();  // for the sizes the plan reports
            return nullptr;
        }
        auto start = Clock::now();
        const std::string key = kernel_key(tape, spec);
        report.key_s = seconds_since(start);
        const std::string name = "compiled " + spec_name(spec, tape);
        // The device's pipeline, or the driver's by the module's identifier: no SPIR-V at all.
        start = Clock::now();
        std::vector<std::byte> metadata;
        pipeline =
            device.kernels().identified_pipeline(spec.double_precision, name, key, report.pipeline, metadata);
        if (pipeline != nullptr && metadata.size() == sizes_bytes) {
            report.pipeline_s = seconds_since(start);
            read_sizes(metadata, report.statements, report.library_calls);
            report.spirv_from_cache = true;
            report.reason = over(report.statements, report.library_calls);
            report.compiled = report.reason.empty();
            return report.compiled ? pipeline : nullptr;
        }
        // The SPIR-V: from memory or disk, else generated and compiled now.
        pipeline = nullptr;
        report.pipeline = PipelineReport{};
        start = Clock::now();
        std::shared_ptr<const CachedKernel> code = cached_kernel(key);
        report.spirv_load_s = seconds_since(start);
        report.spirv_from_cache = code != nullptr;
        if (!code) {
            const GeneratedKernel kernel = generate();
            if (over(kernel.statements, kernel.library_calls).empty())
                code = compile_and_store(key, kernel, report.glslang_s);
        }
        if (code) {
            report.statements = code->statements;
            report.library_calls = code->library_calls;
        }
        report.reason = over(report.statements, report.library_calls);
        if (!report.reason.empty()) return nullptr;
        std::vector<std::byte> sizes;
        append_sizes(sizes, code->statements, code->library_calls);
        start = Clock::now();
        try {
            pipeline = &device.kernels().compiled_pipeline(code->spirv, spec.double_precision, name, key,
                                                           &report.pipeline, sizes);
            report.compiled = true;
        } catch (const DeviceUnavailable& error) {  // the driver refuses the kernel: interpret
            report.reason = std::string("the driver refused the compiled kernel: ") + error.what();
        }
        report.pipeline_s = seconds_since(start);
        return pipeline;
    } catch (const std::exception& error) {  // glslang's log, a lost device, out of memory
        report.compiled = false;
        report.reason = std::string("building the compiled kernel failed: ") + error.what();
    } catch (...) {
        report.compiled = false;
        report.reason = "building the compiled kernel failed (unknown exception)";
    }
    return nullptr;
}

// Runs `build` on this thread unless it is already taken (or abandoned while queued).
void run_build(Device& device, const Tape& tape, KernelBuild& build) {
    {
        const std::lock_guard lock(build.mutex);
        if (build.state != KernelBuild::State::queued || build.abandoned) return;
        build.state = KernelBuild::State::running;
    }
    CompileReport report;
    report.background = build.report.background;
    report.queued_s = seconds_since(build.requested);
    const auto begin = Clock::now();
    const vk::raii::Pipeline* pipeline = build_kernel(device, tape, build, report);
    report.total_s = seconds_since(begin);
    {
        const std::lock_guard lock(build.mutex);
        build.report = std::move(report);
        build.pipeline = pipeline;
        build.state = KernelBuild::State::done;
    }
    build.done.notify_all();
}

}  // namespace

CompiledKernels::CompiledKernels(std::shared_ptr<Device> device, std::shared_ptr<const Tape> tape,
                                 bool background)
    : device_(std::move(device)), tape_(std::move(tape)), background_(background) {}

CompiledKernels::~CompiledKernels() {
    const std::lock_guard lock(mutex_);
    for (const auto& build : builds_) {
        const std::lock_guard build_lock(build->mutex);
        build->abandoned = true;
    }
}

std::shared_ptr<KernelBuild> CompiledKernels::find(const KernelSpec& spec) {
    const std::lock_guard lock(mutex_);
    for (const auto& build : builds_)
        if (build->spec == spec) return build;
    return nullptr;
}

std::shared_ptr<KernelBuild> CompiledKernels::start(const KernelSpec& spec, bool background) {
    std::shared_ptr<KernelBuild> build;
    {
        const std::lock_guard lock(mutex_);
        for (const auto& existing : builds_)
            if (existing->spec == spec) return existing;
        build = std::make_shared<KernelBuild>();
        build->spec = spec;
        // The environment is read here, on the caller's thread, never on a compile thread.
        build->limit = statement_limit(device_->info().type);
        build->refused = device_refuses(device_->info().name);
        build->requested = Clock::now();
        build->report.background = background;
        builds_.push_back(build);
    }
    if (background) {
        (void)memory_cache();  // made before the pool, so it outlives the pool's threads at exit
        try {
            submit_compile_job(
                [device = device_, tape = tape_, build] { run_build(*device, *tape, *build); });
        } catch (const std::system_error&) {  // no thread: build it on this one
            wait(*build);
        }
    }
    return build;
}

void CompiledKernels::wait(KernelBuild& build) {
    std::unique_lock lock(build.mutex);
    if (build.state == KernelBuild::State::queued) {
        lock.unlock();
        run_build(*device_, *tape_, build);
        lock.lock();
    }
    build.done.wait(lock, [&] { return build.state == KernelBuild::State::done; });
}

const vk::raii::Pipeline* CompiledKernels::pipeline(const KernelSpec& spec, bool* pending) {
    const std::shared_ptr<KernelBuild> build = start(spec, background_);
    if (!background_) wait(*build);
    const std::lock_guard lock(build->mutex);
    const bool done = build->state == KernelBuild::State::done;
    if (pending != nullptr) *pending = !done;
    return done ? build->pipeline : nullptr;
}

CompileReport CompiledKernels::report(const KernelSpec& spec) {
    const std::shared_ptr<KernelBuild> build = start(spec, false);
    wait(*build);
    const std::lock_guard lock(build->mutex);
    return build->report;
}

std::optional<CompileReport> CompiledKernels::report_now(const KernelSpec& spec, bool& pending) {
    pending = false;
    const std::shared_ptr<KernelBuild> build = find(spec);
    if (!build) return std::nullopt;
    const std::lock_guard lock(build->mutex);
    pending = build->state != KernelBuild::State::done;
    return build->report;
}

}  // namespace tapevm::gpu::detail
