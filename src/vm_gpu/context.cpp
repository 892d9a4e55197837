#include "context.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>
#include <string_view>
#include <utility>
#include <vector>

#include "errors.hpp"
#include "fault_injection.hpp"
#include "tapevm/error.hpp"
#include "tuning.hpp"

namespace tapevm::gpu::detail {
namespace {

constexpr const char* validation_layer = "VK_LAYER_KHRONOS_validation";

// Validation messages, collected by the debug-utils messenger of every instance.
std::mutex messages_mutex;
std::vector<std::string> messages;

VKAPI_ATTR VkBool32 VKAPI_CALL on_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                          VkDebugUtilsMessageTypeFlagsEXT /*types*/,
                                          const VkDebugUtilsMessengerCallbackDataEXT* data, void* /*user*/) {
    const char* level = severity >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT ? "error" : "warning";
    const std::lock_guard lock(messages_mutex);
    messages.push_back(std::string("vulkan ") + level + ": " +
                       (data && data->pMessage ? data->pMessage : "?"));
    return VK_FALSE;
}

bool has_layer(const vk::raii::Context& context, const char* name) {
    for (const auto& layer : context.enumerateInstanceLayerProperties()) {
        if (std::string_view(layer.layerName.data()) == name) return true;
    }
    return false;
}

std::string version_text(std::uint32_t version) {
    return std::to_string(VK_API_VERSION_MAJOR(version)) + "." +
           std::to_string(VK_API_VERSION_MINOR(version)) + "." +
           std::to_string(VK_API_VERSION_PATCH(version));
}

std::string lower(std::string text) {
    std::transform(text.begin(), text.end(), text.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return text;
}

std::string device_list(const std::vector<DeviceInfo>& devices) {
    if (devices.empty()) return "no Vulkan device";
    std::string text;
    for (const auto& device : devices) {
        text += (text.empty() ? "" : ", ") + std::to_string(device.index) + ": " + device.name;
    }
    return text;
}

}  // namespace

bool validation_requested(bool requested) {
    const char* env = std::getenv("TAPEVM_VULKAN_VALIDATION");
    return requested || (env != nullptr && std::string_view(env) == "1");
}

Instance::Instance(bool validation) {
    try {
        context_.emplace();
    } catch (const std::exception& error) {
        throw DeviceUnavailable(std::string("gpu: no Vulkan loader (libvulkan.so.1): ") + error.what());
    }
    try {
        const vk::ApplicationInfo application("tapevm", 1, "tapevm", 1, VK_API_VERSION_1_2);
        std::vector<const char*> layers;
        std::vector<const char*> extensions;
        validation_ = validation && has_layer(*context_, validation_layer);
        if (validation_) {
            layers.push_back(validation_layer);
            extensions.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
        }
        const vk::DebugUtilsMessengerCreateInfoEXT messenger_info(
            {},
            vk::DebugUtilsMessageSeverityFlagBitsEXT::eWarning |
                vk::DebugUtilsMessageSeverityFlagBitsEXT::eError,
            vk::DebugUtilsMessageTypeFlagBitsEXT::eGeneral |
                vk::DebugUtilsMessageTypeFlagBitsEXT::eValidation |
                vk::DebugUtilsMessageTypeFlagBitsEXT::ePerformance,
            &on_message);
        vk::InstanceCreateInfo info({}, &application, layers, extensions);
        if (validation_) info.pNext = &messenger_info;  // also reports on instance creation itself
        instance_ = vk::raii::Instance(*context_, info);
        if (validation_) messenger_ = vk::raii::DebugUtilsMessengerEXT(instance_, messenger_info);
    } catch (...) {
        rethrow_setup_error("gpu: the Vulkan loader found no usable driver (no Vulkan instance)");
    }
}

std::shared_ptr<Instance> Instance::acquire(bool validation) {
    static std::mutex mutex;
    static std::weak_ptr<Instance> instances[2];
    const std::lock_guard lock(mutex);
    auto& weak = instances[validation ? 1 : 0];
    if (auto instance = weak.lock()) return instance;
    auto instance = std::make_shared<Instance>(validation);
    weak = instance;
    return instance;
}

std::vector<vk::raii::PhysicalDevice> Instance::physical_devices() const {
    try {
        return vk::raii::PhysicalDevices(instance_);
    } catch (...) {
        rethrow_setup_error("gpu: cannot enumerate Vulkan devices");
    }
}

FloatControls float_controls(const vk::raii::PhysicalDevice& device) {
    const auto chain =
        device.getProperties2<vk::PhysicalDeviceProperties2, vk::PhysicalDeviceFloatControlsProperties>();
    const auto& properties = chain.get<vk::PhysicalDeviceFloatControlsProperties>();
    FloatControls controls;
    controls.denorm_independence =
        static_cast<FloatControls::Independence>(properties.denormBehaviorIndependence);
    controls.preserve16 = properties.shaderDenormPreserveFloat16 != VK_FALSE;
    controls.preserve32 = properties.shaderDenormPreserveFloat32 != VK_FALSE;
    controls.preserve64 = properties.shaderDenormPreserveFloat64 != VK_FALSE;
    controls.inf_nan32 = properties.shaderSignedZeroInfNanPreserveFloat32 != VK_FALSE;
    controls.inf_nan64 = properties.shaderSignedZeroInfNanPreserveFloat64 != VK_FALSE;
    return controls;
}

DeviceInfo describe(const vk::raii::PhysicalDevice& device, std::size_t index) {
    const auto chain =
        device.getProperties2<vk::PhysicalDeviceProperties2, vk::PhysicalDeviceSubgroupProperties,
                              vk::PhysicalDeviceDriverProperties>();
    const auto& properties = chain.get<vk::PhysicalDeviceProperties2>().properties;
    const auto& driver = chain.get<vk::PhysicalDeviceDriverProperties>();
    DeviceInfo info;
    info.index = index;
    info.name = properties.deviceName.data();
    switch (properties.deviceType) {
        case vk::PhysicalDeviceType::eDiscreteGpu: info.type = "discrete"; break;
        case vk::PhysicalDeviceType::eIntegratedGpu: info.type = "integrated"; break;
        case vk::PhysicalDeviceType::eVirtualGpu: info.type = "virtual"; break;
        case vk::PhysicalDeviceType::eCpu: info.type = "cpu"; break;
        default: info.type = "other"; break;
    }
    const auto memory = device.getMemoryProperties();
    for (std::uint32_t h = 0; h < memory.memoryHeapCount; ++h) {
        if (memory.memoryHeaps[h].flags & vk::MemoryHeapFlagBits::eDeviceLocal)
            info.memory_bytes = std::max<std::uint64_t>(info.memory_bytes, memory.memoryHeaps[h].size);
    }
    info.float64 = device.getFeatures().shaderFloat64 != VK_FALSE;
    const FloatControls controls = float_controls(device);
    info.subnormals_float = preserves(denorm_preserve_widths(controls, false), 32);
    info.subnormals_double = info.float64 && preserves(denorm_preserve_widths(controls, true), 64);
    info.max_storage_buffer_range = properties.limits.maxStorageBufferRange;
    info.max_workgroup_count_x = properties.limits.maxComputeWorkGroupCount[0];
    info.max_workgroup_size_x = properties.limits.maxComputeWorkGroupSize[0];
    info.max_shared_memory_bytes = properties.limits.maxComputeSharedMemorySize;
    const auto& subgroups = chain.get<vk::PhysicalDeviceSubgroupProperties>();
    info.subgroup_size = subgroups.subgroupSize;
    info.subgroup_shuffle = (subgroups.supportedOperations & vk::SubgroupFeatureFlagBits::eShuffle) &&
                            (subgroups.supportedStages & vk::ShaderStageFlagBits::eCompute);
    info.driver = std::string(driver.driverName.data()) + " " + driver.driverInfo.data();
    info.api_version = version_text(properties.apiVersion);
    return info;
}

std::size_t select_device(const std::vector<DeviceInfo>& devices, const std::string& selector) {
    if (devices.empty()) throw DeviceUnavailable("gpu: the Vulkan loader found no device");
    if (selector.empty()) {
        for (const auto& device : devices) {
            if (device.type == "discrete") return device.index;
        }
        return devices.front().index;
    }
    if (std::all_of(selector.begin(), selector.end(), [](unsigned char c) { return std::isdigit(c); })) {
        const auto index = selector.size() < 10 ? std::stoul(selector) : devices.size();
        if (index < devices.size()) return index;
        throw DeviceUnavailable("gpu: no Vulkan device number " + selector +
                                " (devices: " + device_list(devices) + ")");
    }
    for (const auto& device : devices) {
        if (lower(device.name).find(lower(selector)) != std::string::npos) return device.index;
    }
    throw DeviceUnavailable("gpu: no Vulkan device named like '" + selector +
                            "' (devices: " + device_list(devices) + ")");
}

std::shared_ptr<Device> Device::acquire(const Options& options) {
    const bool validation = validation_requested(options.validation);
    auto instance = Instance::acquire(validation);
    auto physical = instance->physical_devices();
    std::vector<DeviceInfo> infos;
    for (std::size_t i = 0; i < physical.size(); ++i) infos.push_back(describe(physical[i], i));
    std::string selector = options.device;
    if (selector.empty()) {
        const char* env = std::getenv("TAPEVM_DEVICE");
        if (env != nullptr) selector = env;
    }
    const std::size_t index = select_device(infos, selector);

    // Devices stay open until the program exits, so that the Vms of a program share one
    // device and its compiled pipelines (lavapipe takes seconds to compile a kernel). The map
    // is created after the instance (and the Vulkan loader it opened), so it is destroyed
    // before them at exit. A lost device is replaced by a new one for later Vms.
    static std::mutex mutex;
    const std::lock_guard lock(mutex);
    static std::map<std::pair<std::size_t, bool>, std::shared_ptr<Device>> open_devices;
    auto& device = open_devices[{index, instance->validation()}];
    if (!device || device->lost()) device = std::make_shared<Device>(instance, physical[index], infos[index]);
    return device;
}

Device::Device(std::shared_ptr<Instance> instance, const vk::raii::PhysicalDevice& physical, DeviceInfo info)
    : instance_(std::move(instance)), info_(std::move(info)) {
    const std::string what =
        "gpu: cannot use device " + std::to_string(info_.index) + " (" + info_.name + ")";
    try {
        const auto properties = physical.getProperties();
        if (properties.apiVersion < VK_API_VERSION_1_2)
            throw DeviceUnavailable(what + ": it offers Vulkan " + info_.api_version + ", tapevm needs 1.2");
        limits_ = properties.limits;
        memory_ = physical.getMemoryProperties();
        const auto chain =
            physical
                .getProperties2<vk::PhysicalDeviceProperties2, vk::PhysicalDeviceMaintenance3Properties>();
        max_allocation_bytes_ = chain.get<vk::PhysicalDeviceMaintenance3Properties>().maxMemoryAllocationSize;

        const auto families = physical.getQueueFamilyProperties();
        bool found = false;
        for (std::uint32_t f = 0; f < families.size() && !found; ++f) {
            if (families[f].queueFlags & vk::QueueFlagBits::eCompute) {
                queue_family_ = f;
                timestamp_bits_ = families[f].timestampValidBits;
                found = true;
            }
        }
        if (!found) throw DeviceUnavailable(what + ": it has no compute queue");

        const auto supported = physical.getFeatures();
        vk::PhysicalDeviceFeatures features;
        features.shaderFloat64 = supported.shaderFloat64;
        features.shaderInt64 = supported.shaderInt64;
        features.shaderInt16 = supported.shaderInt16;
        const float priority = 1.0f;
        const vk::DeviceQueueCreateInfo queue_info({}, queue_family_, 1, &priority);
        // Pipeline statistics (tuning.hpp: TAPEVM_GPU_PIPELINE_STATS) where the driver has them;
        // pipeline creation feedback (did a compiled kernel's pipeline come from its pipeline
        // cache: CompilePlan) wherever the driver has it.
        // Shader module identifiers (tuning.hpp: TAPEVM_GPU_MODULE_IDENTIFIERS) where offered.
        bool statistics = false, feedback = false, identifiers = false, cache_control = false;
        for (const auto& extension : physical.enumerateDeviceExtensionProperties(nullptr)) {
            const std::string_view name(extension.extensionName.data());
            statistics = statistics || name == VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME;
            feedback = feedback || name == VK_EXT_PIPELINE_CREATION_FEEDBACK_EXTENSION_NAME;
            identifiers = identifiers || name == VK_EXT_SHADER_MODULE_IDENTIFIER_EXTENSION_NAME;
            cache_control = cache_control || name == VK_EXT_PIPELINE_CREATION_CACHE_CONTROL_EXTENSION_NAME;
            compute_features_.cooperative_matrix =
                compute_features_.cooperative_matrix || name == VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME;
        }
        if (tuning().pipeline_stats && !statistics)
            std::cerr << "gpu: " << info_.name << " offers no pipeline statistics\n";
        statistics = statistics && tuning().pipeline_stats;
        KernelsFeatures kernel_features{statistics, feedback, {}};
        if (identifiers && cache_control && tuning().module_identifiers)
            kernel_features.identifier_algorithm = module_identifier_algorithm(physical);
        const bool with_identifiers = !kernel_features.identifier_algorithm.empty();
        std::vector<const char*> extensions;
        if (statistics) extensions.push_back(VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME);
        if (feedback) extensions.push_back(VK_EXT_PIPELINE_CREATION_FEEDBACK_EXTENSION_NAME);
        if (with_identifiers) {
            extensions.push_back(VK_EXT_PIPELINE_CREATION_CACHE_CONTROL_EXTENSION_NAME);
            extensions.push_back(VK_EXT_SHADER_MODULE_IDENTIFIER_EXTENSION_NAME);
        }
        vk::PhysicalDevicePipelineExecutablePropertiesFeaturesKHR statistics_feature(VK_TRUE);
        vk::PhysicalDevicePipelineCreationCacheControlFeatures cache_control_feature(VK_TRUE);
        vk::PhysicalDeviceShaderModuleIdentifierFeaturesEXT identifier_feature(VK_TRUE);
        // The nn layer's shader features (ComputeFeatures): 16-bit storage, float16 arithmetic
        // and NV cooperative matrices, each where offered.
        const auto offered =
            physical.getFeatures2<vk::PhysicalDeviceFeatures2, vk::PhysicalDeviceVulkan11Features,
                                  vk::PhysicalDeviceVulkan12Features>();
        vk::PhysicalDeviceVulkan11Features features11;
        features11.storageBuffer16BitAccess =
            offered.get<vk::PhysicalDeviceVulkan11Features>().storageBuffer16BitAccess;
        vk::PhysicalDeviceVulkan12Features features12;
        features12.shaderFloat16 = offered.get<vk::PhysicalDeviceVulkan12Features>().shaderFloat16;
        compute_features_.storage16 = features11.storageBuffer16BitAccess != VK_FALSE;
        compute_features_.float16 = features12.shaderFloat16 != VK_FALSE;
        compute_features_.int16 = supported.shaderInt16 != VK_FALSE;
        vk::PhysicalDeviceCooperativeMatrixFeaturesNV cooperative_feature;
        if (compute_features_.cooperative_matrix) {
            const auto cooperative = physical.getFeatures2<vk::PhysicalDeviceFeatures2,
                                                           vk::PhysicalDeviceCooperativeMatrixFeaturesNV>();
            compute_features_.cooperative_matrix =
                cooperative.get<vk::PhysicalDeviceCooperativeMatrixFeaturesNV>().cooperativeMatrix !=
                    VK_FALSE &&
                compute_features_.float16 && compute_features_.storage16;
        }
        if (compute_features_.cooperative_matrix) {
            extensions.push_back(VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME);
            cooperative_feature.cooperativeMatrix = VK_TRUE;
            for (const auto& shape : physical.getCooperativeMatrixPropertiesNV()) {
                if (shape.AType == vk::ComponentTypeNV::eFloat16 &&
                    shape.BType == vk::ComponentTypeNV::eFloat16 &&
                    shape.CType == vk::ComponentTypeNV::eFloat32 &&
                    shape.DType == vk::ComponentTypeNV::eFloat32 && shape.scope == vk::ScopeNV::eSubgroup)
                    compute_features_.cooperative_f16_f32_shapes.push_back(
                        {shape.MSize, shape.NSize, shape.KSize});
            }
        }
        vk::DeviceCreateInfo device_info({}, queue_info, {}, extensions, &features);
        void* next = nullptr;
        if (compute_features_.cooperative_matrix) {
            cooperative_feature.pNext = next;
            next = &cooperative_feature;
        }
        features11.pNext = next;
        features12.pNext = &features11;
        next = &features12;
        if (statistics) {
            statistics_feature.pNext = next;
            next = &statistics_feature;
        }
        if (with_identifiers) {
            cache_control_feature.pNext = next;
            identifier_feature.pNext = &cache_control_feature;
            next = &identifier_feature;
        }
        device_info.pNext = next;
        device_ = vk::raii::Device(physical, device_info);
        queue_ = device_.getQueue(queue_family_, 0);
        install_fault_hooks(device_, queue_);  // tests only (fault_injection.hpp)
        float_controls_ = tapevm::gpu::detail::float_controls(physical);
        kernels_ = std::make_unique<Kernels>(device_, info_.float64, float_controls_, kernel_features,
                                             pipeline_cache_key(physical.getProperties()));
    } catch (...) {
        rethrow_setup_error(what);
    }
}

std::string module_identifier_algorithm(const vk::raii::PhysicalDevice& physical) {
    const auto features =
        physical
            .getFeatures2<vk::PhysicalDeviceFeatures2, vk::PhysicalDeviceShaderModuleIdentifierFeaturesEXT,
                          vk::PhysicalDevicePipelineCreationCacheControlFeatures>();
    if (!features.get<vk::PhysicalDeviceShaderModuleIdentifierFeaturesEXT>().shaderModuleIdentifier ||
        !features.get<vk::PhysicalDevicePipelineCreationCacheControlFeatures>().pipelineCreationCacheControl)
        return {};
    const auto properties = physical.getProperties2<vk::PhysicalDeviceProperties2,
                                                    vk::PhysicalDeviceShaderModuleIdentifierPropertiesEXT>();
    std::string algorithm;
    char text[4];
    for (const std::uint8_t byte : properties.get<vk::PhysicalDeviceShaderModuleIdentifierPropertiesEXT>()
                                       .shaderModuleIdentifierAlgorithmUUID) {
        std::snprintf(text, sizeof text, "%02x", byte);
        algorithm += text;
    }
    return algorithm;
}

std::string pipeline_cache_key(const vk::PhysicalDeviceProperties& properties) {
    char text[64];
    std::snprintf(text, sizeof text, "%04x-%04x-%08x-", properties.vendorID, properties.deviceID,
                  properties.driverVersion);
    std::string key = text;
    for (const std::uint8_t byte : properties.pipelineCacheUUID) {
        std::snprintf(text, sizeof text, "%02x", byte);
        key += text;
    }
    return key;
}

Device::~Device() {
    try {
        if (*device_) device_.waitIdle();
    } catch (...) {  // a lost device: nothing left to wait for
    }
}

std::uint32_t Device::memory_type(std::uint32_t type_bits, vk::MemoryPropertyFlags required,
                                  vk::MemoryPropertyFlags preferred) const {
    for (const bool strict : {true, false}) {
        const auto wanted = strict ? required | preferred : required;
        for (std::uint32_t t = 0; t < memory_.memoryTypeCount; ++t) {
            if ((type_bits & (1u << t)) && (memory_.memoryTypes[t].propertyFlags & wanted) == wanted)
                return t;
        }
    }
    throw OutOfDeviceMemory("gpu: no memory type with the properties a buffer needs");
}

void Device::mark_lost(const std::string& reason) {
    const std::lock_guard lock(lost_mutex_);
    if (lost_.empty()) lost_ = reason;
}

bool Device::lost() const {
    const std::lock_guard lock(lost_mutex_);
    return !lost_.empty();
}

void Device::check_alive() const {
    const std::lock_guard lock(lost_mutex_);
    if (!lost_.empty()) throw DeviceLost("gpu: the device was lost earlier (" + lost_ + ")");
}

}  // namespace tapevm::gpu::detail

namespace tapevm::gpu {

std::vector<std::string> validation_messages() {
    const std::lock_guard lock(detail::messages_mutex);
    return std::exchange(detail::messages, {});
}

}  // namespace tapevm::gpu
