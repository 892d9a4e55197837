// The gpu device's stream: kernels and copies recorded into command buffers in call order,
// submitted in batches, each with its fence.
//
// Batch: a command buffer, descriptor pools, and what it must keep alive until its fence
// signals (the buffers of the tensors its commands use, staging buffers) plus host copies to
// run then (read-backs). A full batch (max_batch_commands) is submitted and a new one begun;
// at most max_in_flight batches are in flight, older ones are waited for first. Every command
// is preceded by a global memory barrier (compute and transfer, reads and writes), which also
// orders it after the batches submitted before it on the queue.
//
// Errors found by kernels go to the device error buffer (shaders/nn_common.glsl); wait()
// checks it after each completed batch and throws tapevm::Error.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "context.hpp"
#include "memory.hpp"
#include "tapevm/nn/device.hpp"
#include "vulkan.hpp"

namespace tapevm::nn::detail {

struct GpuPipeline;

/// A device buffer shared by the tensors over it and the batches that use it.
struct GpuBuffer {
    gpu::detail::DeviceBuffer buffer;
    std::shared_ptr<void> on_release;  // the backend's memory counter (see backend.cpp)
};

class Stream {
public:
    static constexpr std::size_t max_batch_commands = 256;
    static constexpr std::size_t max_in_flight = 3;

    Stream(gpu::detail::Device& device, const vk::raii::DescriptorSetLayout& set_layout,
           const vk::raii::PipelineLayout& layout);
    ~Stream();  // waits for every batch

    /// Records a dispatch: `buffers` at bindings 0.. (null: the dummy buffer), the error
    /// buffer at binding 15.
    void dispatch(const GpuPipeline& pipeline, std::span<const std::shared_ptr<GpuBuffer>> buffers,
                  std::span<const std::byte> push, std::array<std::uint32_t, 3> groups);
    /// Records a copy between two buffers.
    void copy(const std::shared_ptr<GpuBuffer>& src, std::size_t src_offset, const std::shared_ptr<GpuBuffer>& dst,
              std::size_t dst_offset, std::size_t bytes);
    /// Records a fill of `bytes` bytes (a multiple of 4) from `offset` with the 32-bit `pattern`.
    void fill(const std::shared_ptr<GpuBuffer>& dst, std::size_t offset, std::size_t bytes, std::uint32_t pattern);
    /// Records host bytes into a buffer (through a staging buffer the batch keeps).
    void write(const std::shared_ptr<GpuBuffer>& dst, std::size_t offset, std::span<const std::byte> bytes);
    /// Copies bytes of a buffer to the host after the work recorded before (submits, waits).
    void read(const std::shared_ptr<GpuBuffer>& src, std::size_t offset, std::span<std::byte> bytes);
    /// Submits what is recorded and waits for every batch; throws a kernel's error.
    void synchronize();

    StreamStats stats() const { return stats_; }

private:
    struct Batch {
        vk::raii::CommandBuffer commands{nullptr};
        vk::raii::Fence fence{nullptr};
        std::vector<vk::raii::DescriptorPool> pools;
        std::size_t pool_sets = 0;       // sets taken from pools.back()
        std::size_t command_count = 0;   // commands recorded
        std::vector<std::shared_ptr<void>> keep_alive;
        std::vector<std::function<void()>> on_complete;
        bool recording = false;
    };

    Batch& current();           // the batch being recorded (begins one when none)
    void before_command(Batch& batch);
    void after_command(Batch& batch);
    void submit();              // submits the current batch, if it recorded anything
    void wait_for(Batch& batch);  // waits, runs on_complete, recycles
    void check_errors();
    vk::DescriptorSet allocate_set(Batch& batch);

    gpu::detail::Device& device_;
    const vk::raii::DescriptorSetLayout& set_layout_;
    const vk::raii::PipelineLayout& layout_;
    vk::raii::CommandPool pool_{nullptr};
    std::unique_ptr<Batch> recording_;
    std::deque<std::unique_ptr<Batch>> in_flight_;
    std::vector<std::unique_ptr<Batch>> free_;
    std::shared_ptr<GpuBuffer> dummy_;
    gpu::detail::DeviceBuffer errors_;  // host-visible: uint[8], shaders/nn_common.glsl
    StreamStats stats_;
};

}  // namespace tapevm::nn::detail
