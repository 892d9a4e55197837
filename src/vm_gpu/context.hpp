// The Vulkan instance and logical devices, shared by every Vm of the process.
//
// Instance: one per validation setting, created on first use and destroyed with the last
// Device or devices() call that holds it. Device: one logical device (one compute queue) per
// physical device and validation setting, shared by the Vms on it and open until the program
// exits (its pipelines are compiled once); its mutex serializes all work on it (queue
// submissions, pipeline creation, the Vms' chunk buffers).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "float_controls.hpp"
#include "kernels.hpp"
#include "memory.hpp"
#include "tapevm/gpu.hpp"
#include "vulkan.hpp"

namespace tapevm::gpu::detail {

class Instance {
public:
    /// Throws DeviceUnavailable when the loader or an instance is missing.
    static std::shared_ptr<Instance> acquire(bool validation);
    Instance(bool validation);  // use acquire()

    const vk::raii::Instance& instance() const { return instance_; }
    bool validation() const { return validation_; }
    std::vector<vk::raii::PhysicalDevice> physical_devices() const;

private:
    std::optional<vk::raii::Context> context_;  // opens the loader
    vk::raii::Instance instance_{nullptr};
    vk::raii::DebugUtilsMessengerEXT messenger_{nullptr};
    bool validation_ = false;
};

/// The device's float controls (what decides the kernels' DenormPreserve modes).
FloatControls float_controls(const vk::raii::PhysicalDevice& device);

/// What a physical device offers, in the public form.
DeviceInfo describe(const vk::raii::PhysicalDevice& device, std::size_t index);

/// The device `selector` names among `devices` ("" = first discrete, else first): an index or
/// a case-insensitive name substring. Throws DeviceUnavailable naming the selector and the
/// devices there are.
std::size_t select_device(const std::vector<DeviceInfo>& devices, const std::string& selector);

/// Names the device and its driver version for the on-disk pipeline cache:
/// vendor-device-driverVersion-pipelineCacheUUID in hex.
std::string pipeline_cache_key(const vk::PhysicalDeviceProperties& properties);
/// The device's shader module identifier algorithm (its UUID in hex) where it offers module
/// identifiers and pipeline creation cache control, else "".
std::string module_identifier_algorithm(const vk::raii::PhysicalDevice& physical);

/// Optional shader features enabled on a device where it offers them, for the nn layer's
/// kernels (src/nn/gpu): 16-bit storage buffers (f16/bf16 tensors), float16 arithmetic and
/// VK_NV_cooperative_matrix (tensor cores) with the f16 x f16 -> f32 subgroup shapes it lists.
struct ComputeFeatures {
    bool storage16 = false;           // storageBuffer16BitAccess (uint16_t / float16_t in storage buffers)
    bool float16 = false;             // shaderFloat16
    bool int16 = false;               // shaderInt16
    bool cooperative_matrix = false;  // VK_NV_cooperative_matrix enabled
    /// {M, N, K} of the f16 A/B, f32 C/D subgroup-scope shapes the device lists.
    std::vector<std::array<std::uint32_t, 3>> cooperative_f16_f32_shapes;
};

/// True when TAPEVM_VULKAN_VALIDATION=1 (or `requested`).
bool validation_requested(bool requested);

class Device {
public:
    /// The device `options` select (Options::device, else TAPEVM_DEVICE, else the default).
    static std::shared_ptr<Device> acquire(const Options& options);
    Device(std::shared_ptr<Instance> instance, const vk::raii::PhysicalDevice& physical, DeviceInfo info);
    ~Device();

    const DeviceInfo& info() const { return info_; }
    const vk::raii::Device& device() const { return device_; }
    const vk::raii::Queue& queue() const { return queue_; }
    std::uint32_t queue_family() const { return queue_family_; }
    bool validation() const { return instance_->validation(); }
    const vk::PhysicalDeviceLimits& limits() const { return limits_; }
    std::uint64_t max_allocation_bytes() const { return max_allocation_bytes_; }
    /// The device's float controls (float_controls.hpp: the DenormPreserve patch's widths).
    const FloatControls& float_controls() const { return float_controls_; }
    /// The optional shader features enabled on this device.
    const ComputeFeatures& compute_features() const { return compute_features_; }
    /// Bits of a timestamp on the compute queue; 0 = no timestamps.
    std::uint32_t timestamp_bits() const { return timestamp_bits_; }
    /// A memory type index with `required` flags, preferring `preferred` too. Throws
    /// OutOfDeviceMemory when none fits `type_bits`.
    std::uint32_t memory_type(std::uint32_t type_bits, vk::MemoryPropertyFlags required,
                              vk::MemoryPropertyFlags preferred) const;

    /// The bytes its buffers hold (and a test limit).
    MemoryLedger& ledger() const { return ledger_; }

    /// Serializes every use of the device.
    std::mutex& mutex() { return mutex_; }
    Kernels& kernels() { return *kernels_; }

    /// After VK_ERROR_DEVICE_LOST: every later call throws DeviceLost with `reason`.
    void mark_lost(const std::string& reason);
    /// Throws DeviceLost when the device was lost earlier.
    void check_alive() const;
    bool lost() const;

private:
    std::shared_ptr<Instance> instance_;
    DeviceInfo info_;
    vk::PhysicalDeviceLimits limits_;
    vk::PhysicalDeviceMemoryProperties memory_;
    std::uint64_t max_allocation_bytes_ = 0;
    std::uint32_t queue_family_ = 0;
    std::uint32_t timestamp_bits_ = 0;
    ComputeFeatures compute_features_;
    FloatControls float_controls_;
    vk::raii::Device device_{nullptr};
    vk::raii::Queue queue_{nullptr};
    std::unique_ptr<Kernels> kernels_;
    std::mutex mutex_;
    mutable MemoryLedger ledger_;
    mutable std::mutex lost_mutex_;
    std::string lost_;
};

}  // namespace tapevm::gpu::detail
