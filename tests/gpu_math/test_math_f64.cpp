// The double-precision GLSL math library (shaders/lib/math_f64*.glsl), compiled as C++,
// against std:: over whole domains, ranges and special values.
#include <cmath>
#include <random>

#include <doctest/doctest.h>

#include "glsl_library.hpp"
#include "math_cases.hpp"

namespace {

using namespace tapevm::gpu_math;
namespace g = tapevm::glsl::f64;
using U = Unary<double>;
using B = Binary<double>;

// std:: as plain function pointers (the reference VM's ScalarMath<double>).
#define TV_STD1(name) [](double x) { return std::name(x); }
#define TV_STD2(name) [](double x, double y) { return std::name(x, y); }

TEST_CASE("f64 exponentials and logarithms are within their ulp bounds of std::") {
    check(U{"exp", g::tv_exp, TV_STD1(exp), 2, {bits(), range(-750, 750), range(-1, 1)}});
    check(U{"exp2", g::tv_exp2, TV_STD1(exp2), 2, {bits(), range(-1080, 1030), range(-1, 1)}});
    check(U{"expm1",
            g::tv_expm1,
            TV_STD1(expm1),
            3,
            {bits(), range(-40, 710), range(-1, 1), range(-1e-6, 1e-6)}});
    check(U{"log", g::tv_log, TV_STD1(log), 2, {positive_bits(), range(0, 3), range(0.7, 1.5)}});
    check(U{"log2", g::tv_log2, TV_STD1(log2), 2, {positive_bits(), range(0, 3), range(0.7, 1.5)}});
    check(U{"log10", g::tv_log10, TV_STD1(log10), 3, {positive_bits(), range(0, 3), range(0.7, 1.5)}});
    check(U{"log1p", g::tv_log1p, TV_STD1(log1p), 2, {bits(), range(-1, 2), range(-1e-6, 1e-6)}});
}

TEST_CASE("f64 trigonometric functions are within their ulp bounds of std::") {
    const std::vector<Range> ranges = {bits(), range(-10, 10), range(-2e6, 2e6), range(-1e22, 1e22)};
    check(U{"sin", g::tv_sin, TV_STD1(sin), 2, ranges});
    check(U{"cos", g::tv_cos, TV_STD1(cos), 2, ranges});
    check_sincos<double>([](auto x, auto& s, auto& c) { g::tv_sincos(x, s, c); }, g::tv_sin, g::tv_cos);
    check(U{"tan", g::tv_tan, TV_STD1(tan), 3, ranges});
    check(U{"asin", g::tv_asin, TV_STD1(asin), 2, {bits(), range(-1, 1), range(0.99, 1)}});
    check(U{"acos", g::tv_acos, TV_STD1(acos), 2, {bits(), range(-1, 1), range(0.99, 1), range(-1, -0.99)}});
    check(U{"atan", g::tv_atan, TV_STD1(atan), 2, {bits(), range(-10, 10)}});
    check(B{"atan2", g::tv_atan2, TV_STD2(atan2), 3, {bits(), range(-10, 10)}});
}

TEST_CASE("f64 hyperbolic functions are within their ulp bounds of std::") {
    const std::vector<Range> ranges = {bits(), range(-30, 30), range(-720, 720), range(-1e-3, 1e-3)};
    check(U{"sinh", g::tv_sinh, TV_STD1(sinh), 4, ranges});
    check(U{"cosh", g::tv_cosh, TV_STD1(cosh), 4, ranges});
    check(U{"tanh", g::tv_tanh, TV_STD1(tanh), 4, ranges});
    check(U{"asinh", g::tv_asinh, TV_STD1(asinh), 2, {bits(), range(-10, 10), range(-1e-3, 1e-3)}});
    check(U{"acosh", g::tv_acosh, TV_STD1(acosh), 2, {positive_bits(), range(1, 3), range(0, 100)}});
    check(U{"atanh", g::tv_atanh, TV_STD1(atanh), 2, {bits(), range(-1, 1), range(0.99, 1)}});
}

TEST_CASE("f64 powers, roots, hypot and fmod are within their ulp bounds of std::") {
    check(B{"pow", g::tv_pow, TV_STD2(pow), 2, {bits(), range(-10, 10), range(0, 3), range(-100, 100)}});
    check(B{"hypot", g::tv_hypot, TV_STD2(hypot), 2, {bits(), range(-10, 10)}});
    check(B{"fmod", g::tv_fmod, TV_STD2(fmod), 0, {bits(20000), range(-100, 100)}});
    check(U{"cbrt", g::tv_cbrt, TV_STD1(cbrt), 4, {bits(), range(-10, 10)}});
    check(U{"sqrt", g::tv_sqrt, TV_STD1(sqrt), 0, {bits()}});
}

TEST_CASE("f64 pow: near 1 with large exponents, negative bases with integer exponents") {
    std::mt19937_64 random(7);
    std::uniform_real_distribution<double> near_one(0.999, 1.001), large(-5e5, 5e5);
    std::uniform_int_distribution<int> integer(-300, 300);
    std::uniform_real_distribution<double> base(-10, 0);
    Worst worst;
    for (int i = 0; i < 100000; ++i) {
        double x = near_one(random), y = large(random);
        worst.see(ulp_distance(g::tv_pow(x, y), std::pow(x, y)), x, y, g::tv_pow(x, y), std::pow(x, y));
        x = base(random);
        y = integer(random);
        worst.see(ulp_distance(g::tv_pow(x, y), std::pow(x, y)), x, y, g::tv_pow(x, y), std::pow(x, y));
        const int n = integer(random);
        worst.see(ulp_distance(g::tv_powi(x, n), std::pow(x, double(n))), x, double(n), g::tv_powi(x, n),
                  std::pow(x, double(n)));
    }
    MESSAGE("pow/powi extra: max " << worst.ulps << " ulp at " << worst.where);
    CHECK(worst.ulps <= 1);
}

TEST_CASE("f64 rounding, sign and bit functions match std:: exactly") {
    const std::vector<Range> ranges = {bits(), range(-10, 10)};
    check(U{"floor", g::tv_floor, TV_STD1(floor), 0, ranges});
    check(U{"ceil", g::tv_ceil, TV_STD1(ceil), 0, ranges});
    check(U{"trunc", g::tv_trunc, TV_STD1(trunc), 0, ranges});
    check(U{"round", g::tv_round, TV_STD1(round), 0, ranges});
    check(U{"abs", g::tv_abs, TV_STD1(fabs), 0, ranges});
    for (double x : {0.5, 1.5, 2.5, -0.5, -2.5, 0.49999999999999994, 4503599627370495.5, -0.0})
        CHECK(std::bit_cast<std::uint64_t>(g::tv_round(x)) == std::bit_cast<std::uint64_t>(std::round(x)));
    for (double x : special_values<double>()) {
        CHECK(g::tv_isnan(x) == std::isnan(x));
        CHECK(g::tv_signbit(x) == std::signbit(x));
        const double s = g::tv_sign(x);
        CHECK(ulp_distance(s, x > 0 ? 1.0 : (x < 0 ? -1.0 : x)) == 0);
    }
    CHECK(std::isnan(g::tv_nan()));
    CHECK(g::tv_inf() == HUGE_VAL);
}

}  // namespace

TEST_CASE("f64 fma is exact-product based (faithful), not x * y + z") {
    tapevm::gpu_math::check_fma<double>(
        [](double x, double y, double z) { return tapevm::glsl::f64::tv_fma(x, y, z); });
}

// Measured maxima (x86-64 glibc, these seeds): see shaders/lib/README.md.
constexpr double erf_bound = 3;
constexpr double erfc_bound = 5;
constexpr double lgamma_bound = 8;
constexpr double negative_lgamma_bound = 4e-15;

// erf, erfc and lgamma (math_f64_special.glsl): whole range by bit patterns, the pieces of
// the erfcx fit, erfc's subnormal tail, lgamma's recurrence and Stirling ranges and its zeros
// at 1 and 2. lgamma is checked on the positive axis only: for x < 0 the reflection loses
// relative accuracy next to lgamma's zeros (x = -2.457..., -2.747..., ...), where the error
// is absolute (checked below), as it is for C libraries without special code there.
TEST_CASE("f64 erf, erfc and lgamma are within their ulp bounds of std::") {
    check(U{"erf",
            g::tv_erf,
            TV_STD1(erf),
            erf_bound,
            {bits(20000), range(-6, 6, 20000), range(-0.6, 0.6, 20000)}});
    check(U{"erfc",
            g::tv_erfc,
            TV_STD1(erfc),
            erfc_bound,
            {bits(20000), range(-6, 28, 20000), range(26, 27.3, 20000)}});
    // On |x| (the special values include -pi, next to a zero of lgamma).
    check(U{"lgamma(|x|)",
            [](double x) { return g::tv_lgamma(std::fabs(x)); },
            [](double x) { return std::lgamma(std::fabs(x)); },
            lgamma_bound,
            {positive_bits(20000), range(0, 10, 20000), range(0.9, 2.1, 20000), range(10, 1e300, 20000)}});
}

TEST_CASE("f64 lgamma for negative arguments: absolute error next to its zeros") {
    tapevm::gpu_math::check_negative_lgamma<double>([](double x) { return g::tv_lgamma(x); },
                                                    negative_lgamma_bound);
}
