// Engine::compiled with CompileWait::background: the first call of a mode runs on the
// interpreter while the kernel builds on a compile thread, later calls run the compiled kernel;
// CompileWait::wait builds before the first call returns; a build that fails leaves the
// interpreter running with the reason in the plan; a Vm destroyed mid-build is safe (this suite
// also runs under ASan and UBSan). Each Vm starts cold: its own cache folder and no kernel in
// memory. Run with GALLIVM_PERF=nopt on lavapipe (tests/gpu/meson.build), else nothing compiles.
#include <chrono>
#include <cmath>
#include <filesystem>
#include <optional>
#include <thread>

#include <doctest/doctest.h>
#include <unistd.h>

#include "compile_pool.hpp"
#include "compiler.hpp"
#include "gpu_support.hpp"
#include "tapevm/error.hpp"
#include "tapevm/reference.hpp"
#include "tapevm/var.hpp"

namespace tapevm::test {
namespace {

namespace fs = std::filesystem;

// A cache folder of its own (removed at the end) and no compiled kernel in memory: cold builds.
class ColdCache {
public:
    explicit ColdCache(const std::string& name)
        : path_(fs::temp_directory_path() / ("tapevm_background_" + name + "_" + std::to_string(getpid()))),
          env_("TAPEVM_CACHE_DIR", path_.c_str()) {
        fs::remove_all(path_);
        gpu::detail::clear_spirv_memory_cache();
    }
    ~ColdCache() {
        gpu::detail::wait_for_compile_pool_idle();  // builds of destroyed Vms write to the folder
        std::error_code ignored;
        fs::remove_all(path_, ignored);
    }

private:
    fs::path path_;
    ScopedEnv env_;
};

// A small tape of two inputs and one parameter: a product, an exp and a division; `shift` (a
// constant of the tape) makes different tapes, whose kernels differ.
Tape small_tape(double shift) {
    const std::vector<double> at = {0.5, 1.5};
    const std::vector<double> params = {0.5};
    Tape tape = record(std::span<const double>(at), std::span<const double>(params),
                       [shift](std::span<const Var> x, std::span<const Var> p) {
                           const Var product = x[0] * x[1];
                           const Var grown = exp(product * p[0]);
                           return std::vector<Var>{grown / (x[1] + (2.0 + shift))};
                       });
    tape.optimize();
    return tape;
}

gpu::Options compiled_options(gpu::CompileWait wait) {
    gpu::Options options = test_options();
    options.engine = gpu::Engine::compiled;
    options.compile = wait;
    return options;
}

constexpr std::size_t points = 37;

std::vector<float> inputs() { return random_values<float>(points * 2, -1.0, 1.0, 21); }

// The gradient on `vm` (f32), checked against the reference VM's at the same points.
std::vector<float> checked_gradient(const gpu::Vm& vm, const std::vector<float>& x, const float& param) {
    std::vector<float> gradients(points * 2);
    vm.gradient(Batch<float>{points, x, std::span<const float>(&param, 1)}, std::span<float>(gradients));
    const reference::Vm ref(vm.tape());
    std::vector<double> x64(x.begin(), x.end());
    const double param64 = param;
    std::vector<double> expected(points * 2);
    ref.gradient(Batch<double>{points, x64, std::span<const double>(&param64, 1)},
                 std::span<double>(expected));
    for (std::size_t i = 0; i < expected.size(); ++i)
        CHECK_MESSAGE(std::abs(gradients[i] - expected[i]) <= 1e-5 * (1 + std::abs(expected[i])),
                      "gradient value " << i << ": " << gradients[i] << ", reference " << expected[i]);
    return gradients;
}

// Polls compile_status until the gradient's build is done (at most two minutes).
gpu::CompilePlan finished_plan(const gpu::Vm& vm) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(2);
    gpu::CompilePlan plan = vm.compile_status<float>("gradient");
    while (plan.pending && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        plan = vm.compile_status<float>("gradient");
    }
    REQUIRE_FALSE(plan.pending);
    return plan;
}

TEST_CASE("background: the first call runs on the interpreter, later ones on the compiled kernel") {
    const ColdCache cache("switch");
    const gpu::Vm vm(small_tape(0.75), compiled_options(gpu::CompileWait::background));
    CHECK(vm.compile_wait() == gpu::CompileWait::background);
    CHECK(vm.compile_status<float>("gradient").reason == "not requested yet");
    const std::vector<float> x = inputs();
    const float param = 0.75f;
    const std::vector<float> first = checked_gradient(vm, x, param);
    // A cold build (glslang and lavapipe's LLVM) takes far longer than the call's return.
    CHECK_FALSE(vm.last_timing().compiled);
    const gpu::CompilePlan plan = finished_plan(vm);
    CHECK(plan.compiled);
    CHECK(plan.reason.empty());
    CHECK(plan.background);
    CHECK(plan.total_s > 0);
    const std::vector<float> later = checked_gradient(vm, x, param);
    CHECK(vm.last_timing().compiled);
    // compile_plan() of a finished build returns it without building again.
    CHECK(vm.compile_plan<float>("gradient").compiled);
}

TEST_CASE("background: CompileWait::wait builds the kernel before the first call returns") {
    const ColdCache cache("wait");
    const gpu::Vm vm(small_tape(1.25), compiled_options(gpu::CompileWait::wait));
    CHECK(vm.compile_wait() == gpu::CompileWait::wait);
    (void)checked_gradient(vm, inputs(), 1.25f);
    CHECK(vm.last_timing().compiled);
    const gpu::CompilePlan plan = vm.compile_status<float>("gradient");
    CHECK_FALSE(plan.pending);
    CHECK(plan.compiled);
    CHECK_FALSE(plan.background);
}

TEST_CASE("background: TAPEVM_GPU_COMPILE picks the mode when Options::compile is automatic") {
    {
        const ScopedEnv env("TAPEVM_GPU_COMPILE", "background");
        CHECK(gpu::Vm(small_tape(1.0), compiled_options(gpu::CompileWait::automatic)).compile_wait() ==
              gpu::CompileWait::background);
    }
    {
        const ScopedEnv env("TAPEVM_GPU_COMPILE", "wait");
        CHECK(gpu::Vm(small_tape(1.0), compiled_options(gpu::CompileWait::automatic)).compile_wait() ==
              gpu::CompileWait::wait);
    }
    const ScopedEnv env("TAPEVM_GPU_COMPILE", "sometimes");
    CHECK_THROWS_WITH_AS(gpu::Vm(small_tape(1.0), compiled_options(gpu::CompileWait::automatic)),
                         doctest::Contains("TAPEVM_GPU_COMPILE"), Error);
}

TEST_CASE("background: a build that fails leaves the interpreter running, with the reason") {
    const ColdCache cache("failing");
    std::optional<gpu::Vm> vm;
    {
        // Read when the build is asked for (on the calling thread), not on the compile thread.
        const ScopedEnv limit("TAPEVM_GPU_COMPILE_LIMIT", "1");
        vm.emplace(small_tape(0.5), compiled_options(gpu::CompileWait::background));
        (void)checked_gradient(*vm, inputs(), 0.5f);
        CHECK_FALSE(vm->last_timing().compiled);
    }
    const gpu::CompilePlan plan = finished_plan(*vm);
    CHECK_FALSE(plan.compiled);
    CHECK(plan.reason.find("over the limit of 1") != std::string::npos);
    (void)checked_gradient(*vm, inputs(), 0.5f);
    CHECK_FALSE(vm->last_timing().compiled);
}

TEST_CASE("background: a Vm destroyed while its kernel builds") {
    const ColdCache cache("destroyed");
    const std::vector<float> x = inputs();
    for (const double scale : {0.25, 0.375}) {  // two tapes: two builds in flight at once
        const gpu::Vm vm(small_tape(scale), compiled_options(gpu::CompileWait::background));
        (void)checked_gradient(vm, x, static_cast<float>(scale));
    }  // the builds go on without their Vms
    // A later Vm of the same tape gets the kernel (waiting for the build under way, or its own).
    const gpu::Vm again(small_tape(0.25), compiled_options(gpu::CompileWait::wait));
    (void)checked_gradient(again, x, 0.25f);
    CHECK(again.last_timing().compiled);
}

}  // namespace
}  // namespace tapevm::test
