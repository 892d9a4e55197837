// main() of the fault-injection suites: fault injection enabled before any device exists (so
// every device gets the counting hooks, src/vm_gpu/fault_injection.hpp); skipped (exit 77) when
// there is no Vulkan device; the validation layer on, and any message it reports fails the run
// (an error path that misuses Vulkan is a failure like a wrong result).
#define DOCTEST_CONFIG_IMPLEMENT
#include <cstdio>
#include <cstdlib>

#include <doctest/doctest.h>

#include "../keep_driver_loaded.hpp"
#include "fault_injection.hpp"
#include "tapevm/error.hpp"
#include "tapevm/gpu.hpp"

int main(int argc, char** argv) {
    tapevm::test::keep_vulkan_driver_loaded();
    tapevm::gpu::detail::enable_fault_injection();
    setenv("TAPEVM_VULKAN_VALIDATION", "1", 0);
    try {
        if (tapevm::gpu::devices().empty()) {
            std::printf("SKIPPED: the Vulkan loader reports no device, so the fault tests cannot run\n");
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
