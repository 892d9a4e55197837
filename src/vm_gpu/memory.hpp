// Vulkan buffers with their own memory: device-local storage buffers and host-visible staging
// buffers (coherent, persistently mapped). One allocation per buffer: a Vm holds a handful.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "context.hpp"

namespace tapevm::gpu::detail {

enum class MemoryKind {
    device,    // device-local storage buffer (transfer source and destination)
    upload,    // host-visible, coherent: host writes, the device copies from it
    download,  // host-visible, coherent, cached where possible: the device copies into it
};

class DeviceBuffer {
public:
    DeviceBuffer() = default;
    /// At least `bytes` (minimum 16). Throws OutOfDeviceMemory when memory runs out.
    DeviceBuffer(const Device& device, std::uint64_t bytes, MemoryKind kind);

    vk::Buffer buffer() const { return *buffer_; }
    std::uint64_t bytes() const { return bytes_; }
    /// Host address of a host-visible buffer, else null.
    std::byte* mapped() const { return mapped_; }
    explicit operator bool() const { return bytes_ != 0; }

private:
    vk::raii::Buffer buffer_{nullptr};
    vk::raii::DeviceMemory memory_{nullptr};
    std::uint64_t bytes_ = 0;
    std::byte* mapped_ = nullptr;
};

/// Device memory behind a gpu::Buffer: the device stays alive while a buffer uses it.
struct BufferStorage {
    std::shared_ptr<Device> device;
    DeviceBuffer buffer;
};

}  // namespace tapevm::gpu::detail
