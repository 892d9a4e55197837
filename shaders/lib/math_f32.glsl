// The single-precision math policy. GLSL has float transcendentals, but their precision is
// loose in Vulkan (and NVIDIA's are fast approximations) and their results are undefined on
// many edge cases (atan(0, 0), pow with x <= 0, log of negatives, overflow of sinh/cosh/tanh,
// asinh/acosh/atanh at the domain ends, inf arguments to sin/cos/tan). Here the builtins do
// the core work and every edge case is decided explicitly with the semantics of std:: (the
// reference VM); the functions std:: gets from cancellation-prone formulas (expm1, log1p,
// the hyperbolics) are computed in the stable forms.
//
// Written in the GLSL subset that tests/gpu_math also compiles as C++ (README.md).

// ---- bits -------------------------------------------------------------------------------
float tv_nan_f32() { return uintBitsToFloat(0x7fc00000u); }
float tv_inf_f32() { return uintBitsToFloat(0x7f800000u); }
bool tv_isnan(float x) { return (floatBitsToUint(x) & 0x7fffffffu) > 0x7f800000u; }
bool tv_isinf(float x) { return (floatBitsToUint(x) & 0x7fffffffu) == 0x7f800000u; }
bool tv_isfinite(float x) { return (floatBitsToUint(x) & 0x7fffffffu) < 0x7f800000u; }
bool tv_signbit(float x) { return (floatBitsToUint(x) >> 31) != 0u; }
float tv_abs(float x) { return uintBitsToFloat(floatBitsToUint(x) & 0x7fffffffu); }
float tv_copysign(float x, float s) {
    return uintBitsToFloat((floatBitsToUint(x) & 0x7fffffffu) | (floatBitsToUint(s) & 0x80000000u));
}
// 2^k for -126 <= k <= 127.
float tv_pow2(int k) { return uintBitsToFloat(uint(k + 127) << 23); }
// x * 2^k for |k| <= 300, rounded once when x is normal.
float tv_scale(float x, int k) {
    int k1 = clamp(k, -120, 120);
    int k2 = clamp(k - k1, -120, 120);
    return x * tv_pow2(k1) * tv_pow2(k2) * tv_pow2(k - k1 - k2);
}
// The unbiased exponent of finite x != 0 (subnormals included).
int tv_ilogb(float x) {
    bool subnormal = tv_abs(x) < 1.17549435e-38f;
    float y = subnormal ? x * 16777216.0f : x;  // 2^24
    return int((floatBitsToUint(y) >> 23) & 0xffu) - 127 - (subnormal ? 24 : 0);
}

// ---- policy basics ----------------------------------------------------------------------
float tv_select(bool m, float x, float y) { return m ? x : y; }
// The zero-absorbing accumulation rule (contribution() of detail/math_scalar.hpp).
float tv_contribution(float partial, float seed) {
    return (partial == 0.0f || seed == 0.0f) ? 0.0f : partial * seed;
}
float tv_sign(float x) { return x > 0.0f ? 1.0f : (x < 0.0f ? -1.0f : x); }
float tv_floor(float x) { return floor(x); }
float tv_ceil(float x) { return ceil(x); }
float tv_trunc(float x) { return trunc(x); }
// Half away from zero (std::round); GLSL's round() may round halves either way.
float tv_round(float x) {
    float t = trunc(x);
    return tv_abs(x - t) >= 0.5f ? t + tv_copysign(1.0f, x) : t;
}
float tv_fma(float x, float y, float z) { return fma(x, y, z); }
float tv_sqrt(float x) { return x < 0.0f ? tv_nan_f32() : (x == 0.0f ? x : sqrt(x)); }

// ---- exp and log ------------------------------------------------------------------------
float tv_exp(float x) {
    float y = exp(clamp(x, -104.0f, 89.0f));
    y = x > 88.7228394f ? tv_inf_f32() : y;
    y = x < -103.972084f ? 0.0f : y;
    return tv_isnan(x) ? x : y;
}
float tv_exp2(float x) {
    float y = exp2(clamp(x, -150.0f, 128.0f));
    y = x >= 128.0f ? tv_inf_f32() : y;
    y = x < -150.0f ? 0.0f : y;
    return tv_isnan(x) ? x : y;
}
// Special values of the logarithms: NaN below 0, -inf at 0, +inf at +inf; y otherwise.
float tv_log_special(float x, float y) {
    y = x == 0.0f ? -tv_inf_f32() : y;
    y = x < 0.0f ? tv_nan_f32() : y;
    return (tv_isnan(x) || x == tv_inf_f32()) ? x + x : y;
}
float tv_log(float x) { return tv_log_special(x, log(tv_isfinite(x) && x > 0.0f ? x : 1.0f)); }
float tv_log2(float x) { return tv_log_special(x, log2(tv_isfinite(x) && x > 0.0f ? x : 1.0f)); }
float tv_log10(float x) {
    return tv_log_special(x, log2(tv_isfinite(x) && x > 0.0f ? x : 1.0f) * 0.301029995663981f);
}
// log(1 + x) = log(u) - ((u - 1) - x) / u with u = 1 + x rounded (the rounding corrected).
float tv_log1p(float x) {
    float u = 1.0f + x;
    float safe = tv_isfinite(u) && u > 0.0f ? u : 2.0f;
    float y = u == 1.0f ? x : log(safe) - ((safe - 1.0f) - x) / safe;
    y = x == -1.0f ? -tv_inf_f32() : y;
    y = x < -1.0f ? tv_nan_f32() : y;
    return (x == 0.0f || tv_isnan(x) || x == tv_inf_f32()) ? x : y;
}
// expm1(x) = (u - 1) x / log(u) with u = exp(x) (Kahan's correction of the rounding of u).
float tv_expm1(float x) {
    float u = exp(clamp(x, -30.0f, 88.7228394f));
    float lu = log(u);
    float y = u == 1.0f ? x : ((u - 1.0f == -1.0f) ? -1.0f : (u - 1.0f) * x / lu);
    y = x > 0.5f ? u - 1.0f : y;
    y = x > 88.7228394f ? tv_inf_f32() : y;
    y = x < -30.0f ? -1.0f : y;
    return (x == 0.0f || tv_isnan(x)) ? x : y;
}

// ---- trigonometric ----------------------------------------------------------------------
float tv_sin(float x) { return x == 0.0f ? x : (tv_isfinite(x) ? sin(x) : tv_nan_f32()); }
float tv_cos(float x) { return tv_isfinite(x) ? cos(x) : tv_nan_f32(); }
float tv_tan(float x) { return x == 0.0f ? x : (tv_isfinite(x) ? tan(x) : tv_nan_f32()); }
float tv_asin(float x) {
    float y = tv_abs(x) > 1.0f ? tv_nan_f32() : asin(x);
    return (x == 0.0f || tv_isnan(x)) ? x : y;
}
float tv_acos(float x) {
    float y = tv_abs(x) > 1.0f ? tv_nan_f32() : acos(x);
    return tv_isnan(x) ? x : y;
}
float tv_atan(float x) {
    float y = tv_isinf(x) ? tv_copysign(1.57079637f, x) : atan(x);
    return (x == 0.0f || tv_isnan(x)) ? x : y;
}
float tv_atan2(float y, float x) {
    float ay = tv_abs(y), ax = tv_abs(x);
    // atan(ay / ax) in [0, pi/2], defined for zeros and infinities too.
    float a = ay > ax ? 1.57079637f - atan(ax / ay) : atan(ay / ax);
    a = (tv_isinf(ay) && tv_isinf(ax)) ? 0.785398185f : a;
    a = ay == 0.0f ? 0.0f : a;
    a = tv_signbit(x) ? 3.14159274f - a : a;
    return (tv_isnan(x) || tv_isnan(y)) ? x + y : tv_copysign(a, y);
}

// ---- hyperbolic -------------------------------------------------------------------------
// exp(a) / 2 for a >= 0 without overflowing before the result does.
float tv_half_exp(float a) {
    float e = tv_exp(0.5f * a);
    return (0.5f * e) * e;
}
float tv_sinh(float x) {
    float a = tv_abs(x);
    float t = tv_expm1(a);
    float y = a < 1.0f ? 0.5f * (2.0f * t - t * t / (t + 1.0f))
                       : (a < 9.0f ? 0.5f * (t + t / (t + 1.0f)) : tv_half_exp(a));
    return (x == 0.0f || tv_isnan(x)) ? x : tv_copysign(y, x);
}
float tv_cosh(float x) {
    float a = tv_abs(x);
    float t = tv_expm1(a);
    float e = tv_exp(a);
    float y = a < 0.346573591f ? 1.0f + (t * t) / (2.0f + 2.0f * t)
                               : (a < 9.0f ? 0.5f * e + 0.5f / e : tv_half_exp(a));
    return tv_isnan(x) ? x : y;
}
float tv_tanh(float x) {
    float a = tv_abs(x);
    float t = tv_expm1(-2.0f * a);
    float y = a < 1.0f ? -t / (t + 2.0f) : (a < 9.0f ? 1.0f - 2.0f / (tv_expm1(2.0f * a) + 2.0f) : 1.0f);
    return (x == 0.0f || tv_isnan(x)) ? x : tv_copysign(y, x);
}
float tv_asinh(float x) {
    float a = tv_abs(x);
    float z = a * a;
    float y = a < 2.0f ? tv_log1p(a + z / (1.0f + sqrt(1.0f + z)))
                       : (a < 4096.0f ? tv_log(2.0f * a + 1.0f / (sqrt(z + 1.0f) + a)) : tv_log(a) + 0.693147182f);
    return (x == 0.0f || tv_isnan(x) || tv_isinf(x)) ? x : tv_copysign(y, x);
}
float tv_acosh(float x) {
    float t = x - 1.0f;
    float y = x < 2.0f ? tv_log1p(t + sqrt(2.0f * t + t * t))
                       : (x < 4096.0f ? tv_log(2.0f * x - 1.0f / (x + sqrt(x * x - 1.0f))) : tv_log(x) + 0.693147182f);
    y = x < 1.0f ? tv_nan_f32() : y;
    return (tv_isnan(x) || x == tv_inf_f32()) ? x : y;
}
float tv_atanh(float x) {
    float a = tv_abs(x);
    float y = a < 0.5f ? 0.5f * tv_log1p(2.0f * a + 2.0f * a * a / (1.0f - a)) : 0.5f * tv_log1p(2.0f * a / (1.0f - a));
    y = a > 1.0f ? tv_nan_f32() : (a == 1.0f ? tv_inf_f32() : y);
    return (x == 0.0f || tv_isnan(x)) ? x : tv_copysign(y, x);
}

// ---- powers, roots, hypot, fmod ---------------------------------------------------------
float tv_pow(float x, float y) {
    float ax = tv_abs(x), ay = tv_abs(y);
    bool y_integer = trunc(y) == y;
    bool y_odd = y_integer && ay < 33554432.0f && trunc(0.5f * y) != 0.5f * y;
    bool regular = tv_isfinite(x) && x != 0.0f && tv_isfinite(y);
    float r = pow(regular ? ax : 1.0f, regular ? y : 0.0f);
    r = x < 0.0f ? (y_integer ? (y_odd ? -r : r) : tv_nan_f32()) : r;
    float zero_or_inf = (x == 0.0f) == (y < 0.0f) ? tv_inf_f32() : 0.0f;
    r = (x == 0.0f || tv_isinf(x)) ? (y_odd ? tv_copysign(zero_or_inf, x) : zero_or_inf) : r;
    r = tv_isinf(y) ? (ax == 1.0f ? 1.0f : ((ax < 1.0f) == (y < 0.0f) ? tv_inf_f32() : 0.0f)) : r;
    r = (tv_isnan(x) || tv_isnan(y)) ? x + y : r;
    return (y == 0.0f || x == 1.0f) ? 1.0f : r;
}
// std::pow(x, float(n)) (what the reference VM computes), with the exact small cases fast.
float tv_powi(float x, int n) { return n == 1 ? x : (n == 2 ? x * x : tv_pow(x, float(n))); }
float tv_cbrt(float x) {
    float a = tv_abs(x);
    float safe = tv_isfinite(a) && a != 0.0f ? a : 1.0f;
    int e = tv_ilogb(safe);
    int q = e >= 0 ? e / 3 : -((2 - e) / 3);  // floor(e / 3)
    float m = tv_scale(safe, -3 * q);           // m in [1, 8)
    float t = exp2(log2(m) * 0.333333343f);
    t = t + (m / (t * t) - t) * 0.333333343f;  // Newton
    float y = tv_copysign(tv_scale(t, q), x);
    return (x == 0.0f || !tv_isfinite(x)) ? x + x : y;
}
float tv_hypot(float x, float y) {
    float a = tv_abs(x), b = tv_abs(y);
    float big = a > b ? a : b, small = a > b ? b : a;
    float ratio = small / big;
    float r = big * sqrt(1.0f + ratio * ratio);
    r = small == 0.0f ? big : r;
    r = (tv_isnan(x) || tv_isnan(y)) ? x + y : r;
    return (tv_isinf(x) || tv_isinf(y)) ? tv_inf_f32() : r;
}
// Exact fmod (C's), as in math_f64.glsl: up to ilogb(x) - ilogb(y) + 1 exact steps.
float tv_fmod(float x, float y) {
    float ax = tv_abs(x), ay = tv_abs(y);
    bool regular = tv_isfinite(x) && tv_isfinite(y) && y != 0.0f;
    float r = regular ? ax : 0.0f;
    float d = regular ? ay : 1.0f;
    int ed = tv_ilogb(d);
    while (r >= d) {
        int k = tv_ilogb(r) - ed;
        float t = tv_scale(d, k);
        t = t > r ? tv_scale(d, k - 1) : t;
        r -= t;
    }
    r = tv_copysign(r, x);
    r = regular ? r : tv_nan_f32();
    r = (tv_isfinite(x) && tv_isinf(y)) ? x : r;
    return (tv_isnan(x) || tv_isnan(y)) ? x + y : r;
}
