// Subnormal numbers in the kernels: which widths the kernels ask the driver to preserve
// (SPIR-V execution mode DenormPreserve), chosen from the device's float-controls properties
// (VkPhysicalDeviceFloatControlsProperties, Vulkan 1.2), and the SPIR-V patch that asks.
//
// Without DenormPreserve a driver may flush subnormal inputs and results of float operations
// to zero (NVIDIA does for float; the reference VM never does). The embedded SPIR-V carries
// no float-controls mode; at pipeline creation the widths this device can preserve are added
// to the module. Where a device cannot preserve a width (lavapipe reports that it cannot,
// although it does not flush), subnormals of that width may flush: DeviceInfo says so.
//
// Free of Vulkan types, so it is tested on its own (tests/gpu/test_gpu_float_controls.cpp).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace tapevm::gpu::detail {

/// The part of VkPhysicalDeviceFloatControlsProperties that decides DenormPreserve.
struct FloatControls {
    /// VkShaderFloatControlsIndependence, same numbering.
    enum class Independence : std::uint32_t { only_32_bit = 0, all = 1, none = 2 };
    Independence denorm_independence = Independence::none;
    bool preserve16 = false;  // shaderDenormPreserveFloat16
    bool preserve32 = false;
    bool preserve64 = false;
    /// shaderSignedZeroInfNanPreserveFloat32/64: without the mode, a driver may assume that no
    /// value is NaN, infinite or a negative zero (and fold x * 0 to 0, or p == 0 ? 0 : p * s to
    /// p * s): NVIDIA's compiler does in straight-line code (the tape compiler's kernels gave inf
    /// where the reference gives NaN).
    bool inf_nan32 = false;
    bool inf_nan64 = false;
};

/// Bit widths (16, 32, 64) a kernel of that precision requests DenormPreserve for on a
/// device with `controls`: the widths it computes in (32; 32 and 64 for double) that the
/// device can preserve, within the independence rules (VUID-RuntimeSpirv-denormBehavior
/// Independence-06289/06290: with 32_BIT_ONLY the 16- and 64-bit modes must be equal, with
/// NONE all three). Sorted, no duplicates; empty when nothing can be requested.
std::vector<std::uint32_t> denorm_preserve_widths(const FloatControls& controls, bool double_precision);

/// True when `widths` holds `width`.
bool preserves(const std::vector<std::uint32_t>& widths, std::uint32_t width);

/// `spirv` (one module, one entry point) with OpCapability DenormPreserve, the extension
/// SPV_KHR_float_controls where the module's SPIR-V version predates 1.4, and one
/// OpExecutionMode <entry> DenormPreserve <width> per width, each only when not already
/// there. `widths` empty: the module unchanged. Throws std::invalid_argument when `spirv`
/// is not a well-formed module with an entry point.
std::vector<std::uint32_t> with_denorm_preserve(std::span<const std::uint32_t> spirv,
                                                const std::vector<std::uint32_t>& widths);

/// Bit widths (32; 32 and 64 for double) a kernel requests SignedZeroInfNanPreserve for on a
/// device with `controls` (no independence rules apply to this mode).
std::vector<std::uint32_t> inf_nan_preserve_widths(const FloatControls& controls, bool double_precision);

/// The same patch as with_denorm_preserve with OpCapability SignedZeroInfNanPreserve and
/// OpExecutionMode SignedZeroInfNanPreserve <width>.
std::vector<std::uint32_t> with_inf_nan_preserve(std::span<const std::uint32_t> spirv,
                                                 const std::vector<std::uint32_t>& widths);

}  // namespace tapevm::gpu::detail
