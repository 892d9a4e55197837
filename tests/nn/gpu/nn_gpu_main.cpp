// main() of the nn gpu test executables (tests/gpu_test_env.hpp): skipped (exit 77, Meson's
// "skipped") when there is no Vulkan device, saying why; the Khronos validation layer on
// (TAPEVM_VULKAN_VALIDATION=1 unless set otherwise) and any message it reports fails the run.
#include <cstdio>
#include <optional>

#include "../../gpu_test_env.hpp"
#include "nn_gpu_device.hpp"
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
    tapevm::test::prepare_gpu_test_environment();
    if (!tapevm::nn::Device::gpu_available()) {
        std::printf("SKIPPED: no Vulkan device, so the nn gpu tests cannot run\n");
        return tapevm::test::skipped_exit_status;
    }
    // The suites' shared device goes before the validation messages are read.
    return tapevm::test::run_gpu_tests(argc, argv, tapevm::nn::test::release_gpu_device);
}
