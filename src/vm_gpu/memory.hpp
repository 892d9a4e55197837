// Vulkan buffers with their own memory: device-local storage buffers and host-visible staging
// buffers (coherent, persistently mapped). One allocation per buffer: a Vm holds a handful.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>

#include "vulkan.hpp"

namespace tapevm::gpu::detail {

class Device;

enum class MemoryKind {
    device,    // device-local storage buffer (transfer source and destination)
    upload,    // host-visible, coherent: host writes, the device copies from it
    download,  // host-visible, coherent, cached where possible: the device copies into it
};

/// What the buffers of one device hold: live and peak bytes (memory use is bounded by the
/// chunk size, not the batch: tests/gpu/test_gpu_memory.cpp checks it), and a limit that
/// makes allocations beyond it fail as if the device were out of memory (tests only: it
/// exercises the smaller-chunks path on devices with memory to spare).
class MemoryLedger {
public:
    /// Records `bytes` more; throws OutOfDeviceMemory when that would pass the limit.
    void charge(std::uint64_t bytes);
    void release(std::uint64_t bytes);
    std::uint64_t live_bytes() const { return live_.load(); }
    std::uint64_t peak_bytes() const { return peak_.load(); }
    /// Restarts the peak at the live bytes.
    void reset_peak() { peak_.store(live_.load()); }
    void set_limit(std::uint64_t bytes) { limit_.store(bytes); }

private:
    std::atomic<std::uint64_t> live_{0}, peak_{0}, limit_{UINT64_MAX};
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
    // The buffer's bytes on its device's ledger, released with the buffer (moves with it).
    class Charge {
    public:
        Charge() = default;
        Charge(MemoryLedger& ledger, std::uint64_t bytes) : ledger_(&ledger), bytes_(bytes) {
            ledger.charge(bytes);
        }
        Charge(Charge&& other) noexcept
            : ledger_(std::exchange(other.ledger_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}
        Charge& operator=(Charge&& other) noexcept {
            if (this != &other) {
                release();
                ledger_ = std::exchange(other.ledger_, nullptr);
                bytes_ = std::exchange(other.bytes_, 0);
            }
            return *this;
        }
        ~Charge() { release(); }

    private:
        void release() {
            if (ledger_ != nullptr) ledger_->release(bytes_);
            ledger_ = nullptr;
        }
        MemoryLedger* ledger_ = nullptr;
        std::uint64_t bytes_ = 0;
    };

    Charge charge_;  // destroyed last: after the memory is freed
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
