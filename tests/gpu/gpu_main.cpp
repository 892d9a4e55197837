// main() of the GPU test executables: skipped (exit 77, Meson's "skipped") when there is no
// Vulkan device at all, saying why; the validation layer on (when installed) and any message
// it reports fails the run.
#define DOCTEST_CONFIG_IMPLEMENT
#include <cstdio>
#include <cstdlib>

#include <doctest/doctest.h>

#include "../keep_driver_loaded.hpp"
#include "tapevm/error.hpp"
#include "tapevm/gpu.hpp"

int main(int argc, char** argv) {
    tapevm::test::keep_vulkan_driver_loaded();
    setenv("TAPEVM_VULKAN_VALIDATION", "1", 0);
    try {
        if (tapevm::gpu::devices().empty()) {
            std::printf("SKIPPED: the Vulkan loader reports no device, so the GPU tests cannot run\n");
            return 77;
        }
    } catch (const tapevm::DeviceUnavailable& error) {
        std::printf("SKIPPED: no Vulkan device: %s\n", error.what());
        return 77;
    }
    doctest::Context context(argc, argv);
    const int result = context.run();
    if (context.shouldExit()) return result;
    const auto messages = tapevm::gpu::validation_messages();
    for (const auto& message : messages) std::printf("validation layer: %s\n", message.c_str());
    if (!messages.empty()) {
        std::printf("FAILED: %zu validation messages\n", messages.size());
        return 1;
    }
    return result;
}
