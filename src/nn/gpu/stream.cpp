#include "stream.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdlib>
#include <iomanip>
#include <sstream>
#include <string_view>
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

const std::string copy_name = "copy (transfer)";
const std::string fill_name = "fill (transfer)";
const std::string upload_name = "upload (host to device)";
const std::string download_name = "download (device to host)";

bool profiling_requested() {
    const char* env = std::getenv("TAPEVM_NN_PROFILE");
    return env != nullptr && std::string_view(env) != "0" && std::string_view(env) != "";
}

double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::string error_message(const std::uint32_t* words) {
    const auto kernel = static_cast<KernelId>(words[1]);
    const char* name =
        words[1] < static_cast<std::uint32_t>(KernelId::count) ? kernel_name(kernel) : "a kernel";
    const char* argument = words[0] == 2 ? "targets" : "ids";
    return std::string(name) + ": " + argument + "[" + std::to_string(words[3]) +
           "] = " + std::to_string(static_cast<std::int32_t>(words[2])) + " is outside [0, " +
           std::to_string(words[4]) + ") (found on the device)";
}

}  // namespace

Stream::Stream(gpu::detail::Device& device, const vk::raii::DescriptorSetLayout& set_layout,
               const vk::raii::PipelineLayout& layout)
    : device_(device), set_layout_(set_layout), layout_(layout),
      uploads_(device, gpu::detail::MemoryKind::upload),
      downloads_(device, gpu::detail::MemoryKind::download) {
    profiling_ = profiling_requested() && device.timestamp_bits() > 0;
    try {
        pool_ = vk::raii::CommandPool(
            device.device(), vk::CommandPoolCreateInfo(vk::CommandPoolCreateFlagBits::eResetCommandBuffer,
                                                       device.queue_family()));
    } catch (...) {
        gpu::detail::rethrow_setup_error("nn gpu stream: cannot create a command pool");
    }
    // The placeholder binding and the kernels' error words: out of memory here is tapevm's
    // OutOfMemory (a typed error), not vm_gpu's internal OutOfDeviceMemory.
    try {
        dummy_ = std::make_shared<GpuBuffer>();
        dummy_->buffer = gpu::detail::DeviceBuffer(device, 16, gpu::detail::MemoryKind::device);
        errors_ = gpu::detail::DeviceBuffer(device, 32, gpu::detail::MemoryKind::download);
    } catch (const gpu::detail::OutOfDeviceMemory& error) {
        throw OutOfMemory(std::string("nn gpu stream: cannot allocate its 48 bytes of buffers: ") +
                          error.what());
    }
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
                vk::raii::CommandBuffers(device_.device(), vk::CommandBufferAllocateInfo(
                                                               *pool_, vk::CommandBufferLevel::ePrimary, 1))
                    .front());
            recording_->fence = vk::raii::Fence(device_.device(), vk::FenceCreateInfo());
            if (profiling_) {
                recording_->timestamps = vk::raii::QueryPool(
                    device_.device(),
                    vk::QueryPoolCreateInfo({}, vk::QueryType::eTimestamp,
                                            static_cast<std::uint32_t>(max_batch_commands + 1)));
            }
        } catch (...) {
            recording_.reset();
            gpu::detail::rethrow_work_error("nn gpu stream: cannot allocate a command buffer");
        }
    }
    try {
        recording_->commands.begin(
            vk::CommandBufferBeginInfo(vk::CommandBufferUsageFlagBits::eOneTimeSubmit));
        if (profiling_) {
            recording_->commands.resetQueryPool(*recording_->timestamps, 0,
                                                static_cast<std::uint32_t>(max_batch_commands + 1));
            recording_->commands.writeTimestamp(vk::PipelineStageFlagBits::eBottomOfPipe,
                                                *recording_->timestamps, 0);
            recording_->names.clear();
        }
    } catch (...) {
        gpu::detail::rethrow_work_error("nn gpu stream: cannot begin a command buffer");
    }
    recording_->recording = true;
    return *recording_;
}

void Stream::before_command(Batch& batch) { full_barrier(batch.commands); }

void Stream::after_command(Batch& batch, const std::string& name) {
    if (profiling_) {
        batch.commands.writeTimestamp(vk::PipelineStageFlagBits::eBottomOfPipe, *batch.timestamps,
                                      static_cast<std::uint32_t>(batch.command_count + 1));
        batch.names.push_back(&name);
    }
    ++batch.command_count;
    if (batch.command_count >= max_batch_commands) submit();
}

vk::DescriptorSet Stream::allocate_set(Batch& batch) {
    // The batch's pools are reset when it completes and kept: pools[pool_in_use] is the one
    // being drawn from, a new pool is made only when every kept one is full.
    if (batch.pools.empty() || batch.pool_sets == sets_per_pool) {
        if (!batch.pools.empty()) ++batch.next_pool;
        if (batch.next_pool == batch.pools.size()) {
            const vk::DescriptorPoolSize size(vk::DescriptorType::eStorageBuffer,
                                              sets_per_pool * set_bindings);
            batch.pools.emplace_back(device_.device(), vk::DescriptorPoolCreateInfo({}, sets_per_pool, size));
        }
        batch.pool_sets = 0;
    }
    const vk::DescriptorSetLayout layout = *set_layout_;
    const vk::DescriptorSetAllocateInfo info(*batch.pools[batch.next_pool], layout);
    const vk::Device device = *device_.device();
    const vk::DescriptorSet set =
        device.allocateDescriptorSets(info, *device_.device().getDispatcher()).front();
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
            writes[count] =
                vk::WriteDescriptorSet(set, static_cast<std::uint32_t>(b), 0, 1,
                                       vk::DescriptorType::eStorageBuffer, nullptr, &infos[count]);
            ++count;
            batch.keep_alive.push_back(buffer);
        }
        infos[count] = vk::DescriptorBufferInfo(errors_.buffer(), 0, VK_WHOLE_SIZE);
        writes[count] = vk::WriteDescriptorSet(set, error_binding, 0, 1, vk::DescriptorType::eStorageBuffer,
                                               nullptr, &infos[count]);
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
    after_command(batch, pipeline.name);
}

void Stream::copy(const std::shared_ptr<GpuBuffer>& src, std::size_t src_offset,
                  const std::shared_ptr<GpuBuffer>& dst, std::size_t dst_offset, std::size_t bytes) {
    device_.check_alive();
    if (bytes == 0) return;
    Batch& batch = current();
    before_command(batch);
    batch.commands.copyBuffer(src->buffer.buffer(), dst->buffer.buffer(),
                              vk::BufferCopy(src_offset, dst_offset, bytes));
    batch.keep_alive.push_back(src);
    batch.keep_alive.push_back(dst);
    after_command(batch, copy_name);
}

void Stream::fill(const std::shared_ptr<GpuBuffer>& dst, std::size_t offset, std::size_t bytes,
                  std::uint32_t pattern) {
    device_.check_alive();
    if (bytes == 0) return;
    Batch& batch = current();
    before_command(batch);
    batch.commands.fillBuffer(dst->buffer.buffer(), offset, bytes, pattern);
    batch.keep_alive.push_back(dst);
    after_command(batch, fill_name);
}

void Stream::write(const std::shared_ptr<GpuBuffer>& dst, std::size_t offset,
                   std::span<const std::byte> bytes) {
    device_.check_alive();
    if (bytes.empty()) return;
    std::shared_ptr<GpuBuffer> staging = uploads_.take(bytes.size());
    std::memcpy(staging->buffer.mapped(), bytes.data(), bytes.size());
    Batch& batch = current();
    // Back to the pool when the copy has run (the host writes staging buffers directly).
    batch.on_complete.push_back([this, staging] { uploads_.give_back(staging); });
    before_command(batch);
    batch.commands.copyBuffer(staging->buffer.buffer(), dst->buffer.buffer(),
                              vk::BufferCopy(0, offset, bytes.size()));
    batch.keep_alive.push_back(dst);
    after_command(batch, upload_name);
}

void Stream::read(const std::shared_ptr<GpuBuffer>& src, std::size_t offset, std::span<std::byte> bytes) {
    device_.check_alive();
    if (bytes.empty()) {
        synchronize();
        return;
    }
    std::shared_ptr<GpuBuffer> staging = downloads_.take(bytes.size());
    Batch& batch = current();
    before_command(batch);
    batch.commands.copyBuffer(src->buffer.buffer(), staging->buffer.buffer(),
                              vk::BufferCopy(offset, 0, bytes.size()));
    batch.keep_alive.push_back(src);
    after_command(batch, download_name);
    synchronize();
    std::memcpy(bytes.data(), staging->buffer.mapped(), bytes.size());
    downloads_.give_back(std::move(staging));
}

std::function<void(std::span<std::byte>)> Stream::read_later(const std::shared_ptr<GpuBuffer>& src,
                                                             std::size_t offset, std::size_t bytes) {
    device_.check_alive();
    if (bytes == 0) return [](std::span<std::byte>) {};
    std::shared_ptr<GpuBuffer> staging = downloads_.take(bytes);
    Batch& batch = current();
    before_command(batch);
    batch.commands.copyBuffer(src->buffer.buffer(), staging->buffer.buffer(),
                              vk::BufferCopy(offset, 0, bytes));
    batch.keep_alive.push_back(src);
    // The batch keeps the staging buffer too: a PendingHostCopy dropped before its copy ran
    // frees the lambda below, and with it (before this) the buffer the device was still
    // writing (lavapipe's queue thread crashed there, tests/nn/gpu's to_host_later case).
    batch.keep_alive.push_back(staging);
    after_command(batch, download_name);
    submit();
    const std::uint64_t number = submitted_;
    return [this, staging = std::move(staging), number, bytes](std::span<std::byte> out) mutable {
        if (!staging) throw Error("nn gpu stream: a pending read was taken twice");
        wait_through(number);
        std::memcpy(out.data(), staging->buffer.mapped(), std::min(bytes, out.size()));
        downloads_.give_back(std::move(staging));
        staging.reset();
    };
}

void Stream::wait_through(std::uint64_t number) {
    while (!in_flight_.empty() && in_flight_.front()->number <= number) wait_for(*in_flight_.front());
}

void Stream::trim_staging() {
    uploads_.trim();
    downloads_.trim();
}

void Stream::submit() {
    if (!recording_) return;
    std::unique_ptr<Batch> batch = std::move(recording_);
    try {
        // Device writes visible to the host (read-backs, the error buffer) once the fence signals.
        const vk::MemoryBarrier to_host(vk::AccessFlagBits::eShaderWrite | vk::AccessFlagBits::eTransferWrite,
                                        vk::AccessFlagBits::eHostRead);
        batch->commands.pipelineBarrier(
            vk::PipelineStageFlagBits::eComputeShader | vk::PipelineStageFlagBits::eTransfer,
            vk::PipelineStageFlagBits::eHost, {}, to_host, {}, {});
        batch->commands.end();
        batch->recording = false;
        const vk::CommandBuffer commands = *batch->commands;
        const vk::SubmitInfo info({}, {}, commands);
        const auto started = std::chrono::steady_clock::now();
        const std::lock_guard lock(device_.mutex());
        device_.queue().submit(info, *batch->fence);
        submit_seconds_ += seconds_since(started);
    } catch (...) {
        device_.mark_lost("nn gpu stream: a submission failed");
        gpu::detail::rethrow_work_error("nn gpu stream: cannot submit a batch");
    }
    ++stats_.submissions;
    batch->number = ++submitted_;
    in_flight_.push_back(std::move(batch));
    if (in_flight_.size() > max_in_flight) wait_for(*in_flight_.front());
}

void Stream::wait_for(Batch& batch) {
    // `batch` is in_flight_.front().
    try {
        const auto started = std::chrono::steady_clock::now();
        const auto result = device_.device().waitForFences(*batch.fence, VK_TRUE, UINT64_MAX);
        wait_seconds_ += seconds_since(started);
        if (result != vk::Result::eSuccess)
            throw vk::SystemError(vk::make_error_code(result), "vkWaitForFences");
    } catch (...) {
        device_.mark_lost("nn gpu stream: waiting for a batch failed");
        gpu::detail::rethrow_work_error("nn gpu stream: cannot wait for a batch");
    }
    ++stats_.waits;
    std::unique_ptr<Batch> done = std::move(in_flight_.front());
    in_flight_.pop_front();
    if (profiling_) collect_profile(*done);
    for (auto& step : done->on_complete) step();
    done->on_complete.clear();
    done->keep_alive.clear();
    done->command_count = 0;
    try {
        device_.device().resetFences(*done->fence);
        for (auto& pool : done->pools) pool.reset(vk::DescriptorPoolResetFlags{});
        done->pool_sets = 0;
        done->next_pool = 0;
        done->commands.reset(vk::CommandBufferResetFlags{});
    } catch (...) {
        gpu::detail::rethrow_work_error("nn gpu stream: cannot recycle a batch");
    }
    free_.push_back(std::move(done));
    check_errors();
}

void Stream::collect_profile(Batch& batch) {
    const std::size_t count = batch.names.size();
    if (count == 0) return;
    std::vector<std::uint64_t> stamps(count + 1);
    const auto result =
        (*device_.device())
            .getQueryPoolResults(*batch.timestamps, 0, static_cast<std::uint32_t>(count + 1),
                                 stamps.size() * sizeof(std::uint64_t), stamps.data(), sizeof(std::uint64_t),
                                 vk::QueryResultFlagBits::e64 | vk::QueryResultFlagBits::eWait,
                                 *device_.device().getDispatcher());
    if (result != vk::Result::eSuccess) return;
    const std::uint32_t bits = device_.timestamp_bits();
    const std::uint64_t mask = bits >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << bits) - 1;
    const double tick = static_cast<double>(device_.limits().timestampPeriod) * 1e-9;
    for (std::size_t i = 0; i < count; ++i) {
        const std::uint64_t ticks = (stamps[i + 1] - stamps[i]) & mask;
        ProfileEntry& entry = profile_[*batch.names[i]];
        ++entry.calls;
        entry.seconds += static_cast<double>(ticks) * tick;
    }
    batch.names.clear();
}

std::string Stream::profile_report() const {
    if (!profiling_) return {};
    std::vector<std::pair<std::string, ProfileEntry>> rows(profile_.begin(), profile_.end());
    std::sort(rows.begin(), rows.end(),
              [](const auto& a, const auto& b) { return a.second.seconds > b.second.seconds; });
    double total = 0;
    for (const auto& row : rows) total += row.second.seconds;
    std::ostringstream out;
    out << std::fixed;
    out << "device time by kernel (GPU timestamps; " << stats_.submissions << " batches):\n";
    out << std::setw(12) << "ms" << std::setw(8) << "share" << std::setw(10) << "calls" << std::setw(11)
        << "us/call"
        << "  kernel\n";
    for (const auto& [name, entry] : rows) {
        out << std::setprecision(3) << std::setw(12) << entry.seconds * 1e3 << std::setprecision(1)
            << std::setw(7) << (total > 0 ? 100 * entry.seconds / total : 0) << "%" << std::setw(10)
            << entry.calls << std::setprecision(2) << std::setw(11)
            << entry.seconds * 1e6 / static_cast<double>(entry.calls) << "  "
            << (name.size() > 90 ? name.substr(0, 87) + "..." : name) << "\n";
    }
    out << std::setprecision(3) << std::setw(12) << total * 1e3 << "  total device time\n";
    const auto up = uploads_.stats(), down = downloads_.stats();
    out << "host: " << std::setprecision(3) << wait_seconds_ * 1e3 << " ms waiting for the device, "
        << submit_seconds_ * 1e3 << " ms submitting; staging buffers created " << up.created + down.created
        << " (" << (up.create_seconds + down.create_seconds) * 1e3 << " ms), reused "
        << up.reused + down.reused << "\n";
    return out.str();
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
