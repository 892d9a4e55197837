// The gpu device's factory in a build without the GPU VM (meson option gpu disabled, or its
// packages not found): built instead of this folder's backend (src/nn/meson.build), so
// nn::Device::gpu() links and throws tapevm::Unsupported, and gpu_available() is false.
#include <memory>

#include "../backend.hpp"  // the Backend interface (not gpu/backend.hpp)
#include "tapevm/error.hpp"

namespace tapevm::nn::detail {

std::shared_ptr<Backend> make_gpu_backend(const GpuOptions&) {
    throw Unsupported(
        "nn::Device::gpu: tapevm was built without the GPU VM (meson option gpu: disabled, or Vulkan's "
        "headers, glslang or SPIRV-Tools not found when it was configured)");
}

bool gpu_backend_available() { return false; }

}  // namespace tapevm::nn::detail
