#include "compiler.hpp"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <span>

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

// What else decides the SPIR-V besides the kernel's text: the embedded library it includes
// and the SPIR-V format version of this cache.
std::uint64_t library_fingerprint() {
    static const std::uint64_t fingerprint = [] {
        std::uint64_t hash = hash64(bytes_of("tapevm spirv cache 1"));
        for (const char* name : {"ops.glsl", "dual_ops.glsl", "math.glsl", "math_f32.glsl", "math_f64.glsl",
                                 "math_f64_constants.glsl", "math_f64_inverse.glsl", "math_f64_power.glsl",
                                 "push_constants.h"}) {
            if (const auto text = embedded_glsl(name)) hash = hash64(bytes_of(*text), hash);
        }
        return hash;
    }();
    return fingerprint;
}

std::string hex64(std::uint64_t value) {
    char text[24];
    std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(value));
    return text;
}

// The process's SPIR-V, by key.
struct MemoryCache {
    std::mutex mutex;
    std::map<std::string, std::vector<std::uint32_t>> spirv;
};
MemoryCache& memory_cache() {
    static MemoryCache cache;
    return cache;
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
    const std::size_t limit = statement_limit(device_type);
    const bool cpu = device_type == "cpu";
    const std::size_t call_weight = !cpu ? 0 : (double_precision ? 150 : 25);
    const std::size_t size = kernel.statements + kernel.library_calls * call_weight;
    if (size <= limit) return {};
    std::string reason = std::to_string(kernel.statements) + " statements";
    if (call_weight != 0)
        reason += " and " + std::to_string(kernel.library_calls) + " math-library calls (size " +
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
    cache.spirv.clear();
}

std::string spirv_key(const GeneratedKernel& kernel) {
    // The whole text's hash and its length; a disk entry holds the key itself too.
    return "spirv-" + hex64(hash64(bytes_of(kernel.glsl), library_fingerprint())) + "-" +
           std::to_string(kernel.glsl.size());
}

std::vector<std::uint32_t> kernel_spirv(const GeneratedKernel& kernel, bool& from_cache, double& glslang_s) {
    MemoryCache& cache = memory_cache();
    std::mutex& mutex = cache.mutex;
    auto& memory = cache.spirv;
    const std::string key = spirv_key(kernel);
    {
        const std::lock_guard lock(mutex);
        if (const auto found = memory.find(key); found != memory.end()) {
            from_cache = true;
            return found->second;
        }
    }
    const DiskCache disk(default_cache_folder());
    std::vector<std::uint32_t> words;
    if (const auto stored = disk.load(key); stored && !stored->empty() && stored->size() % 4 == 0) {
        words.resize(stored->size() / 4);
        std::memcpy(words.data(), stored->data(), stored->size());
        from_cache = words[0] == 0x07230203u;
    }
    if (!from_cache) {
        const auto start = Clock::now();
        words = compile_glsl(kernel.glsl);
        glslang_s = seconds_since(start);
        disk.store(key, std::as_bytes(std::span<const std::uint32_t>(words)));
    }
    const std::lock_guard lock(mutex);
    memory.emplace(key, words);
    return words;
}

CompiledKernels::CompiledKernels(Device& device, const Tape& tape) : device_(device), tape_(tape) {}

CompiledKernels::Entry& CompiledKernels::entry(const KernelSpec& spec) {
    for (auto& entry : entries_)
        if (entry->spec == spec) return *entry;
    auto entry = std::make_unique<Entry>();
    entry->spec = spec;
    CompileReport& report = entry->report;
    const auto start = Clock::now();
    const GeneratedKernel kernel = generate_glsl(tape_, spec);
    report.generate_s = seconds_since(start);
    report.statements = kernel.statements;
    report.library_calls = kernel.library_calls;
    report.reason = device_refuses(device_.info().name);
    if (report.reason.empty()) report.reason = over_limit(kernel, device_.info().type, spec.double_precision);
    if (report.reason.empty()) {
        const auto code = kernel_spirv(kernel, report.spirv_from_cache, report.glslang_s);
        const auto pipeline_start = Clock::now();
        entry->pipeline = &device_.kernels().compiled_pipeline(
            code, spec.double_precision, "compiled " + spec_name(spec, tape_), spirv_key(kernel));
        report.pipeline_s = seconds_since(pipeline_start);
        report.compiled = true;
    }
    entries_.push_back(std::move(entry));
    return *entries_.back();
}

const vk::raii::Pipeline* CompiledKernels::pipeline(const KernelSpec& spec) {
    Entry& found = entry(spec);
    return found.pipeline;
}

CompileReport CompiledKernels::report(const KernelSpec& spec) { return entry(spec).report; }

}  // namespace tapevm::gpu::detail
