// Double erf, erfc and lgamma (included by math_f64.glsl). Coefficients from fit_special.py
// (mpmath Chebyshev fits, printed as monomials in u in [-1, 1]); accuracy in README.md.
//
// erf(x) = x P(x^2) for |x| < 0.5; otherwise from erfc(|x|) = exp(-x^2) erfcx(|x|), with
// erfcx(x) = erfc(x) exp(x^2) a degree-16 fit on each of ten pieces of [0.5, 28], and
// exp(-x^2) = exp(-xh^2) exp(-(x - xh)(x + xh)) with xh^2 exact (21-bit head). Past x = 26
// (subnormal results) exp(600 - x^2) is computed instead and scaled by e^-600 last, so only
// the final product rounds into the subnormals.
//
// lgamma(x) for x > 0: lgamma(2 + t) = t P(t) (|t| <= 0.5, degree 18) after the recurrence
// down to [1.5, 2.5] (x < 10; the shift's argument is exact, so lgamma(1) = lgamma(2) = 0
// exactly and the error stays relative near both zeros), Stirling's series past 10; for
// x < 0 the reflection Gamma(x) Gamma(-x) = -pi / (x sin(pi x)) with sin(pi r),
// r = x - round(x) exact. +inf at 0 and at the negative integers, as C's lgamma.
const double TVD_ERF_P[9] = double[9](
    1.0830752376761712LF, -0.043642058886697886LF, 0.0016130716680617082LF,
    -4.762336934519552e-05LF, 1.151603779519474e-06LF, -2.3472289797042594e-08LF,
    4.1270252134730293e-10LF, -6.37686858732805e-12LF, 8.777299809787717e-14LF);
const double TVD_ERFCX_P[170] = double[170](
    0.5069376502931449LF, -0.09199317291394885LF, 0.014434883221956143LF, -0.002028688468670017LF,
    0.00026090055674831536LF, -3.114966996062544e-05LF, 3.4885738930506322e-06LF,
    -3.693562193204623e-07LF, 3.719539429927566e-08LF, -3.580139366634323e-09LF,
    3.3068719940073687e-10LF, -2.9410027836191583e-11LF, 2.5256004719947655e-12LF,
    -2.098775696242263e-13LF, 1.6922598911156157e-14LF, -1.3586639402228971e-15LF,
    1.0350358504999337e-16LF, 0.3678229164523611LF, -0.052205468991152464LF, 0.006674723218537425LF,
    -0.0007846605374360558LF, 8.598189160491081e-05LF, -8.868776985287435e-06LF,
    8.67458472468182e-07LF, -8.091936826758649e-08LF, 7.2322129865092565e-09LF,
    -6.216430995940928e-10LF, 5.1549968311929906e-11LF, -4.1351549744960405e-12LF,
    3.216066943017308e-13LF, -2.4294597388122373e-14LF, 1.7863904846671667e-15LF,
    -1.3067838923010475e-16LF, 9.132568513994301e-18LF, 0.2694299851646704LF,
    -0.044256271022999394LF, 0.006770901100735334LF, -0.0009751655174365055LF,
    0.00013324735642168196LF, -1.7377241362199158e-05LF, 2.1731788879988932e-06LF,
    -2.616166174491601e-07LF, 3.041352425564008e-08LF, -3.4234059997778915e-09LF,
    3.739638708293361e-10LF, -3.9722632814111715e-11LF, 4.109833423409035e-12LF,
    -4.1454447385679815e-13LF, 4.087336171508777e-14LF, -4.0929250335670556e-15LF,
    3.858458511627115e-16LF, 0.1936620962790687LF, -0.03161881878031742LF, 0.004939648246830716LF,
    -0.0007417922371247488LF, 0.00010747386783057607LF, -1.5068596405634269e-05LF,
    2.049715633285588e-06LF, -2.7108288747548476e-07LF, 3.492248457767506e-08LF,
    -4.389400740065768e-09LF, 5.390388360803758e-10LF, -6.475945001900123e-11LF,
    7.6195591203513e-12LF, -8.779016058701655e-13LF, 9.937609027673675e-14LF,
    -1.1625628640428435e-14LF, 1.268069912696435e-15LF, 0.13699945762506138LF,
    -0.02428762957126609LF, 0.004199306200298758LF, -0.0007092486886272892LF,
    0.00011718183589312821LF, -1.896275186907514e-05LF, 3.0088423605352734e-06LF,
    -4.685773861718111e-07LF, 7.168541904167006e-08LF, -1.0781887377371294e-08LF,
    1.5954724549454546e-09LF, -2.3244768888259162e-10LF, 3.3359473782322344e-11LF,
    -4.705659510567556e-12LF, 6.565304705869397e-13LF, -9.793200318664504e-14LF,
    1.3279477421951234e-14LF, 0.09469759959536303LF, -0.017642668331246662LF,
    0.003244638486047906LF, -0.0005893130753408977LF, 0.0001057522382869605LF,
    -1.8757264418581472e-05LF, 3.289627351375608e-06LF, -5.706520112705384e-07LF,
    9.794538796451396e-08LF, -1.6638556044405625e-08LF, 2.7982858269735133e-09LF,
    -4.661093621222735e-10LF, 7.689406115576346e-11LF, -1.2500434434062222e-11LF,
    2.025174162525137e-12LF, -3.639344097740127e-13LF, 5.782676412846468e-14LF,
    0.06592512249998035LF, -0.01147812689376989LF, 0.001985407729389675LF,
    -0.00034122464084264647LF, 5.8276610191840546e-05LF, -9.891464779290105e-06LF,
    1.6687323288051897e-06LF, -2.7984530762118657e-07LF, 4.665503166414204e-08LF,
    -7.733382608642218e-09LF, 1.274598783320121e-09LF, -2.089328565058488e-10LF,
    3.405570224825449e-11LF, -5.491090528277345e-12LF, 8.855649444244203e-13LF,
    -1.591698799177587e-13LF, 2.5372315493654283e-14LF, 0.04499209900102792LF,
    -0.008941730174536372LF, 0.001771550802162568LF, -0.00034990068218189826LF,
    6.889809767396941e-05LF, -1.3525484522900436e-05LF, 2.6472396311144334e-06LF,
    -5.165828443516512e-07LF, 1.0050881308460263e-07LF, -1.9498151896149985e-08LF,
    3.771598634427811e-09LF, -7.277413735612472e-10LF, 1.3996399590907213e-10LF,
    -2.653654544257982e-11LF, 5.07567504387487e-12LF, -1.143072629832555e-12LF,
    2.1721317660073792e-13LF, 0.03129571781590521LF, -0.0051999771687750536LF,
    0.000862693229293971LF, -0.00014290675806738853LF, 2.3637064003921254e-05LF,
    -3.903746557618603e-06LF, 6.437539695514503e-07LF, -1.0600133399542163e-07LF,
    1.742844656114331e-08LF, -2.86130334774953e-09LF, 4.690634389687196e-10LF,
    -7.679381212682402e-11LF, 1.2552341156289342e-11LF, -2.0368415307986093e-12LF,
    3.3198106277507186e-13LF, -6.084694514391267e-14LF, 9.885347401202293e-15LF,
    0.023009011874778183LF, -0.0032815483098357634LF, 0.0004676278976160214LF,
    -6.658304994284552e-05LF, 9.472606598679378e-06LF, -1.3465383852239868e-06LF,
    1.9125476648629842e-07LF, -2.7142569472805478e-08LF, 3.848891505087219e-09LF,
    -5.453395402909091e-10LF, 7.72051575736194e-11LF, -1.0921943811957736e-11LF,
    1.543750621210765e-12LF, -2.173276976062567e-13LF, 3.06689057681644e-14LF,
    -4.722452817931111e-15LF, 6.65260719619847e-16LF);
const double TVD_ERFCX_BOUNDS[11] = double[11](
    0.5LF, 1.0LF, 1.5LF, 2.25LF, 3.25LF, 4.75LF, 7.0LF, 10.0LF, 15.0LF, 21.0LF, 28.0LF);
const double TVD_LGAMMA_P[19] = double[19](
    0.42278433509846713LF, 0.16123351671205663LF, -0.016838075263299526LF, 0.0025726010534725475LF,
    -0.0004615969392919999LF, 9.032844784482085e-05LF, -1.8636779872543994e-05LF,
    3.981793089152702e-06LF, -8.716982578328323e-07LF, 1.9425326866834958e-07LF,
    -4.3873352909331736e-08LF, 1.0012495486246804e-08LF, -2.3043738035184404e-09LF,
    5.352422368894483e-10LF, -1.247500494813837e-10LF, 2.807778288259308e-11LF,
    -6.599791480347414e-12LF, 2.126623574915764e-12LF, -5.043009058425092e-13LF);

// x P(x^2), erf for |x| < 0.5.
precise double tv_erf_small(double x) {
    double u = (x * x - 0.125LF) * 8.0LF;
    double p = TVD_ERF_P[8];
    for (int i = 7; i >= 0; --i) p = p * u + TVD_ERF_P[i];
    return x * p;
}
// erfc(x) exp(x^2) for 0.5 <= x < 28.
precise double tv_erfcx(double x) {
    int k = 0;
    for (int i = 1; i < 10; ++i) k = x >= TVD_ERFCX_BOUNDS[i] ? i : k;
    double lo = TVD_ERFCX_BOUNDS[k];
    double h = 0.5LF * (TVD_ERFCX_BOUNDS[k + 1] - lo);
    double u = (x - (lo + h)) / h;
    double p = TVD_ERFCX_P[17 * k + 16];
    for (int i = 15; i >= 0; --i) p = p * u + TVD_ERFCX_P[17 * k + i];
    return p;
}
// erfc(x) for x >= 0.5 (0 from 28 on, where erfc(x) < 2^-1075; NaN not handled).
precise double tv_erfc_positive(double x) {
    double xh = tv_head32(x);
    double lo = (x - xh) * (x + xh);
    bool tiny = x > 26.0LF;
    double e = tv_exp((tiny ? 600.0LF : 0.0LF) - xh * xh) * tv_exp(-lo);
    double r = e * tv_erfcx(x < 28.0LF ? x : 27.0LF);
    r = tiny ? r * 2.6503965530043108e-261LF : r;  // e^-600
    return x < 28.0LF ? r : 0.0LF;
}
precise double tv_erf(double x) {
    double ax = tv_abs(x);
    double r = ax < 0.5LF ? tv_erf_small(x) : tv_copysign(1.0LF - tv_erfc_positive(ax), x);
    return tv_isnan(x) ? x : r;
}
precise double tv_erfc(double x) {
    double ax = tv_abs(x);
    double e = tv_erfc_positive(ax);
    double r = ax < 0.5LF ? 1.0LF - tv_erf_small(x) : (x < 0.0LF ? 2.0LF - e : e);
    return tv_isnan(x) ? x : r;
}

// lgamma(2 + t) for |t| <= 0.5.
precise double tv_lgamma_near2(double t) {
    double u = 2.0LF * t;
    double p = TVD_LGAMMA_P[18];
    for (int i = 17; i >= 0; --i) p = p * u + TVD_LGAMMA_P[i];
    return t * p;
}
// lgamma(x) for finite x > 0.
precise double tv_lgamma_positive(double x) {
    if (x < 0.5LF) return tv_lgamma_near2(x) - tv_log(x) - tv_log1p(x);
    if (x < 1.5LF) return tv_lgamma_near2(x - 1.0LF) - tv_log(x);
    if (x <= 2.5LF) return tv_lgamma_near2(x - 2.0LF);
    if (x < 10.0LF) {
        // lgamma(x) = lgamma(x - n) + log((x - 1) ... (x - n)), x - n in [1.5, 2.5) exactly.
        double n = tv_floor(x - 1.5LF);
        double product = 1.0LF;
        for (int i = 1; i <= 8; ++i) product *= double(i) <= n ? x - double(i) : 1.0LF;
        return tv_lgamma_near2((x - n) - 2.0LF) + tv_log(product);
    }
    // Stirling: (x - 1/2)(log x - 1) + (log(2 pi) - 1) / 2 + sum B_2k / (2k (2k - 1) x^(2k - 1)).
    double w = 1.0LF / x;
    double v = w * w;
    double s = w * (0.08333333333333333LF + v * (-0.002777777777777778LF + v * (0.0007936507936507937LF +
        v * (-0.0005952380952380953LF + v * (0.0008417508417508417LF + v * (-0.0019175269175269176LF +
        v * (0.00641025641025641LF + v * -0.029550653594771242LF)))))));
    return (x - 0.5LF) * (tv_log(x) - 1.0LF) + 0.4189385332046727LF + s;
}
precise double tv_lgamma(double x) {
    double ax = tv_abs(x);
    if (tv_isnan(x)) return x;
    if (tv_isinf(x)) return tv_inf_f64();
    if (ax < 5.551115123125783e-17LF) return -tv_log(ax);  // 2^-54: -log|x| (+inf at +-0)
    double positive = tv_lgamma_positive(ax);
    if (x > 0.0LF) return positive;
    double r = x - tv_round(x);
    if (r == 0.0LF) return tv_inf_f64();  // a pole
    double s = tv_abs(tv_sin(3.141592653589793LF * r));
    return 1.1447298858494002LF - tv_log(ax) - tv_log(s) - positive;  // log(pi) - ...
}
