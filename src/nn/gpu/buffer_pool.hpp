// Device buffers cached for reuse: the gpu backend's caching allocator.
//
// A training step allocates and drops the same few hundred tensors every step; a Vulkan
// allocation (vkAllocateMemory) per tensor costs the driver far more than the kernels that use
// it. BufferPool keeps dropped buffers by size class and hands them out again.
//
// Reuse is stream-ordered (as PyTorch's caching allocator on one stream): a tensor's buffer goes
// back to its pool as soon as the tensor is dropped on the host, even while recorded or
// in-flight work still uses it, because every later use is recorded later on the same queue and
// every command waits for the ones before it (stream.hpp: a full barrier before each command).
// Staging buffers (host-visible) use the same class but go back only when their batch completes,
// since the host writes into them directly.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "memory.hpp"

namespace tapevm::gpu::detail {
class Device;
}

namespace tapevm::nn::detail {

/// A device buffer shared by the tensors over it and the batches that use it.
struct GpuBuffer {
    gpu::detail::DeviceBuffer buffer;
};

class BufferPool {
public:
    struct Stats {
        std::uint64_t created = 0;  // buffers allocated from the driver
        std::uint64_t reused = 0;   // buffers handed out again from the cache
        double create_seconds = 0;  // host time spent allocating from the driver
    };

    /// TAPEVM_NN_POOL=0 in the environment turns caching off (every take() allocates, every
    /// give_back() frees): for comparisons.
    BufferPool(const gpu::detail::Device& device, gpu::detail::MemoryKind kind);

    /// The bytes of the class that holds `bytes`: multiples of 256 up to 64 KiB, then eight
    /// classes per power of two (at most 12.5% more than asked).
    static std::uint64_t class_bytes(std::uint64_t bytes);

    /// A buffer of class_bytes(bytes) bytes: a cached one when there is one, else a new one.
    /// Throws gpu::detail::OutOfDeviceMemory when the driver has no memory for a new one.
    std::shared_ptr<GpuBuffer> take(std::uint64_t bytes);
    /// Caches `buffer` (taken from this pool) for a later take().
    void give_back(std::shared_ptr<GpuBuffer> buffer);
    /// Forgets every cached buffer: its memory returns to the driver when the last batch using
    /// it completes (synchronize the stream first to get it back now).
    void trim();

    /// Bytes of the buffers this pool made that are still alive (in use or cached).
    std::uint64_t reserved_bytes() const;
    std::uint64_t cached_bytes() const;
    Stats stats() const;

private:
    const gpu::detail::Device& device_;
    gpu::detail::MemoryKind kind_;
    bool caching_ = true;
    mutable std::mutex mutex_;
    std::unordered_map<std::uint64_t, std::vector<std::shared_ptr<GpuBuffer>>> free_;
    std::uint64_t cached_ = 0;
    // Shared with the buffers' deleters: a buffer may outlive the pool (in a batch's keep-alive).
    std::shared_ptr<std::atomic<std::uint64_t>> reserved_ = std::make_shared<std::atomic<std::uint64_t>>(0);
    Stats stats_;
};

}  // namespace tapevm::nn::detail
