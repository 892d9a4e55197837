#include "fault_injection.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#include "tapevm/error.hpp"

namespace tapevm::gpu::detail {
namespace {

struct PointState {
    std::atomic<std::uint64_t> calls{0};
    std::atomic<std::uint64_t> target{0};  // the call number that fails; 0: disarmed
    std::atomic<FaultResult> result{FaultResult::point_default};
    std::atomic<std::uint64_t> fired{0};
};

std::array<PointState, fault_point_count> points;
std::atomic<bool> enabled{false};

PointState& state(FaultPoint point) { return points[static_cast<std::size_t>(point)]; }

VkResult vk_result(FaultPoint point, FaultResult result) {
    switch (result) {
        case FaultResult::out_of_device_memory: return VK_ERROR_OUT_OF_DEVICE_MEMORY;
        case FaultResult::out_of_host_memory: return VK_ERROR_OUT_OF_HOST_MEMORY;
        case FaultResult::device_lost: return VK_ERROR_DEVICE_LOST;
        case FaultResult::point_default: break;
    }
    switch (point) {
        case FaultPoint::allocation: return VK_ERROR_OUT_OF_DEVICE_MEMORY;
        case FaultPoint::submission: return VK_ERROR_DEVICE_LOST;
        case FaultPoint::pipeline: return VK_ERROR_OUT_OF_HOST_MEMORY;
    }
    return VK_ERROR_UNKNOWN;
}

// Counts a call at `point`; the armed result when this call is the one to fail, else VK_SUCCESS.
VkResult take(FaultPoint point) {
    PointState& s = state(point);
    const std::uint64_t call = s.calls.fetch_add(1) + 1;
    std::uint64_t target = s.target.load();
    if (target == 0 || call != target || !s.target.compare_exchange_strong(target, 0)) return VK_SUCCESS;
    s.fired.fetch_add(1);
    return vk_result(point, s.result.load());
}

// The driver's (or the layers') entries behind the wrappers, per device and queue. Handles of
// destroyed devices may come back for new ones: a registration replaces an older one.
struct RealDevice {
    VkDevice device;
    PFN_vkAllocateMemory allocate_memory;
    PFN_vkCreateComputePipelines create_compute_pipelines;
};
struct RealQueue {
    VkQueue queue;
    PFN_vkQueueSubmit queue_submit;
};
std::mutex real_mutex;
std::vector<RealDevice> real_devices;
std::vector<RealQueue> real_queues;

RealDevice real_device(VkDevice device) {
    const std::lock_guard lock(real_mutex);
    for (const RealDevice& real : real_devices)
        if (real.device == device) return real;
    std::abort();  // a hooked entry called for a device that was never hooked
}

PFN_vkQueueSubmit real_submit(VkQueue queue) {
    const std::lock_guard lock(real_mutex);
    for (const RealQueue& real : real_queues)
        if (real.queue == queue) return real.queue_submit;
    std::abort();
}

VKAPI_ATTR VkResult VKAPI_CALL allocate_memory(VkDevice device, const VkMemoryAllocateInfo* info,
                                               const VkAllocationCallbacks* allocator,
                                               VkDeviceMemory* memory) {
    if (const VkResult fault = take(FaultPoint::allocation); fault != VK_SUCCESS) {
        *memory = VK_NULL_HANDLE;
        return fault;
    }
    return real_device(device).allocate_memory(device, info, allocator, memory);
}

VKAPI_ATTR VkResult VKAPI_CALL queue_submit(VkQueue queue, std::uint32_t count, const VkSubmitInfo* submits,
                                            VkFence fence) {
    if (const VkResult fault = take(FaultPoint::submission); fault != VK_SUCCESS) return fault;
    return real_submit(queue)(queue, count, submits, fence);
}

VKAPI_ATTR VkResult VKAPI_CALL create_compute_pipelines(VkDevice device, VkPipelineCache cache,
                                                        std::uint32_t count,
                                                        const VkComputePipelineCreateInfo* infos,
                                                        const VkAllocationCallbacks* allocator,
                                                        VkPipeline* pipelines) {
    if (const VkResult fault = take(FaultPoint::pipeline); fault != VK_SUCCESS) {
        for (std::uint32_t i = 0; i < count; ++i) pipelines[i] = VK_NULL_HANDLE;
        return fault;
    }
    return real_device(device).create_compute_pipelines(device, cache, count, infos, allocator, pipelines);
}

[[noreturn]] void bad_variable(const std::string& text, const std::string& why) {
    throw Error("TAPEVM_GPU_FAULT: '" + text + "': " + why +
                " (expected a comma-separated list of POINT:N[:RESULT], POINT alloc, submit or pipeline, "
                "N >= 1, RESULT oom, host or lost)");
}

// Arms what TAPEVM_GPU_FAULT asks for, once per process; throws on a malformed value.
void read_environment() {
    static std::once_flag once;
    std::call_once(once, [] {
        const char* variable = std::getenv("TAPEVM_GPU_FAULT");
        if (variable != nullptr && *variable != '\0') arm_faults_from(variable);
    });
}

}  // namespace

std::string_view fault_point_name(FaultPoint point) {
    switch (point) {
        case FaultPoint::allocation: return "alloc";
        case FaultPoint::submission: return "submit";
        case FaultPoint::pipeline: return "pipeline";
    }
    return "?";
}

void enable_fault_injection() { enabled.store(true); }

bool fault_injection_enabled() {
    read_environment();
    return enabled.load();
}

void arm_fault(FaultPoint point, std::uint64_t n, FaultResult result) {
    enable_fault_injection();
    PointState& s = state(point);
    s.target.store(0);
    s.result.store(result);
    if (n != 0) s.target.store(s.calls.load() + n);
}

void arm_faults_from(std::string_view text_view) {
    const std::string text(text_view);
    std::size_t begin = 0;
    while (begin <= text.size()) {
        const std::size_t end = std::min(text.find(',', begin), text.size());
        const std::string item = text.substr(begin, end - begin);
        const std::size_t colon = item.find(':');
        if (colon == std::string::npos) bad_variable(text, "'" + item + "' has no ':N'");
        const std::string name = item.substr(0, colon);
        FaultPoint point;
        if (name == "alloc") {
            point = FaultPoint::allocation;
        } else if (name == "submit") {
            point = FaultPoint::submission;
        } else if (name == "pipeline") {
            point = FaultPoint::pipeline;
        } else {
            bad_variable(text, "unknown point '" + name + "'");
        }
        const std::size_t second = item.find(':', colon + 1);
        const std::string number =
            item.substr(colon + 1, second == std::string::npos ? std::string::npos : second - colon - 1);
        char* number_end = nullptr;
        const unsigned long long n = std::strtoull(number.c_str(), &number_end, 10);
        if (number.empty() || *number_end != '\0' || number[0] == '-' || n == 0)
            bad_variable(text, "'" + number + "' is not a call number >= 1");
        FaultResult result = FaultResult::point_default;
        if (second != std::string::npos) {
            const std::string kind = item.substr(second + 1);
            if (kind == "oom") {
                result = FaultResult::out_of_device_memory;
            } else if (kind == "host") {
                result = FaultResult::out_of_host_memory;
            } else if (kind == "lost") {
                result = FaultResult::device_lost;
            } else {
                bad_variable(text, "unknown result '" + kind + "'");
            }
        }
        arm_fault(point, n, result);
        begin = end + 1;
    }
}

void disarm_faults() {
    for (PointState& s : points) s.target.store(0);
}

std::uint64_t fault_point_calls(FaultPoint point) { return state(point).calls.load(); }
std::uint64_t faults_fired(FaultPoint point) { return state(point).fired.load(); }

void install_fault_hooks(const vk::raii::Device& device, const vk::raii::Queue& queue) {
    if (!fault_injection_enabled()) return;
    // The dispatcher is owned by `device` (heap-allocated, not const) and not yet used by any
    // other thread: the device is still being constructed.
    auto& dispatcher = const_cast<vk::raii::DeviceDispatcher&>(*device.getDispatcher());
    const auto handle = static_cast<VkDevice>(*device);
    const auto queue_handle = static_cast<VkQueue>(*queue);
    {
        const std::lock_guard lock(real_mutex);
        std::erase_if(real_devices, [&](const RealDevice& real) { return real.device == handle; });
        std::erase_if(real_queues, [&](const RealQueue& real) { return real.queue == queue_handle; });
        real_devices.push_back({handle, dispatcher.vkAllocateMemory, dispatcher.vkCreateComputePipelines});
        real_queues.push_back({queue_handle, dispatcher.vkQueueSubmit});
    }
    dispatcher.vkAllocateMemory = &allocate_memory;
    dispatcher.vkCreateComputePipelines = &create_compute_pipelines;
    dispatcher.vkQueueSubmit = &queue_submit;
}

}  // namespace tapevm::gpu::detail
