// Vulkan-Hpp as src/vm_gpu uses it, and only src/vm_gpu: include this instead of
// <vulkan/vulkan.hpp>.
//
// - The loader is opened at run time (vk::DynamicLoader inside vk::raii::Context), so a tapevm
//   program starts on a machine without libvulkan and reports DeviceUnavailable.
// - Every call goes through the dispatchers owned by the vk::raii objects (context, instance,
//   device): there is no global default dispatcher (VULKAN_HPP_NO_DEFAULT_DISPATCHER), so
//   nothing Vulkan-related is visible to, or can clash with, the user's program.
// - Failures throw vk::SystemError subclasses; errors.hpp translates them to tapevm errors.
#pragma once

#define VULKAN_HPP_DISPATCH_LOADER_DYNAMIC 1
#define VULKAN_HPP_NO_DEFAULT_DISPATCHER 1
#define VULKAN_HPP_NO_SPACESHIP_OPERATOR 1
#include <vulkan/vulkan_raii.hpp>
