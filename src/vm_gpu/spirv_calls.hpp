// The tape compiler's kernels call the GLSL math library's functions (tv_sin, tv_exp, ...),
// which drivers inline at every call site: a kernel of 32 tanh carries 32 copies, which is most
// of its compile time. This marks those functions DontInline (SPIR-V FunctionControl), so a
// driver that honours it compiles each once and calls it (TAPEVM_GPU_COMPILE_CALLS=1, for A/B
// runs: drivers may ignore the hint, and calls cost registers and time at run time).
//
// Free of Vulkan types, so it is tested on its own (tests/gpu/test_gpu_compiler.cpp).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace tapevm::gpu::detail {

/// True for the math library's functions worth calling rather than inlining (by their GLSL
/// name: tv_sincos, tv_exp, tv_tanh, ...).
bool is_called_library_function(std::string_view name);

/// `spirv` with FunctionControl DontInline on every function whose OpName (glslang's mangled
/// "name(args;" form) names such a function; the number marked in `marked`.
std::vector<std::uint32_t> with_library_calls(std::span<const std::uint32_t> spirv, std::size_t& marked);

}  // namespace tapevm::gpu::detail
