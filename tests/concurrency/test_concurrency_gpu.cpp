// The GPU VM's thread-safety contract (docs/THREADS.md, tapevm/gpu.hpp) from 8 threads at once,
// compared with serial runs bit for bit: many Vms on one device (each thread its own Vm, made
// and destroyed while the others run), one Vm shared by every thread, with host spans and with
// device-resident buffers, and compiled-engine Vms whose kernels the threads generate, compile
// and cache at the same time. Shapes are tiny (lavapipe is slow); 70 points in chunks of 64
// still take both chunk slots. The validation layer, when installed, also checks that the
// Vulkan objects that need external synchronisation get it (its thread-safety checks).
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <filesystem>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include <doctest/doctest.h>
#include <unistd.h>

#include "compile_pool.hpp"
#include "compiler.hpp"
#include "concurrency_support.hpp"
#include "tapevm/error.hpp"
#include "tapevm/gpu.hpp"
#include "tapevm/var.hpp"

namespace tapevm::test {
namespace {

constexpr std::size_t points = 70;

// Tape k: small, different per k (constants), with a guard that some points fail.
Tape gpu_case(unsigned k) {
    const std::vector<double> at = {0.3, 0.1 * k};
    return record(std::span<const double>(at), [k](std::span<const Var> x) {
        Var y = x[0] * x[1] + 0.125 * k;
        if (y > 0.0) y = y * 2.0;  // a guard: points with x0 x1 + k/8 <= 0 diverge
        return sin(y) + x[0] / (1.0 + x[1] * x[1]);
    });
}

// The validation layer checks the Vulkan calls of the release and ASan runs; under TSan it is
// off (dev.sh sets TAPEVM_VULKAN_VALIDATION=0 there too): its own threads and locks, which TSan
// cannot see into, only add reports of the layer's (tsan.supp).
gpu::Options gpu_options() {
    gpu::Options options;
    options.chunk_points = 64;
    options.validation = !under_thread_sanitizer;
    return options;
}

std::vector<float> gpu_inputs(unsigned salt) {
    std::vector<float> inputs(points * 2);
    for (std::size_t i = 0; i < inputs.size(); ++i)
        inputs[i] = static_cast<float>(static_cast<int>((i * 37 + salt * 11) % 41) - 20) / 16.0f;
    return inputs;
}

// forward, gradient and the resident forward of `vm`, with the diverged points, concatenated.
std::vector<float> gpu_results(const gpu::Vm& vm, unsigned salt) {
    const std::vector<float> inputs = gpu_inputs(salt);
    const Batch<float> batch{points, inputs, {}};
    std::vector<float> all;
    const auto append = [&](const std::vector<float>& values, const Report& report) {
        all.insert(all.end(), values.begin(), values.end());
        for (const std::size_t point : report.diverged) all.push_back(static_cast<float>(point));
        all.push_back(static_cast<float>(report.diverged.size()));
    };
    const auto forward = vm.forward(batch);
    append(forward.values, forward.report);
    const auto gradient = vm.gradient(batch);
    append(gradient.values, gradient.report);
    const auto x = vm.upload<float>(inputs);
    auto y = vm.allocate<float>(points);
    const Report report = vm.forward(points, x, nullptr, y);
    std::vector<float> resident(points);
    vm.download(y, std::span<float>(resident));
    append(resident, report);
    return all;
}

TEST_CASE("many gpu::Vms on one device, each on its own thread, give the serial results bit for bit") {
    std::vector<Tape> tapes;
    std::vector<std::vector<float>> expected;
    for (unsigned k = 0; k < concurrent_threads; ++k) {
        tapes.push_back(gpu_case(k));
        expected.push_back(gpu_results(gpu::Vm(tapes.back(), gpu_options()), k));
    }
    REQUIRE(expected[0].back() > 0);  // some points diverge: the guard reports are compared too

    Mismatches mismatches;
    check_no_errors(run_concurrently([&](unsigned t) {
        for (unsigned round = 0; round < 2; ++round) {
            const unsigned k = (t + round) % concurrent_threads;
            const gpu::Vm vm(tapes[k], gpu_options());  // made and destroyed while others run
            if (!same_bits(gpu_results(vm, k), expected[k])) mismatches.add("tape " + std::to_string(k));
        }
    }));
    CHECK_MESSAGE(mismatches.count() == 0, mismatches.count()
                                               << " calls differ, first: " << mismatches.first());
}

TEST_CASE("one gpu::Vm called from 8 threads at once gives the serial results bit for bit") {
    const gpu::Vm vm(gpu_case(3), gpu_options());
    std::vector<std::vector<float>> expected;
    for (unsigned salt = 0; salt < concurrent_threads; ++salt) expected.push_back(gpu_results(vm, salt));

    Mismatches mismatches;
    check_no_errors(run_concurrently([&](unsigned t) {
        for (unsigned round = 0; round < 2; ++round) {
            const unsigned salt = (t + round) % concurrent_threads;
            if (!same_bits(gpu_results(vm, salt), expected[salt]))
                mismatches.add("salt " + std::to_string(salt));
        }
    }));
    CHECK_MESSAGE(mismatches.count() == 0, mismatches.count()
                                               << " calls differ, first: " << mismatches.first());
}

// The forward results of a compiled-engine Vm of `tape`, and whether the kernel was compiled.
std::vector<float> compiled_forward(const Tape& tape, unsigned salt, bool& compiled) {
    gpu::Options options = gpu_options();
    options.engine = gpu::Engine::compiled;
    const gpu::Vm vm(tape, options);
    const std::vector<float> inputs = gpu_inputs(salt);
    const auto forward = vm.forward(Batch<float>{points, inputs, {}});
    compiled = vm.compile_plan<float>("forward").compiled;
    std::vector<float> all = forward.values;
    for (const std::size_t point : forward.report.diverged) all.push_back(static_cast<float>(point));
    return all;
}

TEST_CASE("compiled kernels generated, compiled and cached by 8 threads at once give the serial bits") {
    // lavapipe runs compiled kernels only with its LLVM optimiser off (compiler.hpp). The cache
    // folder is this test's own and is emptied, with the process's memory caches, before the
    // concurrent round: the threads generate, compile, store and look up kernels at the same time,
    // two threads per tape (one key), while glslang's warm-up runs beside them.
    const char* old_perf = std::getenv("GALLIVM_PERF");
    const std::string saved_perf = old_perf != nullptr ? old_perf : "";
    setenv("GALLIVM_PERF", "nopt", 1);
    const auto folder = std::filesystem::temp_directory_path() /
                        ("tapevm-concurrency-compiled-" + std::to_string(static_cast<long>(::getpid())));
    std::filesystem::remove_all(folder);
    setenv("TAPEVM_CACHE_DIR", folder.c_str(), 1);
    constexpr unsigned tapes = concurrent_threads / 2;
    std::vector<std::vector<float>> expected;
    bool all_compiled = true;
    for (unsigned k = 0; k < tapes; ++k) {
        bool compiled = false;
        expected.push_back(compiled_forward(gpu_case(k), k, compiled));
        all_compiled = all_compiled && compiled;
    }
    CHECK(all_compiled);
    std::filesystem::remove_all(folder);
    gpu::detail::clear_spirv_memory_cache();

    Mismatches mismatches;
    std::atomic<unsigned> interpreted{0};
    check_no_errors(run_concurrently([&](unsigned t) {
        const unsigned k = t % tapes;
        bool compiled = false;
        if (!same_bits(compiled_forward(gpu_case(k), k, compiled), expected[k]))
            mismatches.add("tape " + std::to_string(k));
        if (!compiled) ++interpreted;
    }));
    CHECK_MESSAGE(mismatches.count() == 0, mismatches.count()
                                               << " calls differ, first: " << mismatches.first());
    CHECK(interpreted.load() == 0);
    std::filesystem::remove_all(folder);
    unsetenv("TAPEVM_CACHE_DIR");
    if (old_perf != nullptr) {
        setenv("GALLIVM_PERF", saved_perf.c_str(), 1);
    } else {
        unsetenv("GALLIVM_PERF");
    }
}

TEST_CASE(
    "background builds: 8 threads' first calls on the interpreter while kernels build, Vms dropped "
    "mid-build") {
    // CompileWait::background: each thread's first call runs on the interpreter while its tape's
    // kernel builds on the compile pool (4 tapes, 2 threads each, so builds of several tapes run
    // at once and two Vms ask for one kernel); even threads drop their Vm at once, mid-build (its
    // job goes on alone), odd ones wait for the kernel and call again on it. Every result is
    // compared with the interpreter's (the compiled kernels may differ in the last bits).
    const char* old_perf = std::getenv("GALLIVM_PERF");
    const std::string saved_perf = old_perf != nullptr ? old_perf : "";
    setenv("GALLIVM_PERF", "nopt", 1);
    const auto folder = std::filesystem::temp_directory_path() /
                        ("tapevm-concurrency-background-" + std::to_string(static_cast<long>(::getpid())));
    std::filesystem::remove_all(folder);
    setenv("TAPEVM_CACHE_DIR", folder.c_str(), 1);
    gpu::detail::clear_spirv_memory_cache();
    constexpr unsigned tapes = concurrent_threads / 2;
    const auto tape_of = [](unsigned k) { return gpu_case(20 + k); };  // not the test above's tapes
    std::vector<std::vector<float>> expected;
    for (unsigned k = 0; k < tapes; ++k) {
        const gpu::Vm vm(tape_of(k), gpu_options());
        const std::vector<float> inputs = gpu_inputs(k);
        expected.push_back(vm.forward(Batch<float>{points, inputs, {}}).values);
    }
    const auto close = [](const std::vector<float>& a, const std::vector<float>& b) {
        if (a.size() != b.size()) return false;
        for (std::size_t i = 0; i < a.size(); ++i)
            if (!(std::abs(a[i] - b[i]) <= 1e-5f * (1.0f + std::abs(b[i])))) return false;
        return true;
    };
    Mismatches mismatches;
    std::atomic<unsigned> compiled_later{0};
    check_no_errors(run_concurrently([&](unsigned t) {
        const unsigned k = t / 2;
        gpu::Options options = gpu_options();
        options.engine = gpu::Engine::compiled;
        options.compile = gpu::CompileWait::background;
        const gpu::Vm vm(tape_of(k), options);
        const std::vector<float> inputs = gpu_inputs(k);
        if (!close(vm.forward(Batch<float>{points, inputs, {}}).values, expected[k]))
            mismatches.add("first call, tape " + std::to_string(k));
        if (t % 2 == 0) return;  // dropped while its kernel may still build
        while (vm.compile_status<float>("forward").pending)
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
        if (!close(vm.forward(Batch<float>{points, inputs, {}}).values, expected[k]))
            mismatches.add("later call, tape " + std::to_string(k));
        if (vm.last_timing().compiled) ++compiled_later;
    }));
    CHECK_MESSAGE(mismatches.count() == 0, mismatches.count()
                                               << " calls differ, first: " << mismatches.first());
    CHECK(compiled_later.load() == concurrent_threads / 2);
    gpu::detail::wait_for_compile_pool_idle();  // the dropped Vms' builds write to the folder
    std::filesystem::remove_all(folder);
    unsetenv("TAPEVM_CACHE_DIR");
    if (old_perf != nullptr) {
        setenv("GALLIVM_PERF", saved_perf.c_str(), 1);
    } else {
        unsetenv("GALLIVM_PERF");
    }
}

}  // namespace
}  // namespace tapevm::test
