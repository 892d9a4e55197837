// Workaround for a LeakSanitizer report that belongs to Mesa's lavapipe (Debian 12, Mesa 22.3),
// not to tapevm: the driver reallocs 128 bytes per VkInstance and keeps the pointer in its own
// globals; the Vulkan loader unloads the driver at vkDestroyInstance, so at exit LeakSanitizer
// sees memory that no loaded module references ("<unknown module>"). Keeping the driver loaded
// (RTLD_NODELETE) keeps that pointer visible, so LSan reports nothing for it while every other
// leak, tapevm's included, is still reported. Only under AddressSanitizer; called by every test
// main (the CLI and bench suites reach the GPU too); a machine without lavapipe is unaffected.
#pragma once

#if defined(__SANITIZE_ADDRESS__)
#define TAPEVM_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TAPEVM_TEST_ASAN 1
#endif
#endif

#ifdef TAPEVM_TEST_ASAN
#include <dlfcn.h>
#endif

namespace tapevm::test {

inline void keep_vulkan_driver_loaded() {
#ifdef TAPEVM_TEST_ASAN
    // Never closed: the point is to stay loaded until exit.
    (void)dlopen("libvulkan_lvp.so", RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
#endif
}

}  // namespace tapevm::test
