// The single-precision math policy. GLSL has float transcendentals, but their precision is
// loose in Vulkan (lavapipe's and NVIDIA's are fast approximations, tens of ulp off) and their
// results are undefined on many edge cases. So every transcendental here is our own: range
// reduction (Cody-Waite, Payne-Hanek for large trigonometric arguments) and polynomials
// fitted by fit_polynomials.py, in float only (no Float64 capability needed), with every edge
// case decided explicitly with the semantics of std:: (the reference VM). Only sqrt and the
// rounding functions are builtins (correctly rounded or exact).
//
// Functions and out parameters are `precise` (SPIR-V NoContraction): the exact-error steps
// (two_sum, two_product, the reductions, the rounding corrections) must not be reassociated
// or contracted by the driver's compiler (Mesa's NIR otherwise folds x - ((1 + x) - 1) to 0).
// The polynomials are Horner chains of fma(), which GPUs run as one fused instruction per
// step (a NoContraction multiply and add are two); where a driver computes fma() unfused
// (llvmpipe may), the result is the multiply-add's, as accurate as the fit needs.
// Written in the GLSL subset that tests/gpu_math also compiles as C++ (README.md).

// ---- bits -------------------------------------------------------------------------------
precise float tv_nan_f32() { return uintBitsToFloat(0x7fc00000u); }
precise float tv_inf_f32() { return uintBitsToFloat(0x7f800000u); }
bool tv_isnan(float x) { return (floatBitsToUint(x) & 0x7fffffffu) > 0x7f800000u; }
bool tv_isinf(float x) { return (floatBitsToUint(x) & 0x7fffffffu) == 0x7f800000u; }
bool tv_isfinite(float x) { return (floatBitsToUint(x) & 0x7fffffffu) < 0x7f800000u; }
bool tv_signbit(float x) { return (floatBitsToUint(x) >> 31) != 0u; }
precise float tv_abs(float x) { return uintBitsToFloat(floatBitsToUint(x) & 0x7fffffffu); }
precise float tv_copysign(float x, float s) {
    return uintBitsToFloat((floatBitsToUint(x) & 0x7fffffffu) | (floatBitsToUint(s) & 0x80000000u));
}
// 2^k for -126 <= k <= 127.
precise float tv_pow2(int k) { return uintBitsToFloat(uint(k + 127) << 23); }
// x * 2^k for |k| <= 300, rounded once when x is normal.
precise float tv_scale(float x, int k) {
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
precise float tv_select(bool m, float x, float y) { return m ? x : y; }
// The zero-absorbing accumulation rule (contribution() of detail/math_scalar.hpp).
precise float tv_contribution(float partial, float seed) {
    return (partial == 0.0f || seed == 0.0f) ? 0.0f : partial * seed;
}
precise float tv_sign(float x) { return x > 0.0f ? 1.0f : (x < 0.0f ? -1.0f : x); }
precise float tv_floor(float x) { return floor(x); }
precise float tv_ceil(float x) { return ceil(x); }
precise float tv_trunc(float x) { return trunc(x); }
// Half away from zero (std::round); GLSL's round() may round halves either way.
precise float tv_round(float x) {
    float t = trunc(x);
    return tv_abs(x - t) >= 0.5f ? t + tv_copysign(1.0f, x) : t;
}
// tv_fma: below, with the double-float helpers.
// a / b. GPUs divide as a * (1 / b) (NVIDIA's float division: within 2.5 ulp), and for
// |b| > 2^126 the reciprocal is subnormal and flushes to zero: 100 / 3e38 gave 0, inf / 3e38
// NaN. Scaling both by 1/4 keeps the reciprocal normal and the quotient exact in scale. One
// correction step with the exact residual a - q*b (fma) then rounds the quotient almost always
// correctly: a / |a| is exactly 1, which Hypot's second derivatives rely on (they cancel
// (a/r)^2 against 1; within 2.5 ulp that left 1e-6 where the answer is 0 on the H100).
precise float tv_div(float a, float b) {
    if (tv_abs(b) > 8.5070592e37f) {
        a *= 0.25f;
        b *= 0.25f;
    }
    float r = 1.0f / b;
    float q = a * r;
    float corrected = fma(fma(-q, b, a), r, q);
    return tv_isfinite(corrected) && q != 0.0f ? corrected : a / b;
}
precise float tv_sqrt(float x) { return x < 0.0f ? tv_nan_f32() : (x == 0.0f ? x : sqrt(x)); }

// ---- constants (fit_polynomials.py; split constants: a head with few bits and a tail) ----
const float TVF_EXPM1_P0 = 0.1666666667f;
const float TVF_EXPM1_P1 = 0.04166655466f;
const float TVF_EXPM1_P2 = 0.008333320892f;
const float TVF_EXPM1_P3 = 0.001392617612f;
const float TVF_EXPM1_P4 = 0.0001988269004f;
const float TVF_LOG_P0 = 0.6666666655f;
const float TVF_LOG_P1 = 0.4000012184f;
const float TVF_LOG_P2 = 0.2855082082f;
const float TVF_LOG_P3 = 0.2333046722f;
const float TVF_SIN_P0 = -0.1666666666f;
const float TVF_SIN_P1 = 0.008333331875f;
const float TVF_SIN_P2 = -0.0001984008674f;
const float TVF_SIN_P3 = 2.72499258e-6f;
const float TVF_COS_P0 = 0.04166666666f;
const float TVF_COS_P1 = -0.001388888767f;
const float TVF_COS_P2 = 2.480060038e-5f;
const float TVF_COS_P3 = -2.73009592e-7f;
const float TVF_ASIN_P0 = 0.1666666634f;
const float TVF_ASIN_P1 = 0.07500094543f;
const float TVF_ASIN_P2 = 0.04459940153f;
const float TVF_ASIN_P3 = 0.03110066274f;
const float TVF_ASIN_P4 = 0.01714923836f;
const float TVF_ASIN_P5 = 0.0336908472f;
const float TVF_ATAN_P0 = -0.3333333328f;
const float TVF_ATAN_P1 = 0.1999997726f;
const float TVF_ATAN_P2 = -0.1428415119f;
const float TVF_ATAN_P3 = 0.1107136502f;
const float TVF_ATAN_P4 = -0.08624676145f;
const float TVF_ATAN_P5 = 0.05048138512f;
const float TVF_LN2_HI = 0.693145751953125f;  // 16 bits: k * TVF_LN2_HI exact for |k| < 256
const float TVF_LN2_LO = 1.428606765330187e-06f;
const float TVF_INV_LN2 = 1.44269502f;
const float TVF_PIO2 = 1.57079637f;  // rounded; the tails below are pi/2 - TVF_PIO2 etc.
const float TVF_PIO2_LO = -4.37113883e-08f;
const float TVF_PIO4 = 0.785398185f;
const float TVF_PIO4_LO = -2.18556941e-08f;
const float TVF_PI = 3.14159274f;
const float TVF_PI_LO = -8.74227766e-08f;
const float TVF_PIO2_PART1 = 1.5703125f;  // 11 bits each: k * part exact for k < 2^13
const float TVF_PIO2_PART2 = 0.0004837512969970703f;
const float TVF_PIO2_PART3 = 7.549533620476723e-08f;
const float TVF_PIO2_PART4 = 2.56334407e-12f;
// The first 10 words of 2/pi (bits after the point), as TVD_TWO_OVER_PI in
// math_f64_constants.glsl (fit_polynomials.py prints both).
const uint TVF_TWO_OVER_PI[10] = uint[10](
    0xa2f9836eu, 0x4e441529u, 0xfc2757d1u, 0xf534ddc0u, 0xdb629599u, 0x3c439041u,
    0xfe5163abu, 0xdebbc561u, 0xb7246e3au, 0x424dd2e0u);

// ---- double-float helpers ---------------------------------------------------------------
precise float tv_head12(float x) { return uintBitsToFloat(floatBitsToUint(x) & 0xfffff000u); }
void tv_two_sum(float a, float b, precise out float s, precise out float e) {
    s = a + b;
    float v = s - a;
    e = (a - (s - v)) + (b - v);
}
// Exact product a * b = p + e (Dekker, heads by clearing 12 low bits), barring under/overflow.
void tv_two_product(float a, float b, precise out float p, precise out float e) {
    float ah = tv_head12(a), al = a - ah;
    float bh = tv_head12(b), bl = b - bh;
    p = a * b;
    e = ((ah * bh - p) + ah * bl + al * bh) + al * bl;
}
// fma without relying on a fused builtin (Vulkan does not promise one): the exact product and
// sum, rounded at the end (faithful; exact on cancellation).
precise float tv_fma(float x, float y, float z) {
    // Scaled so that the exact product and sum neither overflow nor lose bits to underflow:
    // by 1/4 when x y or z is near overflow, by 2^64 when both are tiny.
    float p0 = x * y;
    bool big = !(tv_abs(p0) < 8.50705917e37f && tv_abs(z) < 8.50705917e37f);  // 2^126: two_sum cannot overflow
    bool tiny = tv_abs(p0) < 1.23259516e-32f && tv_abs(z) < 1.23259516e-32f;  // 2^-106
    float scale = big ? 0.25f : (tiny ? 1.84467441e19f : 1.0f);
    float p, e, s, t;
    tv_two_product(x * scale, y, p, e);
    tv_two_sum(p, z * scale, s, t);
    float exact = (tv_isfinite(s) ? s + (t + e) : s) * (big ? 4.0f : (tiny ? 5.42101086e-20f : 1.0f));
    exact = p == 0.0f ? (z == 0.0f ? p : z) : exact;  // x y negligible even scaled
    // Non-finite operands and exact zero products: x y + z is right, except for finite
    // x y + inf.
    float naive = (tv_isfinite(x) && tv_isfinite(y) && tv_isinf(z)) ? z : p0 + z;
    bool regular = tv_isfinite(x) && tv_isfinite(y) && tv_isfinite(z) && x != 0.0f && y != 0.0f;
    return regular ? exact : naive;
}

// ---- exp and log ------------------------------------------------------------------------
// expm1(r) for |r| <= ~0.35.
precise float tv_expm1_poly(float r) {
    float p = fma(r, fma(r, fma(r, fma(r, TVF_EXPM1_P4, TVF_EXPM1_P3), TVF_EXPM1_P2), TVF_EXPM1_P1),
                  TVF_EXPM1_P0);
    return fma(r * r, fma(r, p, 0.5f), r);
}
// exp(hi + lo) for finite |hi| <= 120, |lo| small (no special values).
precise float tv_exp_core(float hi, float lo) {
    float k = floor(hi * TVF_INV_LN2 + 0.5f);
    float r = (hi - k * TVF_LN2_HI) + (lo - k * TVF_LN2_LO);  // first difference exact
    return tv_scale(1.0f + tv_expm1_poly(r), int(k));
}
precise float tv_exp(float x) {
    float y = tv_exp_core(clamp(x, -110.0f, 100.0f), 0.0f);
    y = x > 88.7228394f ? tv_inf_f32() : y;
    y = x < -103.972084f ? 0.0f : y;
    return tv_isnan(x) ? x : y;
}
precise float tv_exp2(float x) {
    float xc = clamp(x, -160.0f, 130.0f);
    float k = floor(xc + 0.5f);
    float f = xc - k;  // exact, |f| <= 1/2
    float h, l;
    tv_two_product(f, 0.693147182f, h, l);  // f ln2 = h + l
    l += f * -1.90465421e-09f;
    float y = tv_scale(1.0f + tv_expm1_poly(h + l), int(k));
    y = x >= 128.0f ? tv_inf_f32() : y;
    y = x < -150.0f ? 0.0f : y;
    return tv_isnan(x) ? x : y;
}
// Splits finite x > 0 as 2^k (1 + f), 1 + f in [sqrt(1/2), sqrt(2)) (f exact).
void tv_log_reduce(float x, precise out float f, out float k) {
    bool subnormal = x < 1.17549435e-38f;
    float y = subnormal ? x * 16777216.0f : x;  // 2^24
    uint ix = floatBitsToUint(y) + (0x3f800000u - 0x3f3504f3u);
    k = float(int(ix >> 23) - 127 - (subnormal ? 24 : 0));
    f = uintBitsToFloat((ix & 0x007fffffu) + 0x3f3504f3u) - 1.0f;
}
// log(1 + f) = 2s + s z P(z) = (hi + lo), s = f / (2 + f), z = s^2, with s to ~2^-48.
void tv_log1pf_parts(float f, precise out float hi, precise out float lo) {
    float t = 2.0f + f;
    float tl = (2.0f - t) + f;  // t + tl = 2 + f exactly
    float s = f / t;
    float p, pe;
    tv_two_product(s, t, p, pe);
    float sl = (((f - p) - pe) - s * tl) / t;  // s + sl = f / (2 + f)
    float z = s * s;
    float tail = s * z * fma(z, fma(z, fma(z, TVF_LOG_P3, TVF_LOG_P2), TVF_LOG_P1), TVF_LOG_P0);
    hi = 2.0f * s;
    lo = tail + 2.0f * sl;
}
// log(x) = hi + lo to ~2^-30 relative for finite x > 0.
void tv_log_extended(float x, precise out float hi, precise out float lo) {
    float f, k, h, l;
    tv_log_reduce(x, f, k);
    tv_log1pf_parts(f, h, l);
    float s, e;
    tv_two_sum(k * TVF_LN2_HI, h, s, e);
    e += l + k * TVF_LN2_LO;
    hi = s + e;  // normalised: |lo| <= ulp(hi) / 2
    lo = e - (hi - s);
}
// Special values of the logarithms: NaN below 0, -inf at 0, +inf at +inf; y otherwise.
precise float tv_log_special(float x, float y) {
    y = x == 0.0f ? -tv_inf_f32() : y;
    y = x < 0.0f ? tv_nan_f32() : y;
    return (tv_isnan(x) || x == tv_inf_f32()) ? x + x : y;
}
precise float tv_log(float x) {
    float hi, lo;
    tv_log_extended(tv_isfinite(x) && x > 0.0f ? x : 1.0f, hi, lo);
    return tv_log_special(x, hi + lo);
}
precise float tv_log2(float x) {
    float hi, lo, f, k;
    float safe = tv_isfinite(x) && x > 0.0f ? x : 1.0f;
    tv_log_reduce(safe, f, k);
    tv_log1pf_parts(f, hi, lo);
    float p, e;  // (hi + lo) / ln2
    tv_two_product(hi, TVF_INV_LN2, p, e);
    e += lo * TVF_INV_LN2 + hi * 1.92596299e-08f;  // 1/ln2 - TVF_INV_LN2
    return tv_log_special(x, k + (p + e));  // k + p exact-ish: k integer, |p| < 0.51
}
precise float tv_log10(float x) {
    float hi, lo;
    tv_log_extended(tv_isfinite(x) && x > 0.0f ? x : 1.0f, hi, lo);
    float p, e;  // (hi + lo) / ln10
    tv_two_product(hi, 0.434294492f, p, e);
    e += lo * 0.434294492f + hi * 1.03050709e-08f;  // 1/ln10 - 0.434294492f
    return tv_log_special(x, p + e);
}
// log(1 + x) = log(u) - ((u - 1) - x) / u with u = 1 + x rounded (the rounding corrected).
precise float tv_log1p(float x) {
    float u = 1.0f + x;
    float safe = tv_isfinite(u) && u > 0.0f ? u : 2.0f;
    float hi, lo;
    tv_log_extended(safe, hi, lo);
    float c = safe >= 2.0f ? 1.0f - (safe - x) : x - (safe - 1.0f);  // (1 + x) - u, exact
    float y = u == 1.0f ? x : hi + (lo + c / safe);
    y = x == -1.0f ? -tv_inf_f32() : y;
    y = x < -1.0f ? tv_nan_f32() : y;
    return (x == 0.0f || tv_isnan(x) || x == tv_inf_f32()) ? x : y;
}
precise float tv_expm1(float x) {
    float k = floor(clamp(x, -30.0f, 100.0f) * TVF_INV_LN2 + 0.5f);
    float r = (x - k * TVF_LN2_HI) - k * TVF_LN2_LO;
    float e = tv_expm1_poly(r);
    float t = tv_pow2(int(clamp(k, -100.0f, 127.0f)));
    float y = k == 0.0f ? e : (k > 24.0f ? (e + 1.0f) * t - 1.0f : t * e + (t - 1.0f));
    y = k > 127.0f ? (e + 1.0f) * tv_pow2(127) * 2.0f : y;
    y = x > 88.7228394f ? tv_inf_f32() : y;
    y = x < -30.0f ? -1.0f : y;
    return (x == 0.0f || tv_isnan(x)) ? x : y;
}

// ---- trigonometric ----------------------------------------------------------------------
// Word j of 2/pi after the point (0 for j < 0: bits before the point).
uint tv_two_over_pi_word(int j) { return j >= 0 && j < 10 ? TVF_TWO_OVER_PI[j] : 0u; }
// Bits s .. s+31 of the 64-bit word w0:w1 (0 <= s <= 31; the shift of w1 is split so that
// s = 0 never shifts by 32).
uint tv_funnel(uint w0, uint w1, int s) { return (w0 << uint(s)) | ((w1 >> 1u) >> uint(31 - s)); }
// Payne-Hanek (as in math_f64.glsl): |x| = M 2^e times 2/pi in fixed point, exactly, mod 4.
// Straight-line code: the window's six words are read once, the four 24 x 32-bit products
// summed limb by limb with their carries (so a kernel that inlines it stays small).
void tv_reduce_large(float ax, precise out float hi, precise out float lo, out int n) {
    uint bits = floatBitsToUint(ax);
    int e = int((bits >> 23) & 0xffu) - 150;  // ax = M 2^e, 8000 <= ax: -10 <= e <= 104
    uint m = (bits & 0x007fffffu) | 0x00800000u;
    int j = e >> 5, shift = e & 31;
    uint t0 = tv_two_over_pi_word(j - 1), t1 = tv_two_over_pi_word(j), t2 = tv_two_over_pi_word(j + 1);
    uint t3 = tv_two_over_pi_word(j + 2), t4 = tv_two_over_pi_word(j + 3), t5 = tv_two_over_pi_word(j + 4);
    // Limb k (weight 2^(32k)) of the 128-bit window takes bits e + 32 (3 - k) .. of 2/pi.
    uint h0, l0, h1, l1, h2, l2, h3, l3, c1, c2, c3;
    umulExtended(m, tv_funnel(t4, t5, shift), h0, l0);
    umulExtended(m, tv_funnel(t3, t4, shift), h1, l1);
    umulExtended(m, tv_funnel(t2, t3, shift), h2, l2);
    umulExtended(m, tv_funnel(t1, t2, shift), h3, l3);
    uaddCarry(l1, h0, c1);  // limb 1 itself is below the fraction's 64 bits kept
    uint w2 = uaddCarry(l2, h1 + c1, c2);  // h < 2^24: h + carry never wraps
    uint w3 = uaddCarry(l3, h2 + c2, c3);
    uint p4 = h3 + c3;
    // The two bits of 2/pi before the window contribute M * (2 b1 + b0) to the integer part.
    uint before = tv_funnel(t0, t1, shift) & 3u;
    uint q = (p4 + (m & 3u) * before) & 3u;
    float sign = 1.0f;
    if (w3 >= 0x80000000u) {  // fraction >= 1/2: take 1 - fraction, next quadrant
        q = (q + 1u) & 3u;
        sign = -1.0f;
        uint carry;
        w2 = uaddCarry(~w2, 1u, carry);
        w3 = ~w3 + carry;
    }
    float s, err;
    tv_two_sum(float(w3 >> 16u) * 1.52587891e-05f, float(w3 & 0xffffu) * 2.32830644e-10f, s, err);
    err += float(w2 >> 16u) * 3.55271368e-15f + float(w2 & 0xffffu) * 5.42101086e-20f;
    float fh = s + err, fl = err - (fh - s);
    float ph, pl;
    tv_two_product(fh, TVF_PIO2, ph, pl);
    pl += fh * TVF_PIO2_LO + fl * TVF_PIO2;
    hi = sign * (ph + pl);
    lo = sign * (pl - ((ph + pl) - ph));
    n = int(q);
}
// x = n pi/2 + hi + lo with |hi + lo| <= ~pi/4 (finite x).
void tv_reduce_pio2(float x, precise out float hi, precise out float lo, out int n) {
    float ax = tv_abs(x);
    if (ax < 8000.0f) {  // Cody-Waite with pi/2 in four parts
        float k = floor(ax * 0.636619747f + 0.5f);
        float t1 = ax - k * TVF_PIO2_PART1;
        float s, e, s2, e2;
        tv_two_sum(t1, -k * TVF_PIO2_PART2, s, e);
        tv_two_sum(s, -k * TVF_PIO2_PART3, s2, e2);
        float tail = (e + e2) - k * TVF_PIO2_PART4;
        hi = s2 + tail;
        lo = tail - (hi - s2);
        n = int(k) & 3;
    } else {
        tv_reduce_large(ax, hi, lo, n);
    }
    if (x < 0.0f) {
        hi = -hi;
        lo = -lo;
        n = (4 - n) & 3;
    }
}
// sin(hi + lo) and cos(hi + lo) for |hi + lo| <= ~pi/4.
precise float tv_sin_kernel(float x, float y) {
    float z = x * x;
    return x + fma(x * z, fma(z, fma(z, fma(z, TVF_SIN_P3, TVF_SIN_P2), TVF_SIN_P1), TVF_SIN_P0), y);
}
precise float tv_cos_kernel(float x, float y) {
    float z = x * x;
    float p = z * z * fma(z, fma(z, fma(z, TVF_COS_P3, TVF_COS_P2), TVF_COS_P1), TVF_COS_P0);
    float hz = 0.5f * z;
    float w = 1.0f - hz;
    return w + (((1.0f - w) - hz) + (p - x * y));
}
precise float tv_sin(float x) {
    float hi, lo;
    int n;
    tv_reduce_pio2(tv_isfinite(x) ? x : 0.0f, hi, lo, n);
    float y = (n & 1) == 0 ? tv_sin_kernel(hi, lo) : tv_cos_kernel(hi, lo);
    y = (n & 2) == 0 ? y : -y;
    return x == 0.0f ? x : (tv_isfinite(x) ? y : tv_nan_f32());
}
precise float tv_cos(float x) {
    float hi, lo;
    int n;
    tv_reduce_pio2(tv_isfinite(x) ? x : 0.0f, hi, lo, n);
    float y = (n & 1) == 0 ? tv_cos_kernel(hi, lo) : -tv_sin_kernel(hi, lo);
    y = (n & 2) == 0 ? y : -y;
    return tv_isfinite(x) ? y : tv_nan_f32();
}
// sin(x) and cos(x) from one reduction, exactly tv_sin(x) and tv_cos(x) (the same steps):
// for kernels that need both (the tape compiler: a Sin and a Cos of one operand, or a Sin and
// its partial).
void tv_sincos(float x, precise out float s, precise out float c) {
    float hi, lo;
    int n;
    tv_reduce_pio2(tv_isfinite(x) ? x : 0.0f, hi, lo, n);
    float ks = tv_sin_kernel(hi, lo), kc = tv_cos_kernel(hi, lo);
    float ys = (n & 1) == 0 ? ks : kc;
    ys = (n & 2) == 0 ? ys : -ys;
    float yc = (n & 1) == 0 ? kc : -ks;
    yc = (n & 2) == 0 ? yc : -yc;
    s = x == 0.0f ? x : (tv_isfinite(x) ? ys : tv_nan_f32());
    c = tv_isfinite(x) ? yc : tv_nan_f32();
}
precise float tv_tan(float x) {
    float hi, lo;
    int n;
    tv_reduce_pio2(tv_isfinite(x) ? x : 0.0f, hi, lo, n);
    float s = tv_sin_kernel(hi, lo), c = tv_cos_kernel(hi, lo);
    float y = (n & 1) == 0 ? s / c : -c / s;
    return x == 0.0f ? x : (tv_isfinite(x) ? y : tv_nan_f32());
}
// asin(x) - x for |x| <= 1/2 (z = x^2).
precise float tv_asin_tail(float x, float z) {
    return x * z * fma(z, fma(z, fma(z, fma(z, fma(z, TVF_ASIN_P5, TVF_ASIN_P4), TVF_ASIN_P3), TVF_ASIN_P2),
                                   TVF_ASIN_P1), TVF_ASIN_P0);
}
precise float tv_asin(float x) {
    float ax = tv_abs(x);
    float small = ax + tv_asin_tail(ax, ax * ax);
    float z = 0.5f * (1.0f - ax);
    float s = sqrt(z);
    float large = TVF_PIO2 - (2.0f * (s + tv_asin_tail(s, z)) - TVF_PIO2_LO);  // pi/2 - 2 asin(s)
    float y = ax <= 0.5f ? small : large;
    y = ax > 1.0f ? tv_nan_f32() : tv_copysign(y, x);
    return (x == 0.0f || tv_isnan(x)) ? x : y;
}
precise float tv_acos(float x) {
    float ax = tv_abs(x);
    float middle = TVF_PIO2 - (x + (tv_asin_tail(x, x * x) - TVF_PIO2_LO));
    float z = 0.5f * (1.0f - ax);
    float s = sqrt(z);
    float twice = 2.0f * (s + tv_asin_tail(s, z));  // acos(ax) = 2 asin(sqrt((1 - ax) / 2))
    float negative = TVF_PI - (twice - TVF_PI_LO);
    float y = ax <= 0.5f ? middle : (x > 0.0f ? twice : negative);
    y = ax > 1.0f ? tv_nan_f32() : y;
    return tv_isnan(x) ? x : y;
}
// atan(a) for a >= 0 (a may be +inf), reduced to |t| <= tan(pi/8) around 0, pi/4 or pi/2.
precise float tv_atan_positive(float a) {
    bool low = a <= 0.414213562f;
    bool high = a > 2.41421356f;
    float t = low ? a : (high ? -1.0f / a : (a - 1.0f) / (a + 1.0f));
    float base = low ? 0.0f : (high ? TVF_PIO2 : TVF_PIO4);
    float base_lo = low ? 0.0f : (high ? TVF_PIO2_LO : TVF_PIO4_LO);
    float z = t * t;
    float tail = t * z * fma(z, fma(z, fma(z, fma(z, fma(z, TVF_ATAN_P5, TVF_ATAN_P4), TVF_ATAN_P3), TVF_ATAN_P2),
                                    TVF_ATAN_P1), TVF_ATAN_P0);
    return base + (t + (tail + base_lo));
}
precise float tv_atan(float x) {
    float y = tv_copysign(tv_atan_positive(tv_abs(x)), x);
    return (x == 0.0f || tv_isnan(x)) ? x : y;
}
precise float tv_atan2(float y, float x) {
    float ay = tv_abs(y), ax = tv_abs(x);
    float q = tv_div(ay, ax);  // not ay / ax: a huge ax would flush the reciprocal
    q = (tv_isinf(ay) && tv_isinf(ax)) ? 1.0f : q;
    q = ay == 0.0f ? 0.0f : q;
    float a = tv_atan_positive(q);
    a = tv_signbit(x) ? TVF_PI - (a - TVF_PI_LO) : a;
    return (tv_isnan(x) || tv_isnan(y)) ? x + y : tv_copysign(a, y);
}

// ---- hyperbolic -------------------------------------------------------------------------
// exp(a) / 2 for a >= 0 without overflowing before the result does.
precise float tv_half_exp(float a) {
    float e = tv_exp(0.5f * a);
    return (0.5f * e) * e;
}
precise float tv_sinh(float x) {
    float a = tv_abs(x);
    float t = tv_expm1(a);
    float y = a < 1.0f ? 0.5f * (2.0f * t - t * t / (t + 1.0f))
                       : (a < 9.0f ? 0.5f * (t + t / (t + 1.0f)) : tv_half_exp(a));
    return (x == 0.0f || tv_isnan(x)) ? x : tv_copysign(y, x);
}
precise float tv_cosh(float x) {
    float a = tv_abs(x);
    float t = tv_expm1(a);
    float e = tv_exp(a);
    float y = a < 0.346573591f ? 1.0f + (t * t) / (2.0f + 2.0f * t)
                               : (a < 9.0f ? 0.5f * e + 0.5f / e : tv_half_exp(a));
    return tv_isnan(x) ? x : y;
}
// One expm1, of -2|x| below 1 and of 2|x| above (the branch's own argument: the same values as
// evaluating both, at half the cost).
precise float tv_tanh(float x) {
    float a = tv_abs(x);
    float t = tv_expm1(a < 1.0f ? -2.0f * a : 2.0f * a);
    float y = a < 1.0f ? -t / (t + 2.0f) : (a < 9.0f ? 1.0f - 2.0f / (t + 2.0f) : 1.0f);
    return (x == 0.0f || tv_isnan(x)) ? x : tv_copysign(y, x);
}
precise float tv_asinh(float x) {
    float a = tv_abs(x);
    float z = a * a;
    float y = a < 2.0f ? tv_log1p(a + z / (1.0f + sqrt(1.0f + z)))
                       : (a < 4096.0f ? tv_log(2.0f * a + 1.0f / (sqrt(z + 1.0f) + a)) : tv_log(a) + 0.693147182f);
    return (x == 0.0f || tv_isnan(x) || tv_isinf(x)) ? x : tv_copysign(y, x);
}
precise float tv_acosh(float x) {
    float t = x - 1.0f;
    float y = x < 2.0f ? tv_log1p(t + sqrt(2.0f * t + t * t))
                       : (x < 4096.0f ? tv_log(2.0f * x - 1.0f / (x + sqrt(x * x - 1.0f))) : tv_log(x) + 0.693147182f);
    y = x < 1.0f ? tv_nan_f32() : y;
    return (tv_isnan(x) || x == tv_inf_f32()) ? x : y;
}
precise float tv_atanh(float x) {
    float a = tv_abs(x);
    float y = a < 0.5f ? 0.5f * tv_log1p(2.0f * a + 2.0f * a * a / (1.0f - a)) : 0.5f * tv_log1p(2.0f * a / (1.0f - a));
    y = a > 1.0f ? tv_nan_f32() : (a == 1.0f ? tv_inf_f32() : y);
    return (x == 0.0f || tv_isnan(x)) ? x : tv_copysign(y, x);
}

// ---- powers, roots, hypot, fmod ---------------------------------------------------------
// pow for finite ax > 0 and finite y: exp(y log(ax)) with log(ax) to ~2^-30 (double-float).
precise float tv_pow_positive(float ax, float y) {
    float lh, ll, p, pe;
    tv_log_extended(ax, lh, ll);
    tv_two_product(y, lh, p, pe);
    float pl = pe + y * ll;
    bool inside = tv_abs(p) < 110.0f;
    float r = tv_exp_core(inside ? p : 0.0f, inside ? pl : 0.0f);
    return inside ? r : (p > 0.0f ? tv_inf_f32() : 0.0f);
}
precise float tv_pow(float x, float y) {
    float ax = tv_abs(x), ay = tv_abs(y);
    bool y_integer = trunc(y) == y;
    bool y_odd = y_integer && ay < 33554432.0f && trunc(0.5f * y) != 0.5f * y;
    bool regular = tv_isfinite(x) && x != 0.0f && tv_isfinite(y);
    float r = tv_pow_positive(regular ? ax : 1.0f, regular ? y : 0.0f);
    r = x < 0.0f ? (y_integer ? (y_odd ? -r : r) : tv_nan_f32()) : r;
    float zero_or_inf = (x == 0.0f) == (y < 0.0f) ? tv_inf_f32() : 0.0f;
    r = (x == 0.0f || tv_isinf(x)) ? (y_odd ? tv_copysign(zero_or_inf, x) : zero_or_inf) : r;
    r = tv_isinf(y) ? (ax == 1.0f ? 1.0f : ((ax < 1.0f) == (y < 0.0f) ? tv_inf_f32() : 0.0f)) : r;
    r = (tv_isnan(x) || tv_isnan(y)) ? x + y : r;
    return (y == 0.0f || x == 1.0f) ? 1.0f : r;
}
// std::pow(x, float(n)) (what the reference VM computes), with the exact small cases fast.
precise float tv_powi(float x, int n) { return n == 1 ? x : (n == 2 ? x * x : tv_pow(x, float(n))); }
precise float tv_cbrt(float x) {
    float a = tv_abs(x);
    float safe = tv_isfinite(a) && a != 0.0f ? a : 1.0f;
    int e = tv_ilogb(safe);
    int q = e >= 0 ? e / 3 : -((2 - e) / 3);  // floor(e / 3)
    float m = tv_scale(safe, -3 * q);           // m in [1, 8)
    float t = tv_exp2(tv_log2(m) * 0.333333343f);
    t = t + (m / (t * t) - t) * 0.333333343f;  // Newton
    float y = tv_copysign(tv_scale(t, q), x);
    return (x == 0.0f || !tv_isfinite(x)) ? x + x : y;
}
precise float tv_hypot(float x, float y) {
    float a = tv_abs(x), b = tv_abs(y);
    float big = a > b ? a : b, small = a > b ? b : a;
    float ratio = tv_div(small, big);  // not small / big: a huge big would flush the reciprocal
    float r = big * sqrt(1.0f + ratio * ratio);
    r = small == 0.0f ? big : r;
    r = (tv_isnan(x) || tv_isnan(y)) ? x + y : r;
    return (tv_isinf(x) || tv_isinf(y)) ? tv_inf_f32() : r;
}
// Exact fmod (C's), as in math_f64.glsl: up to ilogb(x) - ilogb(y) + 1 exact steps.
precise float tv_fmod(float x, float y) {
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
#include "math_f32_special.glsl"
