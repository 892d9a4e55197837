// Double precision: inverse trigonometric and hyperbolic functions (part of math_f64.glsl,
// same GLSL/C++ subset).

// asin(x) - x for |x| <= 1/2, as x * z * P(z), z = x^2.
precise double tv_asin_tail(double x, double z) {
    double p = TVD_ASIN_P0 + z * (TVD_ASIN_P1 + z * (TVD_ASIN_P2 + z * (TVD_ASIN_P3 + z * (TVD_ASIN_P4
        + z * (TVD_ASIN_P5 + z * (TVD_ASIN_P6 + z * (TVD_ASIN_P7 + z * (TVD_ASIN_P8 + z * (TVD_ASIN_P9
        + z * (TVD_ASIN_P10 + z * (TVD_ASIN_P11 + z * TVD_ASIN_P12)))))))))));
    return x * z * p;
}
// 2 asin(sqrt(z)) for z in [0, 1/4] as hi + lo (with a corrected square root, fdlibm's idea).
void tv_asin_twice_sqrt(double z, precise out double hi, precise out double lo) {
    double s = sqrt(z);
    double df = tv_head32(s);
    double c = s == 0.0LF ? 0.0LF : (z - df * df) / (s + df);  // s = df + c to ~2^-80
    hi = 2.0LF * df;
    lo = 2.0LF * (c + tv_asin_tail(s, z));
}
precise double tv_asin(double x) {
    double ax = tv_abs(x);
    double small = ax + tv_asin_tail(ax, ax * ax);
    double hi, lo;
    tv_asin_twice_sqrt(0.5LF * (1.0LF - ax), hi, lo);  // asin(ax) = pi/2 - 2 asin(sqrt(z))
    double large = TVD_PIO4_HI - ((lo - TVD_PIO2_LO) - (TVD_PIO4_HI - hi));
    double y = ax <= 0.5LF ? small : large;
    y = ax > 1.0LF ? tv_nan_f64() : tv_copysign(y, x);
    return (x == 0.0LF || tv_isnan(x)) ? x : y;
}
precise double tv_acos(double x) {
    double ax = tv_abs(x);
    double middle = TVD_PIO2_HI - (x - (TVD_PIO2_LO - tv_asin_tail(x, x * x)));
    double hi, lo;
    tv_asin_twice_sqrt(0.5LF * (1.0LF - ax), hi, lo);
    double positive = hi + lo;                                     // acos(x) = 2 asin(sqrt((1-x)/2))
    double negative = TVD_PI_HI - ((hi - TVD_PI_LO) + lo);         // pi - the same
    double y = ax <= 0.5LF ? middle : (x > 0.0LF ? positive : negative);
    y = ax > 1.0LF ? tv_nan_f64() : y;
    return tv_isnan(x) ? x : y;
}
// atan(t) - t for |t| <= tan(pi/8), as t * z * P(z).
precise double tv_atan_tail(double t) {
    double z = t * t;
    double p = TVD_ATAN_P0 + z * (TVD_ATAN_P1 + z * (TVD_ATAN_P2 + z * (TVD_ATAN_P3 + z * (TVD_ATAN_P4
        + z * (TVD_ATAN_P5 + z * (TVD_ATAN_P6 + z * (TVD_ATAN_P7 + z * (TVD_ATAN_P8 + z * (TVD_ATAN_P9
        + z * (TVD_ATAN_P10 + z * (TVD_ATAN_P11 + z * TVD_ATAN_P12)))))))))));
    return t * z * p;
}
// atan(a) for a >= 0 (a may be +inf): reduced to |t| <= tan(pi/8) around 0, pi/4 or pi/2.
precise double tv_atan_positive(double a) {
    // a <= tan(pi/8): atan(a); a <= tan(3pi/8): pi/4 + atan((a-1)/(a+1)); else pi/2 - atan(1/a).
    bool low = a <= 0.41421356237309503LF;
    bool high = a > 2.414213562373095LF;
    double t = low ? a : (high ? -1.0LF / a : (a - 1.0LF) / (a + 1.0LF));
    double base_hi = low ? 0.0LF : (high ? TVD_PIO2_HI : TVD_PIO4_HI);
    double base_lo = low ? 0.0LF : (high ? TVD_PIO2_LO : TVD_PIO4_LO);
    return base_hi + (t + (tv_atan_tail(t) + base_lo));
}
precise double tv_atan(double x) {
    double y = tv_copysign(tv_atan_positive(tv_abs(x)), x);
    return (x == 0.0LF || tv_isnan(x)) ? x : y;
}
precise double tv_atan2(double y, double x) {
    double ay = tv_abs(y), ax = tv_abs(x);
    double q = ay / ax;
    q = (tv_isinf(ay) && tv_isinf(ax)) ? 1.0LF : q;
    q = ay == 0.0LF ? 0.0LF : q;
    double a = tv_atan_positive(q);
    a = tv_signbit(x) ? TVD_PI_HI - (a - TVD_PI_LO) : a;
    return (tv_isnan(x) || tv_isnan(y)) ? x + y : tv_copysign(a, y);
}

// ---- hyperbolic -------------------------------------------------------------------------
// exp(a) / 2 for a >= 0 up to the overflow threshold of cosh (exp(a/2)^2 / 2 near the top).
precise double tv_half_exp(double a) {
    double e = tv_exp(0.5LF * a);
    return a < 709.0LF ? 0.5LF * tv_exp(a) : (0.5LF * e) * e;
}
precise double tv_sinh(double x) {
    double a = tv_abs(x);
    double t = tv_expm1(a);
    double small = 0.5LF * (2.0LF * t - t * t / (t + 1.0LF));  // a < 1
    double middle = 0.5LF * (t + t / (t + 1.0LF));
    double y = a < 1.0LF ? small : (a < 22.0LF ? middle : tv_half_exp(a));
    y = tv_copysign(y, x);
    return (x == 0.0LF || tv_isnan(x)) ? x : y;
}
precise double tv_cosh(double x) {
    double a = tv_abs(x);
    double t = tv_expm1(a);
    double w = 1.0LF + t;
    double small = 1.0LF + (t * t) / (w + w);  // a < ln2 / 2
    double e = tv_exp(a);
    double middle = 0.5LF * e + 0.5LF / e;
    double y = a < 0.34657359027997264LF ? small : (a < 22.0LF ? middle : tv_half_exp(a));
    return tv_isnan(x) ? x : y;
}
// One expm1, of -2|x| below 1 and of 2|x| above (the branch's own argument: the same values as
// evaluating both, at half the cost).
precise double tv_tanh(double x) {
    double a = tv_abs(x);
    double t = tv_expm1(a < 1.0LF ? -2.0LF * a : 2.0LF * a);
    double small = -t / (t + 2.0LF);  // a < 1
    double middle = 1.0LF - 2.0LF / (t + 2.0LF);
    double y = a < 1.0LF ? small : (a < 22.0LF ? middle : 1.0LF);
    y = tv_copysign(y, x);
    return (x == 0.0LF || tv_isnan(x)) ? x : y;
}
precise double tv_asinh(double x) {
    double a = tv_abs(x);
    double z = a * a;
    double small = tv_log1p(a + z / (1.0LF + sqrt(1.0LF + z)));              // a < 2
    double middle = tv_log(2.0LF * a + 1.0LF / (sqrt(z + 1.0LF) + a));      // a < 2^28
    double large = tv_log(a) + 0.6931471805599453LF;
    double y = a < 2.0LF ? small : (a < 268435456.0LF ? middle : large);
    y = tv_copysign(y, x);
    return (x == 0.0LF || tv_isnan(x) || tv_isinf(x)) ? x : y;
}
precise double tv_acosh(double x) {
    double t = x - 1.0LF;
    double small = tv_log1p(t + sqrt(2.0LF * t + t * t));                  // x < 2
    double middle = tv_log(2.0LF * x - 1.0LF / (x + sqrt(x * x - 1.0LF)));  // x < 2^28
    double large = tv_log(x) + 0.6931471805599453LF;
    double y = x < 2.0LF ? small : (x < 268435456.0LF ? middle : large);
    y = x < 1.0LF ? tv_nan_f64() : y;
    return (tv_isnan(x) || x == tv_inf_f64()) ? x : y;
}
precise double tv_atanh(double x) {
    double a = tv_abs(x);
    double small = 0.5LF * tv_log1p(2.0LF * a + 2.0LF * a * a / (1.0LF - a));  // a < 1/2
    double large = 0.5LF * tv_log1p(2.0LF * a / (1.0LF - a));
    double y = a < 0.5LF ? small : large;
    y = a > 1.0LF ? tv_nan_f64() : (a == 1.0LF ? tv_inf_f64() : y);
    y = tv_copysign(y, x);
    return (x == 0.0LF || tv_isnan(x)) ? x : y;
}
