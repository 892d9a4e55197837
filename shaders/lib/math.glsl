// The math policy of ops.glsl for REAL (float or double): every primitive the op table's
// formulas call (tv_sin, tv_pow, tv_select, tv_isnan, ...) with the semantics of the C++
// reference VM's policy, src/tape/detail/math_scalar.hpp (the std:: functions), on signed
// zeros, infinities, NaN and out-of-domain inputs. Include after `#define REAL float|double`
// and `#define REAL_IS_DOUBLE 0|1`.
//
// The precision files are written in a subset of GLSL that tests/gpu_math also compiles as
// C++ (see README.md), so every function is tested against std:: on millions of inputs.
#ifndef REAL_IS_DOUBLE
#error "define REAL_IS_DOUBLE (0 or 1) and REAL (float or double) before including math.glsl"
#endif

#if REAL_IS_DOUBLE
#include "math_f64.glsl"
REAL tv_nan() { return tv_nan_f64(); }
REAL tv_inf() { return tv_inf_f64(); }
#else
#include "math_f32.glsl"
REAL tv_nan() { return tv_nan_f32(); }
REAL tv_inf() { return tv_inf_f32(); }
#endif
