#include "errors.hpp"

#include "tapevm/error.hpp"
#include "vulkan.hpp"

namespace tapevm::gpu::detail {

void rethrow_setup_error(const std::string& what) {
    try {
        throw;
    } catch (const tapevm::Error&) {
        throw;
    } catch (const vk::SystemError& error) {
        throw DeviceUnavailable(what + ": " + error.what());
    } catch (const std::exception& error) {
        throw DeviceUnavailable(what + ": " + error.what());
    }
}

void rethrow_allocation_error(const std::string& what) {
    try {
        throw;
    } catch (const vk::OutOfDeviceMemoryError& error) {
        throw OutOfDeviceMemory(what + ": " + error.what());
    } catch (const vk::OutOfHostMemoryError& error) {
        throw OutOfDeviceMemory(what + ": " + error.what());
    } catch (...) {
        rethrow_work_error(what);
    }
}

void rethrow_work_error(const std::string& what) {
    try {
        throw;
    } catch (const tapevm::Error&) {
        throw;
    } catch (const OutOfDeviceMemory&) {
        throw;
    } catch (const vk::SystemError& error) {
        throw DeviceLost(what + ": " + error.what());
    }
}

}  // namespace tapevm::gpu::detail
