// Translation of Vulkan failures into tapevm's exceptions (tapevm/error.hpp). Called from a
// catch block; rethrows the exception being handled as
//   - OutOfDeviceMemory (internal: the runner retries with smaller chunks) for
//     VK_ERROR_OUT_OF_DEVICE_MEMORY / VK_ERROR_OUT_OF_HOST_MEMORY during allocation,
//   - DeviceLost for VK_ERROR_DEVICE_LOST and any other failure while working,
//   - DeviceUnavailable for any failure while setting a device up,
// each message starting with `what` (the class or step that failed).
#pragma once

#include <stdexcept>
#include <string>

namespace tapevm::gpu::detail {

/// Device memory ran out. Internal: callers catch it to shrink chunks or report clearly.
class OutOfDeviceMemory : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// While setting up (instance, device, pipelines): DeviceUnavailable.
[[noreturn]] void rethrow_setup_error(const std::string& what);
/// While allocating memory: OutOfDeviceMemory for out-of-memory results, else as rethrow_work_error.
[[noreturn]] void rethrow_allocation_error(const std::string& what);
/// While working (recording, submitting, waiting): DeviceLost.
[[noreturn]] void rethrow_work_error(const std::string& what);

}  // namespace tapevm::gpu::detail
