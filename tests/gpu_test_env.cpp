#include "gpu_test_env.hpp"

#define DOCTEST_CONFIG_IMPLEMENT
#include <cstdio>
#include <cstdlib>

#include <doctest/doctest.h>

#include "keep_driver_loaded.hpp"
#include "tapevm/error.hpp"
#include "tapevm/gpu.hpp"

namespace tapevm::test {

void prepare_gpu_test_environment() {
    keep_vulkan_driver_loaded();
    setenv("TAPEVM_VULKAN_VALIDATION", "1", 0);
    // Engine::compiled's calls wait for their kernels (gpu::CompileWait), so that the suites
    // test the compiled kernels from the first call; the background tests ask for background.
    setenv("TAPEVM_GPU_COMPILE", "wait", 0);
}

bool vulkan_device_present(const char* suites) {
    try {
        if (gpu::devices().empty()) {
            std::printf("SKIPPED: the Vulkan loader reports no device, so %s cannot run\n", suites);
            return false;
        }
    } catch (const DeviceUnavailable& error) {
        std::printf("SKIPPED: no Vulkan device: %s\n", error.what());
        return false;
    }
    return true;
}

int run_gpu_tests(int argc, char** argv, const std::function<void()>& after_tests) {
    doctest::Context context(argc, argv);
    const int result = context.run();
    if (after_tests) after_tests();
    if (context.shouldExit()) return result;
    const auto messages = gpu::validation_messages();
    for (const auto& message : messages) std::printf("validation layer: %s\n", message.c_str());
    if (!messages.empty()) {
        std::printf("FAILED: %zu validation messages\n", messages.size());
        return 1;
    }
    return result;
}

}  // namespace tapevm::test
