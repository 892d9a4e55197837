#include "memory.hpp"

#include <algorithm>
#include <string>

#include "context.hpp"
#include "errors.hpp"

namespace tapevm::gpu::detail {

void MemoryLedger::charge(std::uint64_t bytes) {
    const std::uint64_t live = live_.fetch_add(bytes) + bytes;
    if (live > limit_.load()) {
        live_.fetch_sub(bytes);
        throw OutOfDeviceMemory("out of device memory (the test limit of " + std::to_string(limit_.load()) +
                                " bytes)");
    }
    std::uint64_t peak = peak_.load();
    while (live > peak && !peak_.compare_exchange_weak(peak, live)) {
    }
}

void MemoryLedger::release(std::uint64_t bytes) { live_.fetch_sub(bytes); }

DeviceBuffer::DeviceBuffer(const Device& device, std::uint64_t bytes, MemoryKind kind) {
    bytes = std::max<std::uint64_t>(bytes, 16);
    const std::string what = "gpu: cannot allocate " + std::to_string(bytes) + " bytes of " +
                             (kind == MemoryKind::device ? "device" : "staging") + " memory";
    if (bytes > device.max_allocation_bytes())
        throw OutOfDeviceMemory(what + ": larger than the device allows");
    try {
        charge_ = Charge(device.ledger(), bytes);
    } catch (const OutOfDeviceMemory& error) {
        throw OutOfDeviceMemory(what + ": " + error.what());
    }
    try {
        const auto usage = vk::BufferUsageFlagBits::eStorageBuffer | vk::BufferUsageFlagBits::eTransferSrc |
                           vk::BufferUsageFlagBits::eTransferDst;
        buffer_ = vk::raii::Buffer(device.device(), vk::BufferCreateInfo({}, bytes, usage));
        const auto requirements = buffer_.getMemoryRequirements();
        using Flag = vk::MemoryPropertyFlagBits;
        vk::MemoryPropertyFlags required;
        vk::MemoryPropertyFlags preferred;
        switch (kind) {
            case MemoryKind::device: preferred = Flag::eDeviceLocal; break;
            case MemoryKind::upload: required = Flag::eHostVisible | Flag::eHostCoherent; break;
            case MemoryKind::download:
                required = Flag::eHostVisible | Flag::eHostCoherent;
                preferred = Flag::eHostCached;
                break;
        }
        const auto type = device.memory_type(requirements.memoryTypeBits, required, preferred);
        memory_ = vk::raii::DeviceMemory(device.device(), vk::MemoryAllocateInfo(requirements.size, type));
        buffer_.bindMemory(*memory_, 0);
        if (kind != MemoryKind::device)
            mapped_ = static_cast<std::byte*>(memory_.mapMemory(0, VK_WHOLE_SIZE, {}));
        bytes_ = bytes;
    } catch (...) {
        rethrow_allocation_error(what);
    }
}

}  // namespace tapevm::gpu::detail
