// The single-precision GLSL math library (shaders/lib/math_f32.glsl), compiled as C++,
// against std:: over whole domains, ranges and special values.
#include <cmath>
#include <random>

#include <doctest/doctest.h>

#include "glsl_library.hpp"
#include "math_cases.hpp"

namespace {

using namespace tapevm::gpu_math;
namespace g = tapevm::glsl::f32;
using U = Unary<float>;
using B = Binary<float>;

// std:: as plain function pointers (the reference VM's ScalarMath<double>).
#define TV_STD1(name) [](float x) { return std::name(x); }
#define TV_STD2(name) [](float x, float y) { return std::name(x, y); }

TEST_CASE("f32 exponentials and logarithms are within their ulp bounds of std::") {
    check(U{"exp", g::tv_exp, TV_STD1(exp), 1, {bits(), range(-110, 100), range(-1, 1)}});
    check(U{"exp2", g::tv_exp2, TV_STD1(exp2), 1, {bits(), range(-160, 130), range(-1, 1)}});
    check(U{
        "expm1", g::tv_expm1, TV_STD1(expm1), 2, {bits(), range(-20, 90), range(-1, 1), range(-1e-6, 1e-6)}});
    check(U{"log", g::tv_log, TV_STD1(log), 1, {positive_bits(), range(0, 3), range(0.7, 1.5)}});
    check(U{"log2", g::tv_log2, TV_STD1(log2), 1, {positive_bits(), range(0, 3), range(0.7, 1.5)}});
    check(U{"log10", g::tv_log10, TV_STD1(log10), 2, {positive_bits(), range(0, 3), range(0.7, 1.5)}});
    check(U{"log1p", g::tv_log1p, TV_STD1(log1p), 1, {bits(), range(-1, 2), range(-1e-6, 1e-6)}});
}

TEST_CASE("f32 trigonometric functions are within their ulp bounds of std::") {
    const std::vector<Range> ranges = {bits(), range(-10, 10), range(-1e5, 1e5), range(-1e22, 1e22)};
    check(U{"sin", g::tv_sin, TV_STD1(sin), 1, ranges});
    check(U{"cos", g::tv_cos, TV_STD1(cos), 1, ranges});
    check_sincos<float>([](auto x, auto& s, auto& c) { g::tv_sincos(x, s, c); }, g::tv_sin, g::tv_cos);
    check(U{"tan", g::tv_tan, TV_STD1(tan), 2, ranges});
    check(U{"asin", g::tv_asin, TV_STD1(asin), 2, {bits(), range(-1, 1), range(0.99, 1)}});
    check(U{"acos", g::tv_acos, TV_STD1(acos), 1, {bits(), range(-1, 1), range(0.99, 1), range(-1, -0.99)}});
    check(U{"atan", g::tv_atan, TV_STD1(atan), 2, {bits(), range(-10, 10)}});
    check(B{"atan2", g::tv_atan2, TV_STD2(atan2), 2, {bits(), range(-10, 10)}});
}

TEST_CASE("f32 hyperbolic functions are within their ulp bounds of std::") {
    const std::vector<Range> ranges = {bits(), range(-30, 30), range(-95, 95), range(-1e-3, 1e-3)};
    check(U{"sinh", g::tv_sinh, TV_STD1(sinh), 3, ranges});
    check(U{"cosh", g::tv_cosh, TV_STD1(cosh), 3, ranges});
    check(U{"tanh", g::tv_tanh, TV_STD1(tanh), 3, ranges});
    check(U{"asinh", g::tv_asinh, TV_STD1(asinh), 1, {bits(), range(-10, 10), range(-1e-3, 1e-3)}});
    check(U{"acosh", g::tv_acosh, TV_STD1(acosh), 1, {positive_bits(), range(1, 3), range(0, 100)}});
    check(U{"atanh", g::tv_atanh, TV_STD1(atanh), 1, {bits(), range(-1, 1), range(0.99, 1)}});
}

TEST_CASE("f32 powers, roots, hypot and fmod are within their ulp bounds of std::") {
    check(B{"pow", g::tv_pow, TV_STD2(pow), 1, {bits(), range(-10, 10), range(0, 3), range(-100, 100)}});
    check(B{"hypot", g::tv_hypot, TV_STD2(hypot), 2, {bits(), range(-10, 10)}});
    check(B{"fmod", g::tv_fmod, TV_STD2(fmod), 0, {bits(20000), range(-100, 100)}});
    check(U{"cbrt", g::tv_cbrt, TV_STD1(cbrt), 1, {bits(), range(-10, 10)}});
    check(U{"sqrt", g::tv_sqrt, TV_STD1(sqrt), 0, {bits()}});
}

TEST_CASE("f32 pow: near 1 with large exponents, negative bases with integer exponents") {
    std::mt19937_64 random(7);
    std::uniform_real_distribution<float> near_one(0.999f, 1.001f), large(-5e4f, 5e4f);
    std::uniform_int_distribution<int> integer(-30, 30);
    std::uniform_real_distribution<float> base(-10, 0);
    Worst worst;
    for (int i = 0; i < 100000; ++i) {
        float x = near_one(random), y = large(random);
        worst.see(ulp_distance(g::tv_pow(x, y), std::pow(x, y)), x, y, g::tv_pow(x, y), std::pow(x, y));
        x = base(random);
        y = static_cast<float>(integer(random));
        worst.see(ulp_distance(g::tv_pow(x, y), std::pow(x, y)), x, y, g::tv_pow(x, y), std::pow(x, y));
        const int n = integer(random);
        const float fn = static_cast<float>(n);
        worst.see(ulp_distance(g::tv_powi(x, n), std::pow(x, fn)), x, fn, g::tv_powi(x, n), std::pow(x, fn));
    }
    MESSAGE("pow/powi extra: max " << worst.ulps << " ulp at " << worst.where);
    CHECK(worst.ulps <= 2);
}

TEST_CASE("f32 rounding, sign and bit functions match std:: exactly") {
    const std::vector<Range> ranges = {bits(), range(-10, 10)};
    check(U{"floor", g::tv_floor, TV_STD1(floor), 0, ranges});
    check(U{"ceil", g::tv_ceil, TV_STD1(ceil), 0, ranges});
    check(U{"trunc", g::tv_trunc, TV_STD1(trunc), 0, ranges});
    check(U{"round", g::tv_round, TV_STD1(round), 0, ranges});
    check(U{"abs", g::tv_abs, TV_STD1(fabs), 0, ranges});
    for (float x : {0.5f, 1.5f, 2.5f, -0.5f, -2.5f, 0.49999997f, 8388607.5f, -0.0f})
        CHECK(std::bit_cast<std::uint32_t>(g::tv_round(x)) == std::bit_cast<std::uint32_t>(std::round(x)));
    for (float x : special_values<float>()) {
        CHECK(g::tv_isnan(x) == std::isnan(x));
        CHECK(g::tv_signbit(x) == std::signbit(x));
        const float s = g::tv_sign(x);
        CHECK(ulp_distance(s, x > 0 ? 1.0f : (x < 0 ? -1.0f : x)) == 0);
    }
    CHECK(std::isnan(g::tv_nan()));
    CHECK(g::tv_inf() == HUGE_VALF);
}

}  // namespace

TEST_CASE("f32 fma is exact-product based (faithful), not x * y + z") {
    tapevm::gpu_math::check_fma<float>(
        [](float x, float y, float z) { return tapevm::glsl::f32::tv_fma(x, y, z); });
}

// Measured maxima (x86-64 glibc, these seeds): see shaders/lib/README.md.
constexpr double erf_bound = 3;
constexpr double erfc_bound = 6;
constexpr double lgamma_bound = 8;
constexpr double negative_lgamma_bound = 2e-6;

// erf, erfc and lgamma (math_f32_special.glsl): whole range by bit patterns, the pieces of
// the erfcx fit, erfc's subnormal tail, lgamma's recurrence and Stirling ranges and its zeros
// at 1 and 2. lgamma is checked on the positive axis only: for x < 0 the reflection loses
// relative accuracy next to lgamma's zeros (x = -2.457..., -2.747..., ...), where the error
// is absolute (checked below), as it is for C libraries without special code there.
TEST_CASE("f32 erf, erfc and lgamma are within their ulp bounds of std::") {
    check(U{"erf",
            g::tv_erf,
            TV_STD1(erf),
            erf_bound,
            {bits(20000), range(-6, 6, 20000), range(-0.6, 0.6, 20000)}});
    check(U{"erfc",
            g::tv_erfc,
            TV_STD1(erfc),
            erfc_bound,
            {bits(20000), range(-6, 28, 20000), range(9, 10.1, 20000)}});
    // On |x| (the special values include -pi, next to a zero of lgamma).
    check(U{"lgamma(|x|)",
            [](float x) { return g::tv_lgamma(std::fabs(x)); },
            [](float x) { return std::lgamma(std::fabs(x)); },
            lgamma_bound,
            {positive_bits(20000), range(0, 10, 20000), range(0.9, 2.1, 20000), range(10, 3e36, 20000)}});
}

TEST_CASE("f32 lgamma for negative arguments: absolute error next to its zeros") {
    tapevm::gpu_math::check_negative_lgamma<float>([](float x) { return g::tv_lgamma(x); },
                                                   negative_lgamma_bound);
}
