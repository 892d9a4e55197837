// gpu::devices() and gpu::validation_messages(): what the loader offers.
#include "context.hpp"
#include "tapevm/gpu.hpp"

namespace tapevm::gpu {

std::vector<DeviceInfo> devices() {
    const auto instance = detail::Instance::acquire(detail::validation_requested(false));
    const auto physical = instance->physical_devices();
    std::vector<DeviceInfo> infos;
    for (std::size_t i = 0; i < physical.size(); ++i) infos.push_back(detail::describe(physical[i], i));
    return infos;
}

}  // namespace tapevm::gpu
