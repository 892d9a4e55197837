// The set-up shared by the main() of every GPU test executable (tests/gpu/gpu_main.cpp,
// tests/faults/faults_main.cpp, tests/nn/gpu/nn_gpu_main.cpp): lavapipe kept loaded under
// AddressSanitizer, the Khronos validation layer on, a skip (exit 77, Meson's "skipped") that
// says why when there is no Vulkan device, and a run that fails on any validation message (a
// test that misuses Vulkan fails like one with a wrong result).
#pragma once

#include <functional>

namespace tapevm::test {

/// Meson's exit status of a skipped test.
inline constexpr int skipped_exit_status = 77;

/// Before any device exists: keeps the Vulkan driver loaded (keep_driver_loaded.hpp) and sets
/// TAPEVM_VULKAN_VALIDATION=1 unless the environment sets it already.
void prepare_gpu_test_environment();

/// Whether the GPU VM sees a Vulkan device; when it does not, prints "SKIPPED: ..." naming
/// `suites` and why (no device, or the loader's DeviceUnavailable message).
bool vulkan_device_present(const char* suites);

/// Runs doctest with the command line, then `after_tests` (when given: releases devices the
/// suites kept), then prints every validation-layer message. Returns doctest's status, or 1
/// when the layer reported anything (doctest's own early exits, --help and such, return as
/// they are).
int run_gpu_tests(int argc, char** argv, const std::function<void()>& after_tests = {});

}  // namespace tapevm::test
