// Functions and out parameters are `precise` (SPIR-V NoContraction): the exact-error steps
// must not be reassociated or contracted by the driver's compiler (Mesa's NIR otherwise folds
// x - ((1 + x) - 1) to 0, which broke log1p, asinh, atanh on lavapipe).
//
// The double-precision math policy: GLSL has no double transcendentals, so each one is
// written here (range reduction + polynomials fitted by fit_polynomials.py, in the manner of
// fdlibm/cephes). Semantics follow the C++ std:: functions on signed zeros, infinities, NaN
// and out-of-domain inputs; accuracy (max ulp against glibc, measured by tests/gpu_math) is
// in README.md.
//
// Written in the GLSL subset that tests/gpu_math compiles as C++ too: scalars, `out`/`inout`
// parameters, fixed-size local arrays, const globals; no vectors except unpack/packDouble2x32
// (the C++ side provides them); double literals carry the suffix LF.
#include "math_f64_constants.glsl"

// ---- bits -------------------------------------------------------------------------------
precise double tv_from_words(uint hi, uint lo) { return packDouble2x32(uvec2(lo, hi)); }
uint tv_hi(double x) { return unpackDouble2x32(x).y; }
uint tv_lo(double x) { return unpackDouble2x32(x).x; }
precise double tv_nan_f64() { return tv_from_words(0x7ff80000u, 0u); }
precise double tv_inf_f64() { return tv_from_words(0x7ff00000u, 0u); }
bool tv_isnan(double x) {
    uint h = tv_hi(x) & 0x7fffffffu;
    return h > 0x7ff00000u || (h == 0x7ff00000u && tv_lo(x) != 0u);
}
bool tv_isinf(double x) { return (tv_hi(x) & 0x7fffffffu) == 0x7ff00000u && tv_lo(x) == 0u; }
bool tv_isfinite(double x) { return (tv_hi(x) & 0x7fffffffu) < 0x7ff00000u; }
bool tv_signbit(double x) { return (tv_hi(x) >> 31) != 0u; }
precise double tv_abs(double x) { return tv_from_words(tv_hi(x) & 0x7fffffffu, tv_lo(x)); }
precise double tv_copysign(double x, double s) {
    return tv_from_words((tv_hi(x) & 0x7fffffffu) | (tv_hi(s) & 0x80000000u), tv_lo(x));
}
// x with the low 32 bits of its significand cleared (a head for exact products).
precise double tv_head32(double x) { return tv_from_words(tv_hi(x), 0u); }
// 2^k for -1022 <= k <= 1023.
precise double tv_pow2(int k) { return tv_from_words(uint(k + 1023) << 20, 0u); }
// x * 2^k for |k| <= 3000, rounded once when x is normal (the steps are exact until the last).
precise double tv_scale(double x, int k) {
    int k1 = clamp(k, -1000, 1000);
    int k2 = clamp(k - k1, -1000, 1000);
    return x * tv_pow2(k1) * tv_pow2(k2) * tv_pow2(k - k1 - k2);
}

// ---- policy basics ----------------------------------------------------------------------
precise double tv_select(bool m, double x, double y) { return m ? x : y; }
// The zero-absorbing accumulation rule (contribution() of detail/math_scalar.hpp).
precise double tv_contribution(double partial, double seed) {
    return (partial == 0.0LF || seed == 0.0LF) ? 0.0LF : partial * seed;
}
precise double tv_sign(double x) { return x > 0.0LF ? 1.0LF : (x < 0.0LF ? -1.0LF : x); }
precise double tv_floor(double x) { return floor(x); }
precise double tv_ceil(double x) { return ceil(x); }
// Truncation by clearing the fraction's bits below the binary point: exact for every double,
// the sign of zeros and of small negatives kept. Not GLSL's trunc(double): lavapipe (Mesa 22.3,
// LLVM 15) on a host without AVX-512 returned large quotients untruncated (179769313.486...
// for 1.797e308 / 1e300) and +0 for -0.5, which the conformance suite caught.
precise double tv_trunc(double x) {
    uint hi = tv_hi(x);
    int e = int((hi >> 20) & 0x7FFu) - 1023;  // the unbiased exponent
    if (e >= 52) return x;                      // an integer already, or inf or nan
    if (e < 0) return tv_from_words(hi & 0x80000000u, 0u);  // |x| < 1: a zero of x's sign
    if (e < 20) return tv_from_words(hi & ~(0x000FFFFFu >> e), 0u);
    return tv_from_words(hi, tv_lo(x) & ~(0xFFFFFFFFu >> (e - 20)));
}
precise double tv_div(double a, double b) { return a / b; }
// Half away from zero (std::round); GLSL's round() may round halves either way.
precise double tv_round(double x) {
    double t = tv_trunc(x);
    return tv_abs(x - t) >= 0.5LF ? t + tv_copysign(1.0LF, x) : t;
}
precise double tv_sqrt(double x) { return x < 0.0LF ? tv_nan_f64() : (x == 0.0LF ? x : sqrt(x)); }

// ---- double-double helpers --------------------------------------------------------------
void tv_two_sum(double a, double b, precise out double s, precise out double e) {
    s = a + b;
    double v = s - a;
    e = (a - (s - v)) + (b - v);
}
// a = head + tail with both halves of at most 26 significant bits (the tail signed): the top
// 26 bits of the significand, rounded to nearest by adding one unit when the cleared 27 bits
// are at least half a unit (Veltkamp's split without its overflow at large |a|).
precise double tv_split_head(double a) {
    double h = tv_from_words(tv_hi(a), tv_lo(a) & 0xf8000000u);
    double unit = tv_from_words(tv_hi(a) & 0xfff00000u, 0u) * 2.9802322387695312e-08LF;  // 2^-25
    double up = h + unit;  // inf only at the top binade's last values: keep h (27-bit tail)
    return tv_abs(a - h) >= 0.5LF * tv_abs(unit) && tv_isfinite(up) ? up : h;
}
// Exact product a * b = p + e (Dekker), barring underflow and overflow.
void tv_two_product(double a, double b, precise out double p, precise out double e) {
    double ah = tv_split_head(a), al = a - ah;
    double bh = tv_split_head(b), bl = b - bh;
    p = a * b;
    e = ((ah * bh - p) + ah * bl + al * bh) + al * bl;
}

// fma without relying on a fused builtin (Vulkan does not promise one; lavapipe's is not):
// the exact product and sum, rounded at the end (faithful; exact on cancellation).
precise double tv_fma(double x, double y, double z) {
    // Scaled so that the exact product and sum neither overflow nor lose bits to underflow:
    // by 1/4 when x y or z is near overflow, by 2^512 when both are tiny.
    double p0 = x * y;
    bool big = !(tv_abs(p0) < 4.49423283715579e307LF && tv_abs(z) < 4.49423283715579e307LF);  // 2^1022: two_sum cannot overflow
    bool tiny = tv_abs(p0) < 1.1830521861667747e-271LF && tv_abs(z) < 1.1830521861667747e-271LF;  // 2^-900
    double scale = big ? 0.25LF : (tiny ? 1.3407807929942597e154LF : 1.0LF);
    double p, e, s, t;
    tv_two_product(x * scale, y, p, e);
    tv_two_sum(p, z * scale, s, t);
    double exact = (tv_isfinite(s) ? s + (t + e) : s) * (big ? 4.0LF : (tiny ? 7.458340731200207e-155LF : 1.0LF));
    exact = p == 0.0LF ? (z == 0.0LF ? p : z) : exact;  // x y negligible even scaled
    // Non-finite operands and exact zero products: x y + z is right, except for finite
    // x y + inf.
    double naive = (tv_isfinite(x) && tv_isfinite(y) && tv_isinf(z)) ? z : p0 + z;
    bool regular = tv_isfinite(x) && tv_isfinite(y) && tv_isfinite(z) && x != 0.0LF && y != 0.0LF;
    return regular ? exact : naive;
}

// ---- exp family -------------------------------------------------------------------------
// exp(hi - lo) for |hi - lo| <= ln2/2 with the rational form exp(r) = 1 + 2r / (R(r^2) - r)
// (fdlibm's e_exp.c, own coefficients).
precise double tv_exp_kernel(double hi, double lo) {
    double r = hi - lo;
    double t = r * r;
    double c = r - t * (TVD_EXP_P0 + t * (TVD_EXP_P1 + t * (TVD_EXP_P2 + t * (TVD_EXP_P3 + t * TVD_EXP_P4))));
    return 1.0LF - ((lo - (r * c) / (2.0LF - c)) - hi);
}
precise double tv_exp(double x) {
    double k = floor(x * TVD_INV_LN2_HI + 0.5LF);
    k = clamp(k, -1100.0LF, 1100.0LF);
    double hi = x - k * TVD_LN2_HI;  // exact
    double lo = k * TVD_LN2_LO;
    double y = tv_scale(tv_exp_kernel(hi, lo), int(k));
    y = x > 709.782712893383973096LF ? tv_inf_f64() : y;
    y = x < -745.1332191019412076235LF ? 0.0LF : y;
    return tv_isnan(x) ? x : y;
}
precise double tv_exp2(double x) {
    double k = floor(clamp(x, -1100.0LF, 1100.0LF) + 0.5LF);
    double f = x - k;  // exact, |f| <= 1/2
    double hi, lo;
    tv_two_product(f, 0.6931471805599453LF, hi, lo);  // f ln2 = hi + lo
    lo += f * 2.3190468138462996e-17LF;
    double y = tv_scale(tv_exp_kernel(hi, -lo), int(k));
    y = x >= 1024.0LF ? tv_inf_f64() : y;
    y = x < -1075.0LF ? 0.0LF : y;
    return tv_isnan(x) ? x : y;
}
precise double tv_expm1(double x) {
    double k = floor(x * TVD_INV_LN2_HI + 0.5LF);
    k = clamp(k, -60.0LF, 1100.0LF);
    double hi = x - k * TVD_LN2_HI;
    double lo = k * TVD_LN2_LO;
    double r = hi - lo;
    double c = (hi - r) - lo;  // r + c = x - k ln2 to ~2^-106
    double e = r + r * r * (0.5LF + r * (TVD_EXPM1_P0 + r * (TVD_EXPM1_P1 + r * (TVD_EXPM1_P2 + r * (TVD_EXPM1_P3
        + r * (TVD_EXPM1_P4 + r * (TVD_EXPM1_P5 + r * (TVD_EXPM1_P6 + r * (TVD_EXPM1_P7 + r * (TVD_EXPM1_P8
        + r * (TVD_EXPM1_P9 + r * TVD_EXPM1_P10)))))))))));
    e += c * (1.0LF + e);  // expm1(r + c)
    int n = int(k);
    double y;
    if (n == 0) {
        y = e;
    } else if (n < 1000) {
        double t = tv_pow2(n);
        y = n > 56 ? (e + 1.0LF) * t - 1.0LF : t * e + (t - 1.0LF);
    } else {
        y = (e + 1.0LF) * tv_pow2(n - 1) * 2.0LF;
    }
    y = x > 709.782712893383973096LF ? tv_inf_f64() : y;
    y = x < -40.0LF ? -1.0LF : y;
    return (x == 0.0LF || tv_isnan(x)) ? x : y;
}

// ---- log family -------------------------------------------------------------------------
// Splits finite x > 0 as 2^k * (1 + f) with 1 + f in [sqrt(1/2), sqrt(2)).
void tv_log_reduce(double x, precise out double f, precise out double k) {
    bool subnormal = x < 2.2250738585072014e-308LF;
    double y = subnormal ? x * 18014398509481984.0LF : x;  // 2^54
    uint hx = tv_hi(y) + (0x3ff00000u - 0x3fe6a09eu);
    k = double(int(hx >> 20) - 1023 - (subnormal ? 54 : 0));
    f = tv_from_words((hx & 0x000fffffu) + 0x3fe6a09eu, tv_lo(y)) - 1.0LF;
}
// log(1 + f) - f + f^2/2 for f from tv_log_reduce, as s * (f^2/2 + R(s^2)).
precise double tv_log_tail(double f, double hfsq) {
    double s = f / (2.0LF + f);
    double z = s * s;
    double w = z * (TVD_LOG_P0 + z * (TVD_LOG_P1 + z * (TVD_LOG_P2 + z * (TVD_LOG_P3 + z * (TVD_LOG_P4
        + z * (TVD_LOG_P5 + z * (TVD_LOG_P6 + z * TVD_LOG_P7)))))));
    return s * (hfsq + w);
}
// Special values of the logarithms: NaN for x < 0 (and NaN), -inf at 0, +inf at +inf;
// returns y otherwise.
precise double tv_log_special(double x, double y) {
    y = x == 0.0LF ? -tv_inf_f64() : y;
    y = x < 0.0LF ? tv_nan_f64() : y;
    return (tv_isnan(x) || x == tv_inf_f64()) ? x + x : y;
}
precise double tv_log(double x) {
    double f, k;
    tv_log_reduce(x, f, k);
    double hfsq = 0.5LF * f * f;
    double y = k * TVD_LN2_HI + (f - (hfsq - (tv_log_tail(f, hfsq) + k * TVD_LN2_LO)));
    return tv_log_special(x, y);
}
// log(1 + f) as hi + lo with hi's low 32 bits clear (for log2, log10: fdlibm's e_log2.c).
void tv_log1pf_split(double f, precise out double hi, precise out double lo) {
    double hfsq = 0.5LF * f * f;
    hi = tv_head32(f - hfsq);
    lo = (f - hi) - hfsq + tv_log_tail(f, hfsq);
}
precise double tv_log2(double x) {
    double f, k, hi, lo;
    tv_log_reduce(x, f, k);
    tv_log1pf_split(f, hi, lo);
    double val_hi = hi * TVD_INV_LN2_HI;
    double val_lo = (lo + hi) * TVD_INV_LN2_LO + lo * TVD_INV_LN2_HI;
    double w = k + val_hi;
    val_lo += (k - w) + val_hi;
    return tv_log_special(x, val_lo + w);
}
precise double tv_log10(double x) {
    double f, k, hi, lo;
    tv_log_reduce(x, f, k);
    tv_log1pf_split(f, hi, lo);
    double val_hi = hi * TVD_INV_LN10_HI;
    double y2 = k * TVD_LOG10_2_HI;
    double val_lo = k * TVD_LOG10_2_LO + (lo + hi) * TVD_INV_LN10_LO + lo * TVD_INV_LN10_HI;
    double w = y2 + val_hi;
    val_lo += (y2 - w) + val_hi;
    return tv_log_special(x, val_lo + w);
}
precise double tv_log1p(double x) {
    double u = 1.0LF + x;
    double f, k;
    tv_log_reduce(tv_isfinite(u) && u > 0.0LF ? u : 1.0LF, f, k);
    // The rounding error of 1 + x, relative to u.
    double c = k >= 2.0LF ? 1.0LF - (u - x) : x - (u - 1.0LF);
    c = k < 54.0LF ? c / u : 0.0LF;
    double hfsq = 0.5LF * f * f;
    double y = k * TVD_LN2_HI + (f - (hfsq - (tv_log_tail(f, hfsq) + (k * TVD_LN2_LO + c))));
    y = x == -1.0LF ? -tv_inf_f64() : y;
    y = x < -1.0LF ? tv_nan_f64() : y;
    return (x == 0.0LF || tv_isnan(x) || x == tv_inf_f64()) ? x : y;
}

// ---- trigonometric ----------------------------------------------------------------------
// Payne-Hanek: |x| = M 2^E (M < 2^53 an integer) times 2/pi in fixed point, exactly: the
// 53 x 192-bit product of M and the bits of 2/pi from weight 2^(E-1), kept mod 4.
// Gives r = hi + lo in [-pi/4, pi/4] and the quadrant n (0..3) with |x| = n pi/2 + r (mod 2pi).
// Word j of 2/pi after the point (0 for j < 0: bits before the point).
uint tv_two_over_pi_word(int j) { return j >= 0 && j < 40 ? TVD_TWO_OVER_PI[j] : 0u; }
// Bits s .. s+31 of the 64-bit word w0:w1 (0 <= s <= 31; the shift of w1 is split so that
// s = 0 never shifts by 32).
uint tv_funnel(uint w0, uint w1, int s) { return (w0 << uint(s)) | ((w1 >> 1u) >> uint(31 - s)); }
// acc += v, counting the carry out in `carry`.
void tv_accumulate(inout uint acc, uint v, inout uint carry) {
    uint c;
    acc = uaddCarry(acc, v, c);
    carry += c;
}
// Straight-line code: the window's eight words are read once, and the products of the
// mantissa's low (32-bit) and high (21-bit) words with the six window words are summed limb by
// limb with their carries (so a kernel that inlines it stays small).
void tv_reduce_large(double ax, precise out double hi, precise out double lo, out int n) {
    int e = int((tv_hi(ax) >> 20) & 0x7ffu) - 1075;  // ax = M 2^e, 1.6e6 <= ax: -32 <= e <= 971
    uint mh = (tv_hi(ax) & 0x000fffffu) | 0x00100000u, ml = tv_lo(ax);
    int j = e >> 5, shift = e & 31;
    uint t0 = tv_two_over_pi_word(j - 1), t1 = tv_two_over_pi_word(j), t2 = tv_two_over_pi_word(j + 1);
    uint t3 = tv_two_over_pi_word(j + 2), t4 = tv_two_over_pi_word(j + 3), t5 = tv_two_over_pi_word(j + 4);
    uint t6 = tv_two_over_pi_word(j + 5), t7 = tv_two_over_pi_word(j + 6);
    // Window word k (limb weight 2^(32k)) holds bits e + 32 (5 - k) .. of 2/pi.
    uint b0 = tv_funnel(t6, t7, shift), b1 = tv_funnel(t5, t6, shift), b2 = tv_funnel(t4, t5, shift);
    uint b3 = tv_funnel(t3, t4, shift), b4 = tv_funnel(t2, t3, shift), b5 = tv_funnel(t1, t2, shift);
    uint lh0, ll0, lh1, ll1, lh2, ll2, lh3, ll3, lh4, ll4, lh5, ll5;  // ml * b_k
    uint hh0, hl0, hh1, hl1, hh2, hl2, hh3, hl3, hh4, hl4, hh5, hl5;  // mh * b_k
    umulExtended(ml, b0, lh0, ll0);
    umulExtended(ml, b1, lh1, ll1);
    umulExtended(ml, b2, lh2, ll2);
    umulExtended(ml, b3, lh3, ll3);
    umulExtended(ml, b4, lh4, ll4);
    umulExtended(ml, b5, lh5, ll5);
    umulExtended(mh, b0, hh0, hl0);
    umulExtended(mh, b1, hh1, hl1);
    umulExtended(mh, b2, hh2, hl2);
    umulExtended(mh, b3, hh3, hl3);
    umulExtended(mh, b4, hh4, hl4);
    umulExtended(mh, b5, hh5, hl5);
    // Limb i = ll_i + lh_(i-1) + hl_(i-1) + hh_(i-2) + the carry of limb i - 1.
    uint carry = 0u, next = 0u;
    uint p1 = ll1;
    tv_accumulate(p1, lh0, next);
    tv_accumulate(p1, hl0, next);
    carry = next;
    next = 0u;
    uint p2 = ll2;
    tv_accumulate(p2, lh1, next);
    tv_accumulate(p2, hl1, next);
    tv_accumulate(p2, hh0, next);
    tv_accumulate(p2, carry, next);
    carry = next;
    next = 0u;
    uint p3 = ll3;
    tv_accumulate(p3, lh2, next);
    tv_accumulate(p3, hl2, next);
    tv_accumulate(p3, hh1, next);
    tv_accumulate(p3, carry, next);
    carry = next;
    next = 0u;
    uint p4 = ll4;
    tv_accumulate(p4, lh3, next);
    tv_accumulate(p4, hl3, next);
    tv_accumulate(p4, hh2, next);
    tv_accumulate(p4, carry, next);
    carry = next;
    next = 0u;
    uint p5 = ll5;
    tv_accumulate(p5, lh4, next);
    tv_accumulate(p5, hl4, next);
    tv_accumulate(p5, hh3, next);
    tv_accumulate(p5, carry, next);
    carry = next;
    uint p6 = lh5 + hl5 + hh4 + carry;  // only its two low bits are kept (mod 4)
    // The two bits of 2/pi before the window contribute M * (2 b1 + b0) to the integer part.
    uint before = tv_funnel(t0, t1, shift) & 3u;
    uint q = (p6 + (ml & 3u) * before) & 3u;
    uint w5 = p5, w4 = p4, w3 = p3, w2 = p2;
    double sign = 1.0LF;
    if (w5 >= 0x80000000u) {  // fraction >= 1/2: take 1 - fraction, next quadrant
        q = (q + 1u) & 3u;
        sign = -1.0LF;
        uint c;
        w2 = uaddCarry(~w2, 1u, c);
        w3 = uaddCarry(~w3, c, c);
        w4 = uaddCarry(~w4, c, c);
        w5 = ~w5 + c;
    }
    double s, err;
    tv_two_sum(double(w5) * 2.3283064365386963e-10LF, double(w4) * 5.421010862427522e-20LF, s, err);
    err += double(w3) * 1.2621774483536189e-29LF + double(w2) * 2.938735877055719e-39LF;
    double fh = s + err, fl = err - (fh - s);  // fraction = fh + fl
    double ph, pl;
    tv_two_product(fh, 1.5707963267948966LF, ph, pl);
    pl += fh * 6.123233995736766e-17LF + fl * 1.5707963267948966LF;
    hi = sign * (ph + pl);
    lo = sign * (pl - ((ph + pl) - ph));
    n = int(q);
}
// x = n pi/2 + hi + lo with |hi + lo| <= ~pi/4 (finite x).
void tv_reduce_pio2(double x, precise out double hi, precise out double lo, out int n) {
    double ax = tv_abs(x);
    if (ax < 1.6e6LF) {  // Cody-Waite with pi/2 in four parts: k * part exact for k < 2^20
        double k = floor(ax * 0.6366197723675814LF + 0.5LF);
        double t1 = ax - k * TVD_PIO2_PART1;
        double s, e, s2, e2;
        tv_two_sum(t1, -k * TVD_PIO2_PART2, s, e);
        tv_two_sum(s, -k * TVD_PIO2_PART3, s2, e2);
        double tail = (e + e2) - k * TVD_PIO2_PART4;
        hi = s2 + tail;
        lo = tail - (hi - s2);
        n = int(k) & 3;
    } else {
        tv_reduce_large(ax, hi, lo, n);
    }
    if (x < 0.0LF) {
        hi = -hi;
        lo = -lo;
        n = (4 - n) & 3;
    }
}
// sin(hi + lo) and cos(hi + lo) for |hi + lo| <= ~pi/4.
precise double tv_sin_kernel(double x, double y) {
    double z = x * x;
    double p = TVD_SIN_P1 + z * (TVD_SIN_P2 + z * (TVD_SIN_P3 + z * (TVD_SIN_P4 + z * (TVD_SIN_P5 + z * TVD_SIN_P6))));
    double v = z * x;
    return x + (v * (TVD_SIN_P0 + z * p) + y * (1.0LF - 0.5LF * z));
}
precise double tv_cos_kernel(double x, double y) {
    double z = x * x;
    double p = z * z * (TVD_COS_P0 + z * (TVD_COS_P1 + z * (TVD_COS_P2 + z * (TVD_COS_P3 + z * (TVD_COS_P4
        + z * (TVD_COS_P5 + z * TVD_COS_P6))))));
    double hz = 0.5LF * z;
    double w = 1.0LF - hz;
    return w + (((1.0LF - w) - hz) + (p - x * y));
}
precise double tv_sin(double x) {
    double hi, lo;
    int n;
    tv_reduce_pio2(tv_isfinite(x) ? x : 0.0LF, hi, lo, n);
    double s = tv_sin_kernel(hi, lo), c = tv_cos_kernel(hi, lo);
    double y = (n & 1) == 0 ? s : c;
    y = (n & 2) == 0 ? y : -y;
    return x == 0.0LF ? x : (tv_isfinite(x) ? y : tv_nan_f64());
}
precise double tv_cos(double x) {
    double hi, lo;
    int n;
    tv_reduce_pio2(tv_isfinite(x) ? x : 0.0LF, hi, lo, n);
    double s = tv_sin_kernel(hi, lo), c = tv_cos_kernel(hi, lo);
    double y = (n & 1) == 0 ? c : -s;
    y = (n & 2) == 0 ? y : -y;
    return tv_isfinite(x) ? y : tv_nan_f64();
}
// sin(x) and cos(x) from one reduction, exactly tv_sin(x) and tv_cos(x) (the same steps):
// for kernels that need both (the tape compiler: a Sin and a Cos of one operand, or a Sin and
// its partial).
void tv_sincos(double x, precise out double s, precise out double c) {
    double hi, lo;
    int n;
    tv_reduce_pio2(tv_isfinite(x) ? x : 0.0LF, hi, lo, n);
    double ks = tv_sin_kernel(hi, lo), kc = tv_cos_kernel(hi, lo);
    double ys = (n & 1) == 0 ? ks : kc;
    ys = (n & 2) == 0 ? ys : -ys;
    double yc = (n & 1) == 0 ? kc : -ks;
    yc = (n & 2) == 0 ? yc : -yc;
    s = x == 0.0LF ? x : (tv_isfinite(x) ? ys : tv_nan_f64());
    c = tv_isfinite(x) ? yc : tv_nan_f64();
}
precise double tv_tan(double x) {
    double hi, lo;
    int n;
    tv_reduce_pio2(tv_isfinite(x) ? x : 0.0LF, hi, lo, n);
    double s = tv_sin_kernel(hi, lo), c = tv_cos_kernel(hi, lo);
    double y = (n & 1) == 0 ? s / c : -c / s;
    return x == 0.0LF ? x : (tv_isfinite(x) ? y : tv_nan_f64());
}

#include "math_f64_inverse.glsl"
#include "math_f64_power.glsl"
#include "math_f64_special.glsl"
