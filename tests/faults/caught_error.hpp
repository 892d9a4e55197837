// How a step under injected faults ended, shared by the fault suites (test_faults_gpu.cpp,
// test_faults_nn.cpp): the type and message of the tapevm::Error it threw, or nothing.
#pragma once

#include <exception>
#include <string>

#include "tapevm/error.hpp"

namespace tapevm::test {

/// `error_type` is "" when the step returned, else the most derived of "DeviceLost",
/// "OutOfMemory", "DeviceUnavailable", "Unsupported", "Error" (another tapevm::Error) or
/// "untyped" (any other std::exception: a bug, which every check of the suites rejects);
/// `message` is its what().
struct CaughtError {
    std::string error_type;
    std::string message;
};

/// Runs `action()`, recording in `into` how it ended (CaughtError). Never throws a
/// std::exception, so the caller's clean-up (disarming the faults) always runs.
template <class Action> void run_catching(CaughtError& into, Action&& action) {
    const auto set = [&into](const char* type, const std::exception& error) {
        into.error_type = type;
        into.message = error.what();
    };
    try {
        action();
    } catch (const DeviceLost& error) {
        set("DeviceLost", error);
    } catch (const OutOfMemory& error) {
        set("OutOfMemory", error);
    } catch (const DeviceUnavailable& error) {
        set("DeviceUnavailable", error);
    } catch (const Unsupported& error) {
        set("Unsupported", error);
    } catch (const Error& error) {
        set("Error", error);
    } catch (const std::exception& error) {
        set("untyped", error);
    }
}

}  // namespace tapevm::test
