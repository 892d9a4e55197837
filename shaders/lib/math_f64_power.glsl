// Double precision: pow, powi, cbrt, hypot, fmod (part of math_f64.glsl, same GLSL/C++
// subset).

// The unbiased exponent of finite x != 0 (subnormals included).
int tv_ilogb(double x) {
    bool subnormal = tv_abs(x) < 2.2250738585072014e-308LF;
    double y = subnormal ? x * 18014398509481984.0LF : x;  // 2^54
    return int((tv_hi(y) >> 20) & 0x7ffu) - 1023 - (subnormal ? 54 : 0);
}

// log2(ax) as t1 + t2 (t1 with its low 32 bits clear) to ~2^-64 relative, for finite ax > 0
// (the structure of fdlibm's e_pow.c with own coefficients).
void tv_log2_extended(double ax, precise out double t1, precise out double t2) {
    bool subnormal = ax < 2.2250738585072014e-308LF;
    double b = subnormal ? ax * 9007199254740992.0LF : ax;  // 2^53
    uint hb = tv_hi(b);
    int n = int((hb >> 20) & 0x7ffu) - 1023 - (subnormal ? 53 : 0);
    uint ix = hb & 0x000fffffu;
    bool mid = ix > 0x3988eu && ix < 0xbb67au;  // m in (sqrt(3/2), sqrt(3)): around 1.5
    bool top = ix >= 0xbb67au;                  // m in [sqrt(3), 2): use m / 2 around 1
    n += top ? 1 : 0;
    double m = tv_from_words(ix | (top ? 0x3fe00000u : 0x3ff00000u), tv_lo(b));
    double bp = mid ? 1.5LF : 1.0LF;
    double dp_h = mid ? TVD_POW_LOG2_1_5_HI : 0.0LF;
    double dp_l = mid ? TVD_POW_LOG2_1_5_LO : 0.0LF;
    // s = (m - bp) / (m + bp) as s_h + s_l.
    double u = m - bp;
    double v = 1.0LF / (m + bp);
    double ss = u * v;
    double s_h = tv_head32(ss);
    double t_h = tv_head32(m + bp);
    double t_l = m - (t_h - bp);
    double s_l = v * ((u - s_h * t_h) - s_h * t_l);
    // (3/2) log(m / bp) = 3s + s^3 + s z^2 P(z), z = s^2.
    double z = ss * ss;
    double r = z * z * (TVD_POW_LOG_P0 + z * (TVD_POW_LOG_P1 + z * (TVD_POW_LOG_P2 + z * (TVD_POW_LOG_P3
        + z * (TVD_POW_LOG_P4 + z * TVD_POW_LOG_P5)))));
    r += s_l * (s_h + ss);
    double s2 = s_h * s_h;
    double th = tv_head32(3.0LF + s2 + r);
    double tl = r - ((th - 3.0LF) - s2);
    double uu = s_h * th;
    double vv = s_l * th + tl * ss;
    double p_h = tv_head32(uu + vv);
    double p_l = vv - (p_h - uu);
    // times 2 / (3 ln2), plus log2(bp) and n.
    double z_h = TVD_POW_CP_HI * p_h;
    double z_l = TVD_POW_CP_LO * p_h + p_l * (TVD_POW_CP_HI + TVD_POW_CP_LO) + dp_l;
    double t = double(n);
    t1 = tv_head32(((z_h + z_l) + dp_h) + t);
    t2 = z_l - (((t1 - t) - dp_h) - z_h);
}
// 2^(p_h + p_l) for |p_h + p_l| < 1100, p_h with at most 42 significant bits.
precise double tv_exp2_extended(double p_h, double p_l) {
    double k = floor(p_h + 0.5LF);
    double f = p_h - k;  // exact
    double t = tv_head32(p_l + f);
    double u = t * TVD_LN2_HI;  // exact
    double v = (p_l - (t - f)) * 0.6931471805599453LF + t * TVD_LN2_LO;
    double z = u + v;
    double w = v - (z - u);
    return tv_scale(tv_exp_kernel(z, -w), int(k));
}
// pow for finite ax > 0 and finite y.
precise double tv_pow_positive(double ax, double y) {
    double t1, t2;
    tv_log2_extended(ax, t1, t2);
    double y1 = tv_head32(y);
    double p_l = (y - y1) * t1 + y * t2;
    double p_h = y1 * t1;  // exact
    double z = p_h + p_l;
    bool finite = tv_abs(z) < 1100.0LF;
    double e = tv_exp2_extended(finite ? p_h : 0.0LF, finite ? p_l : 0.0LF);
    return z >= 1100.0LF ? tv_inf_f64() : (z <= -1100.0LF ? 0.0LF : e);
}
precise double tv_pow(double x, double y) {
    double ax = tv_abs(x), ay = tv_abs(y);
    bool y_integer = tv_trunc(y) == y;
    bool y_odd = y_integer && ay < 18014398509481984.0LF && tv_trunc(0.5LF * y) != 0.5LF * y;
    bool regular = tv_isfinite(x) && x != 0.0LF && tv_isfinite(y);
    double r = tv_pow_positive(regular ? ax : 1.0LF, regular ? y : 0.0LF);
    r = x < 0.0LF ? (y_integer ? (y_odd ? -r : r) : tv_nan_f64()) : r;
    // x = +-0 and x = +-inf: 0 or inf by the sign of y, with x's sign for odd integers y.
    double zero_or_inf = (x == 0.0LF) == (y < 0.0LF) ? tv_inf_f64() : 0.0LF;
    r = (x == 0.0LF || tv_isinf(x)) ? (y_odd ? tv_copysign(zero_or_inf, x) : zero_or_inf) : r;
    // y = +-inf: 1 for |x| = 1, else 0 or inf.
    r = tv_isinf(y) ? (ax == 1.0LF ? 1.0LF : ((ax < 1.0LF) == (y < 0.0LF) ? tv_inf_f64() : 0.0LF)) : r;
    r = (tv_isnan(x) || tv_isnan(y)) ? x + y : r;
    return (y == 0.0LF || x == 1.0LF) ? 1.0LF : r;
}
// std::pow(x, double(n)) (what the reference VM computes), with the exact small cases fast.
precise double tv_powi(double x, int n) {
    return n == 1 ? x : (n == 2 ? x * x : tv_pow(x, double(n)));
}

precise double tv_cbrt(double x) {
    double a = tv_abs(x);
    int e = tv_ilogb(tv_isfinite(a) && a != 0.0LF ? a : 1.0LF);
    int q = e >= 0 ? e / 3 : -((2 - e) / 3);  // floor(e / 3)
    double m = tv_scale(tv_isfinite(a) && a != 0.0LF ? a : 1.0LF, -3 * q);  // m in [1, 8)
    double t = tv_from_words(tv_hi(m) / 3u + 0x2a9f7893u, 0u);  // ~5 bits (fdlibm's estimate)
    for (int i = 0; i < 2; ++i) {  // Halley: 15 then 45 bits
        double t3 = t * t * t;
        t = t * (t3 + 2.0LF * m) / (2.0LF * t3 + m);
    }
    t = t + (m / (t * t) - t) * 0.3333333333333333LF;  // Newton, last bits
    double y = tv_copysign(tv_scale(t, q), x);
    return (x == 0.0LF || !tv_isfinite(x)) ? x + x : y;
}

precise double tv_hypot(double x, double y) {
    double a = tv_abs(x), b = tv_abs(y);
    bool swap = b > a;
    double big = swap ? b : a, small = swap ? a : b;
    double s = big > 3.2733906078961419e150LF ? 2.409919865102884e-181LF        // > 2^500: 2^-600
        : (big < 3.0549363634996047e-151LF ? 4.149515568880993e180LF : 1.0LF);  // < 2^-500: 2^600
    double bs = big * s, sm = small * s;
    double p1, e1, p2, e2, h, e;
    tv_two_product(bs, bs, p1, e1);
    tv_two_product(sm, sm, p2, e2);
    tv_two_sum(p1, p2, h, e);
    e += e1 + e2;
    double r0 = sqrt(h + e);
    double q, qe;
    tv_two_product(r0, r0, q, qe);
    double r = r0 + (((h - q) - qe) + e) / (2.0LF * r0);
    r = r / s;
    r = small == 0.0LF ? big : r;
    r = (tv_isnan(x) || tv_isnan(y)) ? x + y : r;
    return (tv_isinf(x) || tv_isinf(y)) ? tv_inf_f64() : r;
}

// Exact fmod (C's): subtracts the largest |y| 2^k <= r while r >= |y|, each step exact.
// Takes up to ilogb(x) - ilogb(y) + 1 steps (a loop of up to ~2100 for extreme ratios).
precise double tv_fmod(double x, double y) {
    double ax = tv_abs(x), ay = tv_abs(y);
    bool regular = tv_isfinite(x) && tv_isfinite(y) && y != 0.0LF;
    double r = regular ? ax : 0.0LF;
    double d = regular ? ay : 1.0LF;
    int ed = tv_ilogb(d);
    while (r >= d) {
        int k = tv_ilogb(r) - ed;
        double t = tv_scale(d, k);  // exact: t <= 2 r
        t = t > r ? tv_scale(d, k - 1) : t;
        r -= t;
    }
    r = tv_copysign(r, x);
    r = regular ? r : tv_nan_f64();
    r = (tv_isfinite(x) && tv_isinf(y)) ? x : r;
    return (tv_isnan(x) || tv_isnan(y)) ? x + y : r;
}
