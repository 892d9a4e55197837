// Injected device faults, for tests (issue 24): makes the n-th Vulkan memory allocation, queue
// submission or compute-pipeline creation fail as a driver would, so that every error path of
// vm_gpu (and of the nn layer's GPU backend, which uses the same device) can be exercised on a
// device that never fails by itself, such as lavapipe.
//
// How: when fault injection is enabled, Device's constructor replaces three entries of its
// logical device's dispatcher (vkAllocateMemory, vkQueueSubmit, vkCreateComputePipelines) by
// wrappers that count the calls and return the armed VkResult instead of calling the driver
// (or the validation layer) on the chosen one. Vulkan-Hpp then throws the vk::SystemError the
// driver's result would have produced, and everything above runs its real error path. A device
// created while injection is disabled keeps the driver's entries: nothing is wrapped in
// production.
//
// Enabling: the environment variable TAPEVM_GPU_FAULT (read when the first device is created)
// or a call to enable_fault_injection() / arm_fault() before the first gpu::Vm or
// nn::Device::gpu() of the process. TAPEVM_GPU_FAULT is a comma-separated list of
// POINT:N[:RESULT] with POINT alloc, submit or pipeline, N >= 1 (the N-th call of the process
// fails) and RESULT oom (VK_ERROR_OUT_OF_DEVICE_MEMORY, the default for alloc), host
// (VK_ERROR_OUT_OF_HOST_MEMORY, the default for pipeline: what drivers return when their shader
// compiler fails) or lost (VK_ERROR_DEVICE_LOST, the default for submit); for example
// TAPEVM_GPU_FAULT=alloc:3,submit:2:lost. Each armed fault fires once.
//
// Thread safety: every function here may be called from any thread; the counters are atomic.
#pragma once

#include <cstdint>
#include <string_view>

#include "vulkan.hpp"

namespace tapevm::gpu::detail {

/// A Vulkan call that fault injection can make fail.
enum class FaultPoint { allocation, submission, pipeline };
constexpr int fault_point_count = 3;

/// The failure an injected fault returns.
enum class FaultResult {
    point_default,         // alloc: out_of_device_memory, submit: device_lost, pipeline: out_of_host_memory
    out_of_device_memory,  // VK_ERROR_OUT_OF_DEVICE_MEMORY
    out_of_host_memory,    // VK_ERROR_OUT_OF_HOST_MEMORY
    device_lost,           // VK_ERROR_DEVICE_LOST
};

/// "alloc", "submit", "pipeline".
std::string_view fault_point_name(FaultPoint point);

/// Devices created from now on get the counting hooks (enabled for the rest of the process).
void enable_fault_injection();
/// Whether devices get the hooks (enable_fault_injection() ran, or TAPEVM_GPU_FAULT is set).
bool fault_injection_enabled();

/// Makes the n-th call at `point` from now on (n >= 1) fail with `result`, once; n = 0 disarms.
/// Enables fault injection.
void arm_fault(FaultPoint point, std::uint64_t n, FaultResult result = FaultResult::point_default);
/// Arms the faults a TAPEVM_GPU_FAULT value names (POINT:N[:RESULT],...; N counts from now),
/// as arm_fault does. Throws tapevm::Error naming the variable when `text` is malformed.
void arm_faults_from(std::string_view text);
/// Disarms every point.
void disarm_faults();
/// Calls at `point` on hooked devices since the process started (sweeps run a call once to
/// count its calls, then fail each in turn).
std::uint64_t fault_point_calls(FaultPoint point);
/// Faults that fired at `point` since the process started.
std::uint64_t faults_fired(FaultPoint point);

/// Reads TAPEVM_GPU_FAULT once (throws tapevm::Error naming it when it is malformed) and, when
/// injection is enabled, wraps `device`'s dispatcher entries; `queue` is the device's queue,
/// whose submissions are counted. Called by Device's constructor before the device is used.
void install_fault_hooks(const vk::raii::Device& device, const vk::raii::Queue& queue);

}  // namespace tapevm::gpu::detail
