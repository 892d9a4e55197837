// ops.glsl and the math library of shaders/lib compiled as C++ (converted by glsl_to_cpp.py):
// tapevm::glsl::f64 holds the REAL = double build, tapevm::glsl::f32 the REAL = float one.
#pragma once

#include "glsl_shim.hpp"

namespace tapevm::glsl::f64 {
#define REAL double
#define REAL_IS_DOUBLE 1
#include "ops.glsl.hpp"
#undef REAL
#undef REAL_IS_DOUBLE
}  // namespace tapevm::glsl::f64

namespace tapevm::glsl::f32 {
#define REAL float
#define REAL_IS_DOUBLE 0
#include "ops.glsl.hpp"
#undef REAL
#undef REAL_IS_DOUBLE
}  // namespace tapevm::glsl::f32
