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
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <doctest/doctest.h>

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

// What one attempt did: the error's type and message, or the values of the call.
struct Outcome {
    std::string error_type;  // "" when the call succeeded
    std::string message;
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
    const auto record = [](Outcome& into, auto&& action) {
        try {
            action();
        } catch (const DeviceLost& error) {
            into.error_type = "DeviceLost", into.message = error.what();
        } catch (const OutOfMemory& error) {
            into.error_type = "OutOfMemory", into.message = error.what();
        } catch (const DeviceUnavailable& error) {
            into.error_type = "DeviceUnavailable", into.message = error.what();
        } catch (const Unsupported& error) {
            into.error_type = "Unsupported", into.message = error.what();
        } catch (const Error& error) {
            into.error_type = "Error", into.message = error.what();
        }
        // Anything else (a vk::SystemError, std::bad_alloc, ...) escapes: doctest fails the test.
    };
    record(outcome, [&] {
        vm.emplace(fault_test_tape(), fault_test_options());
        outcome.vm_built = true;
        outcome.values = run_mode(*vm, mode);
    });
    gpu::detail::disarm_faults();
    outcome.fired = gpu::detail::faults_fired(point) != fired_before;
    if (retry != nullptr && vm && !outcome.error_type.empty()) {
        Outcome again;
        record(again, [&] { again.values = run_mode(*vm, mode); });
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
            const Outcome outcome = attempt(mode, FaultPoint::pipeline, 1, FaultResult::point_default, &retry);
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

TEST_CASE("every failed allocation is a typed error or recovered, frees its memory and leaves the Vm usable") {
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
                    CHECK_MESSAGE((outcome.error_type == "DeviceUnavailable" || outcome.error_type == "OutOfMemory"),
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

TEST_CASE("an allocation failing with VK_ERROR_DEVICE_LOST gives DeviceLost or DeviceUnavailable, never a crash") {
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

TEST_CASE("a failed submission loses the device: DeviceLost, the Vm refuses cleanly, a fresh Vm works") {
    // Every device loss makes the next Vm open a new device, whose pipelines lavapipe compiles
    // again: forward and gradient cover the runner's submissions (tape upload, chunks, guard
    // flags are not used here), the resident mode the upload, allocate and download paths.
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
            const Outcome outcome = attempt(mode, FaultPoint::submission, n, FaultResult::point_default, &retry);
            CHECK(outcome.fired);
            CHECK_MESSAGE(outcome.error_type == "DeviceLost", outcome.error_type << ": " << outcome.message);
            if (retry) CHECK_MESSAGE(retry->error_type == "DeviceLost", retry->message);  // refuses, no crash
            const Outcome fresh = attempt(mode, FaultPoint::submission, 0, FaultResult::point_default);
            REQUIRE_MESSAGE(fresh.error_type.empty(), fresh.message);
            CHECK(fresh.values == expected);
        }
    }
}

}  // namespace
}  // namespace tapevm::test
