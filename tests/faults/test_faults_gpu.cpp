// Injected device faults in the GPU VM (issue 24 item 4; src/vm_gpu/fault_injection.hpp): the
// n-th Vulkan pipeline creation, memory allocation or queue submission of building a Vm and
// running one call fails as a driver's would, swept over n for every mode. Each failure must give
// a typed tapevm::Error (any other exception, a crash or a validation-layer message fails the
// suite; under AddressSanitizer a leak does), free what it allocated (the device's ledger of
// buffer bytes returns to where it was), and leave either the Vm usable (its next call gives the
// fault-free results bit for bit) or, after a lost device, refusing cleanly with DeviceLost while
// a fresh Vm works.
//
// Order matters: the device's pipelines are made once per process, so the pipeline sweep runs
// first (test cases run in the order written), and the submission sweep, which loses devices, last.
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <doctest/doctest.h>
#include <sys/resource.h>
#include <unistd.h>

#include "caught_error.hpp"
#include "context.hpp"
#include "fault_injection.hpp"
#include "faults_support.hpp"
#include "tapevm/error.hpp"
#include "tapevm/gpu.hpp"

namespace tapevm::test {
namespace {

using gpu::detail::FaultPoint;
using gpu::detail::FaultResult;

// The device's buffer bytes (MemoryLedger) on the device a new Vm would use.
std::uint64_t live_device_bytes() {
    return gpu::detail::Device::acquire(fault_test_options())->ledger().live_bytes();
}

// What one attempt did: the error's type and message (CaughtError), or the values of the call.
struct Outcome : CaughtError {
    std::vector<float> values;
    bool vm_built = false;
    bool fired = false;
};

// Makes a Vm and runs `mode` with the n-th call at `point` failing (n = 0: no fault). When the
// call failed on a Vm that was built, `retry` says what the same Vm's next call did.
Outcome attempt(Mode mode, FaultPoint point, std::uint64_t n, FaultResult result,
                std::optional<Outcome>* retry = nullptr) {
    Outcome outcome;
    const std::uint64_t fired_before = gpu::detail::faults_fired(point);
    gpu::detail::arm_fault(point, n, result);
    std::optional<gpu::Vm> vm;
    run_catching(outcome, [&] {
        vm.emplace(fault_test_tape(), fault_test_options());
        outcome.vm_built = true;
        outcome.values = run_mode(*vm, mode);
    });
    gpu::detail::disarm_faults();
    outcome.fired = gpu::detail::faults_fired(point) != fired_before;
    if (retry != nullptr && vm && !outcome.error_type.empty()) {
        Outcome again;
        run_catching(again, [&] { again.values = run_mode(*vm, mode); });
        *retry = again;
    }
    return outcome;
}

// Calls at `point` made by building a Vm and running `mode` once, without faults.
std::uint64_t count_calls(Mode mode, FaultPoint point) {
    const std::uint64_t before = gpu::detail::fault_point_calls(point);
    const Outcome clean = attempt(mode, point, 0, FaultResult::point_default);
    REQUIRE_MESSAGE(clean.error_type.empty(), clean.message);
    return gpu::detail::fault_point_calls(point) - before;
}

// The fault-free results of `mode` (checked against the reference VM once).
const std::vector<float>& baseline(Mode mode) {
    static std::map<Mode, std::vector<float>> values;
    if (const auto found = values.find(mode); found != values.end()) return found->second;
    const Outcome clean = attempt(mode, FaultPoint::allocation, 0, FaultResult::point_default);
    REQUIRE_MESSAGE(clean.error_type.empty(), clean.message);
    check_close(clean.values, reference_mode(mode), mode_name(mode) + " against the reference");
    return values.emplace(mode, clean.values).first->second;
}

TEST_CASE("a failed pipeline creation throws DeviceUnavailable and the next call makes the pipeline") {
    // Each round fails the first pipeline the call still has to make (those made before it
    // stay made), until a round makes none: every pipeline of every mode fails once.
    std::size_t failures = 0;
    for (const Mode mode : all_modes) {
        const std::string mode_text = mode_name(mode);
        CAPTURE(mode_text);
        for (int round = 0;; ++round) {
            REQUIRE(round < 16);
            std::optional<Outcome> retry;
            const Outcome outcome =
                attempt(mode, FaultPoint::pipeline, 1, FaultResult::point_default, &retry);
            if (!outcome.fired) {
                REQUIRE_MESSAGE(outcome.error_type.empty(), outcome.message);
                check_close(outcome.values, reference_mode(mode), mode_name(mode) + " after the faults");
                break;
            }
            ++failures;
            CHECK_MESSAGE(outcome.error_type == "DeviceUnavailable", outcome.message);
            CHECK(outcome.message.find("pipeline") != std::string::npos);
            REQUIRE(outcome.vm_built);  // the interpreter's pipelines are made on a call's first use
            REQUIRE(retry.has_value());
            // The same Vm's next call makes the pipeline (or fails the next missing one no more:
            // nothing is armed) and gives the right results.
            REQUIRE_MESSAGE(retry->error_type.empty(), retry->message);
            check_close(retry->values, reference_mode(mode), mode_name(mode) + " on the same Vm");
        }
    }
    // The modes share kernels, but forward, reverse, tangent and hvp are four pipelines at least.
    MESSAGE("pipeline faults injected: " << failures);
    CHECK(failures >= 4);
}

TEST_CASE(
    "every failed allocation is a typed error or recovered, frees its memory and leaves the Vm usable") {
    std::map<std::string, int> outcomes;  // how each fault ended, for the log
    for (const FaultResult result : {FaultResult::out_of_device_memory, FaultResult::out_of_host_memory}) {
        for (const Mode mode : all_modes) {
            const std::vector<float>& expected = baseline(mode);
            const std::uint64_t calls = count_calls(mode, FaultPoint::allocation);
            const std::string mode_text = mode_name(mode);
            CAPTURE(mode_text);
            CAPTURE(static_cast<int>(result));
            REQUIRE(calls > 0);
            MESSAGE("allocation faults swept in " << mode_name(mode) << ": " << calls);
            for (std::uint64_t n = 1; n <= calls; ++n) {
                CAPTURE(n);
                const std::uint64_t bytes_before = live_device_bytes();
                std::optional<Outcome> retry;
                const Outcome outcome = attempt(mode, FaultPoint::allocation, n, result, &retry);
                CHECK(outcome.fired);
                ++outcomes[outcome.error_type.empty() ? "recovered" : outcome.error_type];
                if (outcome.error_type.empty()) {
                    // Recovered (the runner retries a chunk's buffers with smaller chunks).
                    CHECK(outcome.values == expected);
                } else {
                    CHECK_MESSAGE(
                        (outcome.error_type == "DeviceUnavailable" || outcome.error_type == "OutOfMemory"),
                        outcome.error_type << ": " << outcome.message);
                    CHECK(outcome.message.find("memory") != std::string::npos);
                    if (retry) {
                        REQUIRE_MESSAGE(retry->error_type.empty(), retry->message);
                        CHECK(retry->values == expected);
                    }
                }
                CHECK(live_device_bytes() == bytes_before);  // every buffer freed with its Vm
            }
        }
    }
    for (const auto& [kind, count] : outcomes) MESSAGE("allocation faults ending " << kind << ": " << count);
}

TEST_CASE(
    "an allocation failing with VK_ERROR_DEVICE_LOST gives DeviceLost or DeviceUnavailable, never a crash") {
    const Mode mode = Mode::gradient;
    const std::uint64_t calls = count_calls(mode, FaultPoint::allocation);
    for (std::uint64_t n = 1; n <= calls; ++n) {
        CAPTURE(n);
        const Outcome outcome = attempt(mode, FaultPoint::allocation, n, FaultResult::device_lost);
        CHECK(outcome.fired);
        CHECK_MESSAGE((outcome.error_type == "DeviceLost" || outcome.error_type == "DeviceUnavailable"),
                      outcome.error_type << ": " << outcome.message);
        // The device itself is fine (the fault was injected): a fresh Vm works.
        const Outcome fresh = attempt(mode, FaultPoint::allocation, 0, FaultResult::point_default);
        REQUIRE_MESSAGE(fresh.error_type.empty(), fresh.message);
        CHECK(fresh.values == baseline(mode));
    }
}

TEST_CASE(
    "TAPEVM_GPU_FAULT's syntax: what it arms fails at the call it names, and a malformed value is an Error") {
    // Parsed by arm_faults_from (the variable itself is read once, when the first device is made).
    const std::uint64_t calls_before = gpu::detail::fault_point_calls(FaultPoint::allocation);
    const std::uint64_t fired_before = gpu::detail::faults_fired(FaultPoint::allocation);
    gpu::detail::arm_faults_from("alloc:2:host");
    std::string error;
    try {
        const gpu::Vm vm(fault_test_tape(), fault_test_options());  // its second buffer fails
    } catch (const DeviceUnavailable& e) {
        error = e.what();
    }
    gpu::detail::disarm_faults();
    CHECK(gpu::detail::fault_point_calls(FaultPoint::allocation) - calls_before == 2);
    CHECK(gpu::detail::faults_fired(FaultPoint::allocation) == fired_before + 1);
    CHECK_MESSAGE(error.find("OutOfHostMemory") != std::string::npos, error);
    for (const char* malformed :
         {"alloc", "alloc:0", "alloc:x", "alloc:-1", "disk:1", "alloc:1:maybe", "alloc:1,"}) {
        CAPTURE(std::string(malformed));
        std::string message;
        try {
            gpu::detail::arm_faults_from(malformed);
        } catch (const Error& e) {
            message = e.what();
        }
        gpu::detail::disarm_faults();
        CHECK(message.find("TAPEVM_GPU_FAULT") != std::string::npos);
    }
}

TEST_CASE("a failed submission loses the device: DeviceLost, the Vm refuses cleanly, a fresh Vm works") {
    // Every device loss makes the next Vm open a new device, whose pipelines lavapipe compiles
    // again (every mode would take a minute more): forward and gradient cover the runner's
    // submissions (the tape's uploads when the Vm is built, the call's two chunks; the kernel
    // makes no difference to them), the resident mode the upload, zero fill and download.
    for (const Mode mode : {Mode::forward, Mode::gradient, Mode::resident}) {
        const std::vector<float>& expected = baseline(mode);
        const std::uint64_t calls = count_calls(mode, FaultPoint::submission);
        const std::string mode_text = mode_name(mode);
        CAPTURE(mode_text);
        REQUIRE(calls > 0);
        MESSAGE("submission faults swept in " << mode_name(mode) << ": " << calls);
        for (std::uint64_t n = 1; n <= calls; ++n) {
            CAPTURE(n);
            std::optional<Outcome> retry;
            const Outcome outcome =
                attempt(mode, FaultPoint::submission, n, FaultResult::point_default, &retry);
            CHECK(outcome.fired);
            CHECK_MESSAGE(outcome.error_type == "DeviceLost", outcome.error_type << ": " << outcome.message);
            if (retry) CHECK_MESSAGE(retry->error_type == "DeviceLost", retry->message);  // refuses, no crash
            const Outcome fresh = attempt(mode, FaultPoint::submission, 0, FaultResult::point_default);
            REQUIRE_MESSAGE(fresh.error_type.empty(), fresh.message);
            CHECK(fresh.values == expected);
        }
    }
}

// Sets an environment variable for the scope, restoring the previous value.
class ScopedEnv {
public:
    ScopedEnv(const char* name, const std::string& value) : name_(name) {
        if (const char* old = std::getenv(name)) old_ = old;
        setenv(name, value.c_str(), 1);
    }
    ~ScopedEnv() {
        if (old_) {
            setenv(name_, old_->c_str(), 1);
        } else {
            unsetenv(name_);
        }
    }
    ScopedEnv(const ScopedEnv&) = delete;
    ScopedEnv& operator=(const ScopedEnv&) = delete;

private:
    const char* name_;
    std::optional<std::string> old_;
};

// A compiled-engine Vm's forward results and its compile plan, in a cache folder of its own.
struct CompiledRun {
    std::vector<float> values;
    gpu::CompilePlan plan;
};
CompiledRun compiled_forward(const Tape& tape) {
    gpu::Options options = fault_test_options();
    options.engine = gpu::Engine::compiled;
    const gpu::Vm vm(tape, options);
    const std::vector<float> inputs = fault_test_values(3, 0);
    CompiledRun run;
    run.values = vm.forward(Batch<float>{fault_test_points, inputs, {}}).values;
    run.plan = vm.compile_plan<float>("forward");
    return run;
}

// A folder under the system's temporary folder, removed at the end of the scope.
struct TemporaryFolder {
    explicit TemporaryFolder(const std::string& name)
        : path(std::filesystem::temp_directory_path() /
               (name + "-" + std::to_string(static_cast<long>(::getpid())))) {
        std::filesystem::remove_all(path);
        std::filesystem::create_directories(path);
    }
    ~TemporaryFolder() {
        std::error_code ignored;
        std::filesystem::remove_all(path, ignored);
    }
    std::filesystem::path path;
};

std::size_t files_under(const std::filesystem::path& folder) {
    std::size_t count = 0;
    std::error_code error;
    for (auto it = std::filesystem::recursive_directory_iterator(folder, error);
         !error && it != std::filesystem::recursive_directory_iterator(); it.increment(error))
        count += it->is_regular_file() ? 1 : 0;
    return count;
}

// Each compiled-engine test uses a tape of its own (a distinct constant), so that no kernel
// comes from the process's memory cache of an earlier test.
Tape compiled_test_tape(double constant) {
    return record(3, [constant](std::span<const Var> x) { return sin(x[0]) * x[1] + x[2] * constant; });
}

TEST_CASE("a driver that refuses a compiled kernel: the interpreter runs it, and a later Vm compiles it") {
    // lavapipe runs compiled kernels only with its LLVM optimiser off (compiler.hpp).
    const ScopedEnv nopt("GALLIVM_PERF", "nopt");
    const TemporaryFolder cache("tapevm-faults-refused");
    const ScopedEnv folder("TAPEVM_CACHE_DIR", cache.path.string());
    const Tape tape = compiled_test_tape(0.75);
    const std::vector<float> expected = run_mode(reference::Vm(tape), Mode::forward);
    const std::uint64_t fired = gpu::detail::faults_fired(FaultPoint::pipeline);
    gpu::detail::arm_fault(FaultPoint::pipeline, 1);  // the compiled kernel's is the call's first
    const CompiledRun refused = compiled_forward(tape);
    gpu::detail::disarm_faults();
    CHECK(gpu::detail::faults_fired(FaultPoint::pipeline) == fired + 1);
    CHECK_FALSE(refused.plan.compiled);
    CHECK(refused.plan.reason.find("refused") != std::string::npos);
    check_close(refused.values, expected, "forward on the interpreter after the refusal");
    const CompiledRun accepted = compiled_forward(tape);
    CHECK_MESSAGE(accepted.plan.compiled, accepted.plan.reason);
    check_close(accepted.values, expected, "forward on the compiled kernel");
}

TEST_CASE("a cache folder that cannot be written (full disk, a file in the way) is skipped, never an error") {
    const ScopedEnv nopt("GALLIVM_PERF", "nopt");
    SUBCASE("full disk: every write fails (RLIMIT_FSIZE stands in for a full file system)") {
        const TemporaryFolder cache("tapevm-faults-full");
        const ScopedEnv folder("TAPEVM_CACHE_DIR", cache.path.string());
        const Tape tape = compiled_test_tape(1.25);
        const std::vector<float> expected = run_mode(reference::Vm(tape), Mode::forward);
        rlimit old{};
        REQUIRE(getrlimit(RLIMIT_FSIZE, &old) == 0);
        const auto old_handler = std::signal(SIGXFSZ, SIG_IGN);  // write() fails with EFBIG instead
        rlimit full = old;
        full.rlim_cur = 16;  // not even an entry's header fits
        REQUIRE(setrlimit(RLIMIT_FSIZE, &full) == 0);
        std::optional<CompiledRun> run;
        std::string error;
        try {
            run = compiled_forward(tape);
        } catch (const std::exception& e) {
            error = e.what();
        }
        REQUIRE(setrlimit(RLIMIT_FSIZE, &old) == 0);
        std::signal(SIGXFSZ, old_handler);
        REQUIRE_MESSAGE(run.has_value(), error);
        CHECK_MESSAGE(run->plan.compiled, run->plan.reason);
        check_close(run->values, expected, "forward with a full disk");
        CHECK(files_under(cache.path) == 0);  // nothing stored, no temporary file left behind
    }
    SUBCASE("the cache folder's path runs through a file") {
        const TemporaryFolder parent("tapevm-faults-blocked");
        const auto file = parent.path / "a-file";
        std::ofstream(file) << "not a folder";
        const ScopedEnv folder("TAPEVM_CACHE_DIR", (file / "cache").string());
        const Tape tape = compiled_test_tape(1.75);
        const CompiledRun run = compiled_forward(tape);
        CHECK_MESSAGE(run.plan.compiled, run.plan.reason);
        check_close(run.values, run_mode(reference::Vm(tape), Mode::forward),
                    "forward without a cache folder");
        CHECK(files_under(parent.path) == 1);
    }
}

}  // namespace
}  // namespace tapevm::test
