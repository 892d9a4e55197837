#include "buffer_pool.hpp"

#include <bit>
#include <chrono>
#include <cstdlib>
#include <string_view>

namespace tapevm::nn::detail {

BufferPool::BufferPool(const gpu::detail::Device& device, gpu::detail::MemoryKind kind)
    : device_(device), kind_(kind) {
    const char* env = std::getenv("TAPEVM_NN_POOL");
    caching_ = env == nullptr || std::string_view(env) != "0";
}

std::uint64_t BufferPool::class_bytes(std::uint64_t bytes) {
    constexpr std::uint64_t small_step = 256, small_limit = 64 * 1024;
    if (bytes <= small_limit)
        return std::max<std::uint64_t>((bytes + small_step - 1) / small_step, 1) * small_step;
    const std::uint64_t step = std::bit_floor(bytes) / 8;
    return (bytes + step - 1) / step * step;
}

std::shared_ptr<GpuBuffer> BufferPool::take(std::uint64_t bytes) {
    const std::uint64_t size = class_bytes(bytes);
    {
        const std::lock_guard lock(mutex_);
        auto found = free_.find(size);
        if (found != free_.end() && !found->second.empty()) {
            std::shared_ptr<GpuBuffer> buffer = std::move(found->second.back());
            found->second.pop_back();
            cached_ -= size;
            ++stats_.reused;
            return buffer;
        }
    }
    const auto started = std::chrono::steady_clock::now();
    gpu::detail::DeviceBuffer memory(device_, size, kind_);  // throws OutOfDeviceMemory
    *reserved_ += size;                                      // before the deleter that takes it off can run
    std::shared_ptr<GpuBuffer> buffer(new GpuBuffer{std::move(memory)},
                                      [reserved = reserved_, size](GpuBuffer* b) {
                                          delete b;
                                          *reserved -= size;
                                      });
    const std::chrono::duration<double> took = std::chrono::steady_clock::now() - started;
    const std::lock_guard lock(mutex_);
    ++stats_.created;
    stats_.create_seconds += took.count();
    return buffer;
}

void BufferPool::give_back(std::shared_ptr<GpuBuffer> buffer) {
    if (!buffer || !caching_) return;
    const std::uint64_t size = buffer->buffer.bytes();
    const std::lock_guard lock(mutex_);
    free_[size].push_back(std::move(buffer));
    cached_ += size;
}

void BufferPool::trim() {
    std::unordered_map<std::uint64_t, std::vector<std::shared_ptr<GpuBuffer>>> dropped;
    {
        const std::lock_guard lock(mutex_);
        dropped.swap(free_);
        cached_ = 0;
    }
}

std::uint64_t BufferPool::reserved_bytes() const { return reserved_->load(); }

std::uint64_t BufferPool::cached_bytes() const {
    const std::lock_guard lock(mutex_);
    return cached_;
}

BufferPool::Stats BufferPool::stats() const {
    const std::lock_guard lock(mutex_);
    return stats_;
}

}  // namespace tapevm::nn::detail
