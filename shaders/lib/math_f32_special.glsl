// Float erf, erfc and lgamma (included by math_f32.glsl): the structure of
// math_f64_special.glsl in float arithmetic with float fits (fit_special.py): erf(x) = x P(x^2)
// below 0.5 (degree 5), erfcx on seven pieces of [0.5, 10.5] (degree 8), exp(-x^2) from a
// 12-bit head (exact square), scaled by e^-60 past 9 (subnormal results); lgamma(2 + t) =
// t P(t) (degree 9), recurrence below 10, Stirling above, reflection for x < 0.
const float TVF_ERF_P[6] = float[6](
    1.083075238f, -0.04364205889f, 0.001613071436f, -4.762336576e-5f, 1.152222981e-6f,
    -2.34818551e-8f);
const float TVF_ERFCX_P[63] = float[63](
    0.5069376503f, -0.09199317279f, 0.01443488321f, -0.002028690177f, 0.0002609007144f,
    -3.114352961e-5f, 3.488007373e-6f, -3.775116937e-7f, 3.794803709e-8f, 0.3678229165f,
    -0.05220546897f, 0.006674723217f, -0.0007846608331f, 8.59819161e-5f, -8.867714086e-6f,
    8.673704031e-7f, -8.233212566e-8f, 7.349293503e-9f, 0.2694299852f, -0.0442562709f,
    0.006770901087f, -0.0009751671633f, 0.000133247536f, -1.73713302e-5f, 2.172533953e-6f,
    -2.694551333e-7f, 3.12689899e-8f, 0.1936620963f, -0.03161881862f, 0.004939648227f,
    -0.000741794362f, 0.0001074741284f, -1.506096959e-5f, 2.048780175e-6f, -2.811814043e-7f,
    3.616146811e-8f, 0.1369994576f, -0.02428762917f, 0.004199306141f, -0.0007092539869f,
    0.0001171826188f, -1.894376126e-5f, 3.006035831e-6f, -4.936416983e-7f, 7.539068616e-8f,
    0.0946975996f, -0.01764266771f, 0.003244638381f, -0.0005893213693f, 0.0001057536315f,
    -1.872757506e-5f, 3.284639532e-6f, -6.097169949e-7f, 1.045099718e-7f, 0.06406571555f,
    -0.01265100276f, 0.002482760176f, -0.0004842992414f, 9.390446474e-5f, -1.805806716e-5f,
    3.461050624e-6f, -7.171189268e-7f, 1.357757767e-7f);
const float TVF_ERFCX_BOUNDS[8] = float[8](
    0.5f, 1.0f, 1.5f, 2.25f, 3.25f, 4.75f, 7.0f, 10.5f);
const float TVF_LGAMMA_P[10] = float[10](
    0.422784335f, 0.1612335167f, -0.01683807037f, 0.002572599934f, -0.0004616358847f,
    9.03373538e-5f, -1.852906304e-5f, 3.957165179e-6f, -9.9147303e-7f, 2.216266015e-7f);

precise float tv_erf_small(float x) {
    float u = (x * x - 0.125f) * 8.0f;
    float p = TVF_ERF_P[5];
    for (int i = 4; i >= 0; --i) p = p * u + TVF_ERF_P[i];
    return x * p;
}
// erfc(x) exp(x^2) for 0.5 <= x < 10.5.
precise float tv_erfcx(float x) {
    int k = 0;
    for (int i = 1; i < 7; ++i) k = x >= TVF_ERFCX_BOUNDS[i] ? i : k;
    float lo = TVF_ERFCX_BOUNDS[k];
    float h = 0.5f * (TVF_ERFCX_BOUNDS[k + 1] - lo);
    float u = (x - (lo + h)) / h;
    float p = TVF_ERFCX_P[9 * k + 8];
    for (int i = 7; i >= 0; --i) p = p * u + TVF_ERFCX_P[9 * k + i];
    return p;
}
// erfc(x) for x >= 0.5 (0 from 10.5 on).
precise float tv_erfc_positive(float x) {
    float xh = tv_head12(x);
    float lo = (x - xh) * (x + xh);
    bool tiny = x > 9.0f;
    float e = tv_exp((tiny ? 60.0f : 0.0f) - xh * xh) * tv_exp(-lo);
    float r = e * tv_erfcx(x < 10.5f ? x : 10.0f);
    r = tiny ? r * 8.756510763e-27f : r;  // e^-60
    return x < 10.5f ? r : 0.0f;
}
precise float tv_erf(float x) {
    float ax = tv_abs(x);
    float r = ax < 0.5f ? tv_erf_small(x) : tv_copysign(1.0f - tv_erfc_positive(ax), x);
    return tv_isnan(x) ? x : r;
}
precise float tv_erfc(float x) {
    float ax = tv_abs(x);
    float e = tv_erfc_positive(ax);
    float r = ax < 0.5f ? 1.0f - tv_erf_small(x) : (x < 0.0f ? 2.0f - e : e);
    return tv_isnan(x) ? x : r;
}

precise float tv_lgamma_near2(float t) {
    float u = 2.0f * t;
    float p = TVF_LGAMMA_P[9];
    for (int i = 8; i >= 0; --i) p = p * u + TVF_LGAMMA_P[i];
    return t * p;
}
precise float tv_lgamma_positive(float x) {
    if (x < 0.5f) return tv_lgamma_near2(x) - tv_log(x) - tv_log1p(x);
    if (x < 1.5f) return tv_lgamma_near2(x - 1.0f) - tv_log(x);
    if (x <= 2.5f) return tv_lgamma_near2(x - 2.0f);
    if (x < 10.0f) {
        float n = tv_floor(x - 1.5f);
        float product = 1.0f;
        for (int i = 1; i <= 8; ++i) product *= float(i) <= n ? x - float(i) : 1.0f;
        return tv_lgamma_near2((x - n) - 2.0f) + tv_log(product);
    }
    float w = 1.0f / x;
    float v = w * w;
    float s = w * (0.08333333333f + v * (-0.002777777778f + v * (0.0007936507937f + v * -0.0005952380952f)));
    return (x - 0.5f) * (tv_log(x) - 1.0f) + 0.4189385332f + s;
}
precise float tv_lgamma(float x) {
    float ax = tv_abs(x);
    if (tv_isnan(x)) return x;
    if (tv_isinf(x)) return tv_inf_f32();
    if (ax < 2.98023223876953125e-08f) return -tv_log(ax);  // 2^-25
    float positive = tv_lgamma_positive(ax);
    if (x > 0.0f) return positive;
    float r = x - tv_round(x);
    if (r == 0.0f) return tv_inf_f32();
    float s = tv_abs(tv_sin(3.14159265f * r));
    return 1.144729886f - tv_log(ax) - tv_log(s) - positive;
}
