// Run-time GLSL -> SPIR-V for the tape compiler: glslang's library (linked statically), with
// `#include` resolved from the GLSL library embedded in the binary (shaders/embed_glsl.py), so
// a compiled kernel includes exactly the ops.glsl, dual_ops.glsl and math library the
// interpreter's kernels were built with.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace tapevm::gpu::detail {

/// Compiles one compute shader (GLSL 450, which may `#include "name"` any embedded file) to
/// SPIR-V for Vulkan 1.2, as glslangValidator -V --target-env vulkan1.2 does. Thread-safe.
/// Throws tapevm::Error with glslang's log when the source does not compile.
std::vector<std::uint32_t> compile_glsl(std::string_view source);

/// Starts glslang's one-time set-up (its built-in symbol tables for compute shaders: 100-250 ms on
/// the H100's host, bench/RESULTS.md) on a background thread, once per process, so that it
/// overlaps the device's creation instead of delaying the first kernel compiled. A compile
/// meanwhile waits for it under glslang's own lock. Never throws.
void warm_up_glsl_compiler() noexcept;

/// The embedded library file `name` ("ops.glsl", "dual_ops.glsl", "math.glsl",
/// "math_f32.glsl", ..., "push_constants.h"), or nothing.
std::optional<std::string_view> embedded_glsl(std::string_view name);

}  // namespace tapevm::gpu::detail
