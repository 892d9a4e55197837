// main() of the nn gpu test executables: skipped (exit 77, Meson's "skipped") when there is no
// Vulkan device, saying why; the Khronos validation layer on (TAPEVM_VULKAN_VALIDATION=1 unless
// set otherwise) and any message it reports fails the run.
#define DOCTEST_CONFIG_IMPLEMENT
#include <cstdio>
#include <cstdlib>

#include <doctest/doctest.h>

#include <optional>

#include "../../keep_driver_loaded.hpp"
#include "nn_gpu_device.hpp"
#include "tapevm/gpu.hpp"
#include "tapevm/nn/device.hpp"

namespace tapevm::nn::test {
namespace {
std::optional<Device> shared_gpu;
}  // namespace

Device gpu_device() {
    if (!shared_gpu) shared_gpu.emplace(Device::gpu());
    return *shared_gpu;
}

void release_gpu_device() { shared_gpu.reset(); }

}  // namespace tapevm::nn::test

int main(int argc, char** argv) {
    tapevm::test::keep_vulkan_driver_loaded();
    setenv("TAPEVM_VULKAN_VALIDATION", "1", 0);
    if (!tapevm::nn::Device::gpu_available()) {
        std::printf("SKIPPED: no Vulkan device, so the nn gpu tests cannot run\n");
        return 77;
    }
    doctest::Context context(argc, argv);
    const int result = context.run();
    tapevm::nn::test::release_gpu_device();
    if (context.shouldExit()) return result;
    const auto messages = tapevm::gpu::validation_messages();
    for (const auto& message : messages) std::printf("validation layer: %s\n", message.c_str());
    if (!messages.empty()) {
        std::printf("FAILED: %zu validation messages\n", messages.size());
        return 1;
    }
    return result;
}
