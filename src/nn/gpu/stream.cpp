#include "stream.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <mutex>
#include <string>

#include "backend.hpp"
#include "errors.hpp"
#include "pipelines.hpp"
#include "tapevm/error.hpp"

namespace tapevm::nn::detail {
namespace {

constexpr std::uint32_t sets_per_pool = 64;
constexpr std::uint32_t set_bindings = error_binding + 1;

// Everything before (compute, transfers, host writes) is visible to everything after.
void full_barrier(const vk::raii::CommandBuffer& commands) {
    using Access = vk::AccessFlagBits;
    using Stage = vk::PipelineStageFlagBits;
    const vk::MemoryBarrier barrier(
        Access::eShaderWrite | Access::eTransferWrite | Access::eHostWrite,
        Access::eShaderRead | Access::eShaderWrite | Access::eTransferRead | Access::eTransferWrite);
    commands.pipelineBarrier(Stage::eComputeShader | Stage::eTransfer | Stage::eHost,
                             Stage::eComputeShader | Stage::eTransfer, {}, barrier, {}, {});
}

std::string error_message(const std::uint32_t* words) {
    const auto kernel = static_cast<KernelId>(words[1]);
    const char* name = words[1] < static_cast<std::uint32_t>(KernelId::count) ? kernel_name(kernel) : "a kernel";
    const char* argument = words[0] == 2 ? "targets" : "ids";
    return std::string(name) + ": " + argument + "[" + std::to_string(words[3]) + "] = " +
           std::to_string(static_cast<std::int32_t>(words[2])) + " is outside [0, " + std::to_string(words[4]) +
           ") (found on the device)";
}

}  // namespace

Stream::Stream(gpu::detail::Device& device, const vk::raii::DescriptorSetLayout& set_layout,
               const vk::raii::PipelineLayout& layout)
    : device_(device), set_layout_(set_layout), layout_(layout) {
    try {
        pool_ = vk::raii::CommandPool(device.device(),
                                      vk::CommandPoolCreateInfo(vk::CommandPoolCreateFlagBits::eResetCommandBuffer,
                                                                device.queue_family()));
    } catch (...) {
        gpu::detail::rethrow_setup_error("nn gpu stream: cannot create a command pool");
    }
    dummy_ = std::make_shared<GpuBuffer>();
    dummy_->buffer = gpu::detail::DeviceBuffer(device, 16, gpu::detail::MemoryKind::device);
    errors_ = gpu::detail::DeviceBuffer(device, 32, gpu::detail::MemoryKind::download);
    std::memset(errors_.mapped(), 0, 32);
}

Stream::~Stream() {
    try {
        submit();
        while (!in_flight_.empty()) wait_for(*in_flight_.front());
    } catch (...) {  // a kernel's error (the rest are waited for below) or a lost device
        try {
            while (!in_flight_.empty()) wait_for(*in_flight_.front());
        } catch (...) {
        }
    }
}

Stream::Batch& Stream::current() {
    if (recording_) return *recording_;
    if (!free_.empty()) {
        recording_ = std::move(free_.back());
        free_.pop_back();
    } else {
        recording_ = std::make_unique<Batch>();
        try {
            recording_->commands = std::move(
                vk::raii::CommandBuffers(device_.device(),
                                         vk::CommandBufferAllocateInfo(*pool_, vk::CommandBufferLevel::ePrimary, 1))
                    .front());
            recording_->fence = vk::raii::Fence(device_.device(), vk::FenceCreateInfo());
        } catch (...) {
            recording_.reset();
            gpu::detail::rethrow_work_error("nn gpu stream: cannot allocate a command buffer");
        }
    }
    try {
        recording_->commands.begin(vk::CommandBufferBeginInfo(vk::CommandBufferUsageFlagBits::eOneTimeSubmit));
    } catch (...) {
        gpu::detail::rethrow_work_error("nn gpu stream: cannot begin a command buffer");
    }
    recording_->recording = true;
    return *recording_;
}

void Stream::before_command(Batch& batch) { full_barrier(batch.commands); }

void Stream::after_command(Batch& batch) {
    ++batch.command_count;
    if (batch.command_count >= max_batch_commands) submit();
}

vk::DescriptorSet Stream::allocate_set(Batch& batch) {
    if (batch.pools.empty() || batch.pool_sets == sets_per_pool) {
        const vk::DescriptorPoolSize size(vk::DescriptorType::eStorageBuffer, sets_per_pool * set_bindings);
        batch.pools.emplace_back(device_.device(), vk::DescriptorPoolCreateInfo({}, sets_per_pool, size));
        batch.pool_sets = 0;
    }
    const vk::DescriptorSetLayout layout = *set_layout_;
    const vk::DescriptorSetAllocateInfo info(*batch.pools.back(), layout);
    const vk::Device device = *device_.device();
    const vk::DescriptorSet set = device.allocateDescriptorSets(info, *device_.device().getDispatcher()).front();
    ++batch.pool_sets;
    return set;
}

void Stream::dispatch(const GpuPipeline& pipeline, std::span<const std::shared_ptr<GpuBuffer>> buffers,
                      std::span<const std::byte> push, std::array<std::uint32_t, 3> groups) {
    device_.check_alive();
    if (groups[0] == 0 || groups[1] == 0 || groups[2] == 0) return;
    Batch& batch = current();
    try {
        const vk::DescriptorSet set = allocate_set(batch);
        std::array<vk::DescriptorBufferInfo, set_bindings> infos;
        std::array<vk::WriteDescriptorSet, set_bindings> writes;
        std::uint32_t count = 0;
        for (std::size_t b = 0; b < buffers.size(); ++b) {
            const auto& buffer = buffers[b] ? buffers[b] : dummy_;
            infos[count] = vk::DescriptorBufferInfo(buffer->buffer.buffer(), 0, VK_WHOLE_SIZE);
            writes[count] = vk::WriteDescriptorSet(set, static_cast<std::uint32_t>(b), 0, 1,
                                                   vk::DescriptorType::eStorageBuffer, nullptr, &infos[count]);
            ++count;
            batch.keep_alive.push_back(buffer);
        }
        infos[count] = vk::DescriptorBufferInfo(errors_.buffer(), 0, VK_WHOLE_SIZE);
        writes[count] = vk::WriteDescriptorSet(set, error_binding, 0, 1, vk::DescriptorType::eStorageBuffer, nullptr,
                                               &infos[count]);
        ++count;
        device_.device().updateDescriptorSets(std::span(writes.data(), count), {});
        before_command(batch);
        batch.commands.bindPipeline(vk::PipelineBindPoint::eCompute, *pipeline.pipeline);
        batch.commands.bindDescriptorSets(vk::PipelineBindPoint::eCompute, *layout_, 0, set, {});
        if (!push.empty())
            batch.commands.pushConstants<std::byte>(*layout_, vk::ShaderStageFlagBits::eCompute, 0, push);
        batch.commands.dispatch(groups[0], groups[1], groups[2]);
    } catch (...) {
        gpu::detail::rethrow_work_error("nn gpu stream: cannot record " + pipeline.name);
    }
    ++stats_.kernels;
    after_command(batch);
}

void Stream::copy(const std::shared_ptr<GpuBuffer>& src, std::size_t src_offset, const std::shared_ptr<GpuBuffer>& dst,
                  std::size_t dst_offset, std::size_t bytes) {
    device_.check_alive();
    if (bytes == 0) return;
    Batch& batch = current();
    before_command(batch);
    batch.commands.copyBuffer(src->buffer.buffer(), dst->buffer.buffer(),
                              vk::BufferCopy(src_offset, dst_offset, bytes));
    batch.keep_alive.push_back(src);
    batch.keep_alive.push_back(dst);
    after_command(batch);
}

void Stream::fill(const std::shared_ptr<GpuBuffer>& dst, std::size_t offset, std::size_t bytes, std::uint32_t pattern) {
    device_.check_alive();
    if (bytes == 0) return;
    Batch& batch = current();
    before_command(batch);
    batch.commands.fillBuffer(dst->buffer.buffer(), offset, bytes, pattern);
    batch.keep_alive.push_back(dst);
    after_command(batch);
}

void Stream::write(const std::shared_ptr<GpuBuffer>& dst, std::size_t offset, std::span<const std::byte> bytes) {
    device_.check_alive();
    if (bytes.empty()) return;
    auto staging = std::make_shared<GpuBuffer>();
    staging->buffer = gpu::detail::DeviceBuffer(device_, bytes.size(), gpu::detail::MemoryKind::upload);
    std::memcpy(staging->buffer.mapped(), bytes.data(), bytes.size());
    copy(staging, 0, dst, offset, bytes.size());
}

void Stream::read(const std::shared_ptr<GpuBuffer>& src, std::size_t offset, std::span<std::byte> bytes) {
    device_.check_alive();
    if (bytes.empty()) {
        synchronize();
        return;
    }
    auto staging = std::make_shared<GpuBuffer>();
    staging->buffer = gpu::detail::DeviceBuffer(device_, bytes.size(), gpu::detail::MemoryKind::download);
    copy(src, offset, staging, 0, bytes.size());
    synchronize();
    std::memcpy(bytes.data(), staging->buffer.mapped(), bytes.size());
}

void Stream::submit() {
    if (!recording_) return;
    std::unique_ptr<Batch> batch = std::move(recording_);
    try {
        // Device writes visible to the host (read-backs, the error buffer) once the fence signals.
        const vk::MemoryBarrier to_host(vk::AccessFlagBits::eShaderWrite | vk::AccessFlagBits::eTransferWrite,
                                        vk::AccessFlagBits::eHostRead);
        batch->commands.pipelineBarrier(vk::PipelineStageFlagBits::eComputeShader | vk::PipelineStageFlagBits::eTransfer,
                                        vk::PipelineStageFlagBits::eHost, {}, to_host, {}, {});
        batch->commands.end();
        batch->recording = false;
        const vk::CommandBuffer commands = *batch->commands;
        const vk::SubmitInfo info({}, {}, commands);
        const std::lock_guard lock(device_.mutex());
        device_.queue().submit(info, *batch->fence);
    } catch (...) {
        device_.mark_lost("nn gpu stream: a submission failed");
        gpu::detail::rethrow_work_error("nn gpu stream: cannot submit a batch");
    }
    ++stats_.submissions;
    in_flight_.push_back(std::move(batch));
    if (in_flight_.size() > max_in_flight) wait_for(*in_flight_.front());
}

void Stream::wait_for(Batch& batch) {
    // `batch` is in_flight_.front().
    try {
        const auto result = device_.device().waitForFences(*batch.fence, VK_TRUE, UINT64_MAX);
        if (result != vk::Result::eSuccess) throw vk::SystemError(vk::make_error_code(result), "vkWaitForFences");
    } catch (...) {
        device_.mark_lost("nn gpu stream: waiting for a batch failed");
        gpu::detail::rethrow_work_error("nn gpu stream: cannot wait for a batch");
    }
    ++stats_.waits;
    std::unique_ptr<Batch> done = std::move(in_flight_.front());
    in_flight_.pop_front();
    for (auto& step : done->on_complete) step();
    done->on_complete.clear();
    done->keep_alive.clear();
    done->command_count = 0;
    try {
        device_.device().resetFences(*done->fence);
        for (auto& pool : done->pools) pool.reset(vk::DescriptorPoolResetFlags{});
        done->pool_sets = 0;
        if (done->pools.size() > 1) done->pools.erase(done->pools.begin() + 1, done->pools.end());
        done->commands.reset(vk::CommandBufferResetFlags{});
    } catch (...) {
        gpu::detail::rethrow_work_error("nn gpu stream: cannot recycle a batch");
    }
    free_.push_back(std::move(done));
    check_errors();
}

void Stream::check_errors() {
    auto* words = reinterpret_cast<std::uint32_t*>(errors_.mapped());
    if (words[0] == 0) return;
    const std::string message = error_message(words);
    std::memset(words, 0, 32);
    throw Error(message);
}

void Stream::synchronize() {
    submit();
    while (!in_flight_.empty()) wait_for(*in_flight_.front());
}

}  // namespace tapevm::nn::detail
