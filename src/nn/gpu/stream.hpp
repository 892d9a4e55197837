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
//
// Staging buffers of uploads and downloads come from pools (buffer_pool.hpp) and go back when
// their batch completes. With TAPEVM_NN_PROFILE=1 (and a queue with timestamps) each command is
// followed by a timestamp; completed batches add each command's device time to a table by
// kernel name (profile_report()).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <memory>
#include <span>
#include <vector>

#include "buffer_pool.hpp"
#include "context.hpp"
#include "memory.hpp"
#include "tapevm/nn/device.hpp"
#include "vulkan.hpp"

namespace tapevm::nn::detail {

struct GpuPipeline;

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
    void copy(const std::shared_ptr<GpuBuffer>& src, std::size_t src_offset,
              const std::shared_ptr<GpuBuffer>& dst, std::size_t dst_offset, std::size_t bytes);
    /// Records a fill of `bytes` bytes (a multiple of 4) from `offset` with the 32-bit `pattern`.
    void fill(const std::shared_ptr<GpuBuffer>& dst, std::size_t offset, std::size_t bytes,
              std::uint32_t pattern);
    /// Records host bytes into a buffer (through a staging buffer the batch keeps).
    void write(const std::shared_ptr<GpuBuffer>& dst, std::size_t offset, std::span<const std::byte> bytes);
    /// Copies bytes of a buffer to the host after the work recorded before (submits, waits).
    void read(const std::shared_ptr<GpuBuffer>& src, std::size_t offset, std::span<std::byte> bytes);
    /// Records the same copy into a staging buffer and submits without waiting; the returned
    /// function waits for that batch (and those before it) only, then copies the bytes out.
    /// It must be called while the stream lives (GpuBackend's handle keeps it).
    std::function<void(std::span<std::byte>)> read_later(const std::shared_ptr<GpuBuffer>& src,
                                                         std::size_t offset, std::size_t bytes);
    /// Submits what is recorded and waits for every batch; throws a kernel's error.
    void synchronize();

    StreamStats stats() const { return stats_; }
    /// The profile table (header comment), or "" when not profiling.
    std::string profile_report() const;
    bool profiling() const { return profiling_; }
    /// Drops the staging buffers cached for reuse.
    void trim_staging();

private:
    struct Batch {
        vk::raii::CommandBuffer commands{nullptr};
        vk::raii::Fence fence{nullptr};
        std::vector<vk::raii::DescriptorPool> pools;
        std::size_t next_pool = 0;      // the pool sets are taken from
        std::size_t pool_sets = 0;      // sets taken from pools[next_pool]
        std::size_t command_count = 0;  // commands recorded
        std::vector<std::shared_ptr<void>> keep_alive;
        std::vector<std::function<void()>> on_complete;
        bool recording = false;
        std::uint64_t number = 0;                 // submissions before it + 1 (set by submit())
        vk::raii::QueryPool timestamps{nullptr};  // profiling: one before the first command, one after each
        std::vector<const std::string*> names;    // profiling: each command's name
    };
    struct ProfileEntry {
        std::uint64_t calls = 0;
        double seconds = 0;
    };

    Batch& current();  // the batch being recorded (begins one when none)
    void before_command(Batch& batch);
    void after_command(Batch& batch, const std::string& name);
    void collect_profile(Batch& batch);
    void submit();                            // submits the current batch, if it recorded anything
    void wait_for(Batch& batch);              // waits, runs on_complete, recycles
    void wait_through(std::uint64_t number);  // waits for the batches submitted up to `number`
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
    BufferPool uploads_, downloads_;
    StreamStats stats_;
    std::uint64_t submitted_ = 0;  // batches submitted so far
    bool profiling_ = false;
    std::map<std::string, ProfileEntry, std::less<>> profile_;
    double wait_seconds_ = 0, submit_seconds_ = 0;
};

}  // namespace tapevm::nn::detail
