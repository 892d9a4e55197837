// The generated ops.glsl (src/tape/gen_glsl.py), compiled as C++: every op's value and
// partials through the GLSL dispatchers agree with the reference VM's Formula<Op> (the C++
// emitted from the same table) in double and float, NaN, infinities and signed zeros included.
#include <array>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include <doctest/doctest.h>

#include "detail/math_scalar.hpp"
#include "detail/op_formulas.hpp"
#include "glsl_library.hpp"
#include "ulp.hpp"

namespace {

using namespace tapevm;
using namespace tapevm::detail;
using tapevm::gpu_math::ulp_distance;

template <Op op, class T> T reference_value(T a, T b, T c, int n) {
    using F = Formula<op>;
    using M = ScalarMath<T>;
    if constexpr (F::immediate)
        return F::template value<M, T>(a, n);
    else if constexpr (F::arity == 1)
        return F::template value<M, T>(a);
    else if constexpr (F::arity == 2)
        return F::template value<M, T>(a, b);
    else
        return F::template value<M, T>(a, b, c);
}

template <Op op, class T> void reference_partials(T a, T b, T c, int n, T r, T (&d)[3]) {
    using F = Formula<op>;
    using M = ScalarMath<T>;
    T out[F::arity];
    if constexpr (F::immediate)
        F::template partials<M, T>(a, n, r, out);
    else if constexpr (F::arity == 1)
        F::template partials<M, T>(a, r, out);
    else if constexpr (F::arity == 2)
        F::template partials<M, T>(a, b, r, out);
    else
        F::template partials<M, T>(a, b, c, r, out);
    for (std::uint32_t i = 0; i < 3; ++i) d[i] = i < F::arity && F::has_partials ? out[i] : T(0);
}

// Agreement: identical NaN/infinity/zero-sign pattern, values within `relative` (the GLSL
// math library is a few ulp from std::, composed formulas amplify that a little).
template <class T> bool agree(T value, T reference, double relative) {
    if (ulp_distance(value, reference) <= 4) return true;
    if (std::isnan(value) || std::isnan(reference) || std::isinf(value) || std::isinf(reference))
        return false;
    if (value == T(0) || reference == T(0)) return std::fabs(double(value) - double(reference)) <= relative;
    return std::fabs(double(value) - double(reference)) <= relative * std::fabs(double(reference));
}

template <Op o, class T, class G>
void check_op(G& glsl_value, std::uint32_t number, const std::vector<std::array<T, 3>>& points,
              double relative, int& failures) {
    const int exponents[] = {-3, -1, 0, 1, 2, 5};
    for (int n : exponents) {
        if (!Formula<o>::immediate && n != 0) continue;
        for (const auto& p : points) {
            const T r = glsl_value.value(number, p[0], p[1], p[2], n);
            const T expected = reference_value<o, T>(p[0], p[1], p[2], n);
            T d[3], e[3];
            const std::uint32_t count =
                glsl_value.partials(number, p[0], p[1], p[2], n, expected, d[0], d[1], d[2]);
            reference_partials<o, T>(p[0], p[1], p[2], n, expected, e);
            // Lgamma, Digamma (x < 0, next to their zeros) and LogSumExp (a result next to 0 is a
            // difference of its operands' size) have absolute errors there: their values and
            // partials also agree within relative * max(1, |a|, |b|).
            constexpr bool absolute = o == Op::Lgamma || o == Op::Digamma || o == Op::LogSumExp;
            const double scale = std::fmax(1.0, std::fmax(std::fabs(double(p[0])), std::fabs(double(p[1]))));
            const auto near = [&](T x, T y) {
                return agree(x, y, relative) ||
                       (absolute && std::fabs(double(x) - double(y)) <= relative * scale);
            };
            bool ok = near(r, expected) && count == (Formula<o>::has_partials ? Formula<o>::arity : 0u);
            for (int i = 0; i < 3; ++i) ok = ok && near(d[i], e[i]);
            if (!ok && failures++ < 10) {
                FAIL_CHECK(op_infos[number].name << "(" << p[0] << ", " << p[1] << ", " << p[2] << "; n=" << n
                                                 << "): glsl " << r << " [" << d[0] << ", " << d[1] << ", "
                                                 << d[2] << "] count " << count << ", reference " << expected
                                                 << " [" << e[0] << ", " << e[1] << ", " << e[2] << "]");
            }
        }
    }
}

template <class T, class G> void check_all_ops(G glsl_value, double relative) {
    std::vector<T> grid = {T(-2.5),
                           T(-1),
                           T(-0.5),
                           T(-0.0),
                           T(0),
                           T(0.3),
                           T(0.5),
                           T(1),
                           T(2),
                           T(3.7),
                           std::numeric_limits<T>::infinity(),
                           -std::numeric_limits<T>::infinity(),
                           std::numeric_limits<T>::quiet_NaN()};
    std::mt19937_64 random(99);
    std::uniform_real_distribution<double> uniform(-4, 4);
    std::vector<std::array<T, 3>> points;
    for (T a : grid)
        for (T b : grid)
            for (T c : grid) points.push_back({a, b, c});
    for (int i = 0; i < 20000; ++i)
        points.push_back({T(uniform(random)), T(uniform(random)), T(uniform(random))});
    int failures = 0;
    for (std::uint32_t number = 0; number < op_count; ++number) {
        const Op op = static_cast<Op>(number);
        if (has_flag(op, op_flag::leaf)) {
            CHECK(glsl_value.value(number, T(1), T(2), T(3), 0) == T(0));
            continue;
        }
        visit_op(op, [&](auto tag) {
            constexpr Op o = decltype(tag)::value;
            if constexpr (!has_flag(o, op_flag::leaf))
                check_op<o, T>(glsl_value, number, points, relative, failures);
        });
    }
    CHECK(failures == 0);
}

struct F64 {
    double value(std::uint32_t op, double a, double b, double c, int n) {
        return glsl::f64::tv_value(op, a, b, c, n);
    }
    std::uint32_t partials(std::uint32_t op, double a, double b, double c, int n, double r, double& d0,
                           double& d1, double& d2) {
        return glsl::f64::tv_partials(op, a, b, c, n, r, d0, d1, d2);
    }
};
struct F32 {
    float value(std::uint32_t op, float a, float b, float c, int n) {
        return glsl::f32::tv_value(op, a, b, c, n);
    }
    std::uint32_t partials(std::uint32_t op, float a, float b, float c, int n, float r, float& d0, float& d1,
                           float& d2) {
        return glsl::f32::tv_partials(op, a, b, c, n, r, d0, d1, d2);
    }
};

TEST_CASE("ops.glsl numbers every op as the op table does") {
    CHECK(glsl::f64::TV_OP_COUNT == op_count);
    CHECK(glsl::f64::TV_OP_INPUT == static_cast<std::uint32_t>(Op::Input));
    CHECK(glsl::f64::TV_OP_POWI == static_cast<std::uint32_t>(Op::Powi));
    CHECK(glsl::f64::TV_OP_PARAM == static_cast<std::uint32_t>(Op::Param));
    CHECK(glsl::f32::TV_OP_FMA == static_cast<std::uint32_t>(Op::Fma));
}

TEST_CASE("ops.glsl values and partials agree with the reference formulas in double") {
    check_all_ops<double>(F64{}, 1e-12);
}

TEST_CASE("ops.glsl values and partials agree with the reference formulas in float") {
    check_all_ops<float>(F32{}, 1e-5);
}

TEST_CASE("tv_contribution is the zero-absorbing rule") {
    const double inf = HUGE_VAL, nan = std::nan("");
    for (double p : {0.0, -0.0, 1.5, -2.0, inf, nan})
        for (double s : {0.0, -0.0, 3.0, inf, -inf, nan}) {
            const double ours = glsl::f64::tv_contribution(p, s);
            const double reference = contribution<ScalarMath<double>>(p, s);
            CHECK(ulp_distance(ours, reference) == 0);
            const float ours32 = glsl::f32::tv_contribution(float(p), float(s));
            CHECK(ulp_distance(ours32, contribution<ScalarMath<float>>(float(p), float(s))) == 0);
        }
}

}  // namespace
