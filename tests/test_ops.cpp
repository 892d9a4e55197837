// Every op on the reference VM: values and partials against formulas written here by hand
// (independently of op_table.py), central finite differences at smooth points, forward mode
// against reverse mode, float against double, and the edge cases the semantics fix
// (0, -0, +-infinity, NaN, out-of-domain inputs, Max/Min ties, pow with zero or negative base).
#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <numbers>
#include <set>
#include <sstream>

#include <doctest/doctest.h>

#include "tapevm/tape_file.hpp"
#include "tapevm/var.hpp"
#include "test_util.hpp"

using namespace tapevm;
using tapevm::test::close;

namespace {

constexpr double not_a_number = std::numeric_limits<double>::quiet_NaN();
constexpr double infinity = std::numeric_limits<double>::infinity();

using Args = std::array<double, 3>;
using Fn = std::function<double(const Args&)>;

// One op's hand-written value and partials, and points where it is smooth.
struct OpCase {
    Op op;
    Fn value;
    std::vector<Fn> partials;
    std::vector<Args> smooth_points;
    std::int32_t exponent = 0;
};

double sq(double x) { return x * x; }

// Independent references for digamma and trigamma (not the op table's formulas): long double,
// the recurrence up to 30 and the asymptotic series there, the reflection below 1/2.
long double digamma_reference(long double x) {
    const long double pi = 3.141592653589793238462643383279503L;
    if (x < 0.5L) return digamma_reference(1 - x) - pi / std::tan(pi * x);
    long double shift = 0;
    for (; x < 30; x += 1) shift -= 1 / x;
    const long double w = 1 / (x * x);
    return shift + std::log(x) - 1 / (2 * x) -
           w * (1.0L / 12 - w * (1.0L / 120 - w * (1.0L / 252 - w * (1.0L / 240 - w / 132))));
}
long double trigamma_reference(long double x) {
    const long double pi = 3.141592653589793238462643383279503L;
    if (x < 0.5L) return pi * pi / (std::sin(pi * x) * std::sin(pi * x)) - trigamma_reference(1 - x);
    long double shift = 0;
    for (; x < 30; x += 1) shift += 1 / (x * x);
    const long double w = 1 / (x * x);
    return shift + 1 / x + w / 2 + w / x * (1.0L / 6 - w * (1.0L / 30 - w * (1.0L / 42 - w / 30)));
}
double digamma(double x) { return static_cast<double>(digamma_reference(x)); }
double trigamma(double x) { return static_cast<double>(trigamma_reference(x)); }

std::vector<OpCase> op_cases() {
    std::vector<OpCase> cases;
    auto unary = [&](Op op, std::function<double(double)> f, std::function<double(double)> d,
                     std::vector<double> points) {
        std::vector<Args> args;
        for (double p : points) args.push_back({p, 0, 0});
        cases.push_back(
            {op, [f](const Args& x) { return f(x[0]); }, {[d](const Args& x) { return d(x[0]); }}, args});
    };
    const std::vector<double> anywhere = {-2.3, -0.7, 0.4, 1.3, 3.1};
    const std::vector<double> positive = {0.2, 0.9, 1.7, 4.5};
    const std::vector<double> unit = {-0.8, -0.3, 0.1, 0.6};
    unary(
        Op::Neg, [](double a) { return -a; }, [](double) { return -1.0; }, anywhere);
    unary(
        Op::Recip, [](double a) { return 1 / a; }, [](double a) { return -1 / (a * a); }, anywhere);
    unary(
        Op::Sqrt, [](double a) { return std::sqrt(a); }, [](double a) { return 0.5 / std::sqrt(a); },
        positive);
    unary(
        Op::Cbrt, [](double a) { return std::cbrt(a); }, [](double a) { return 1 / (3 * std::cbrt(a * a)); },
        anywhere);
    unary(
        Op::Exp, [](double a) { return std::exp(a); }, [](double a) { return std::exp(a); }, anywhere);
    unary(
        Op::Exp2, [](double a) { return std::exp2(a); },
        [](double a) { return std::exp2(a) * std::log(2.0); }, anywhere);
    unary(
        Op::Expm1, [](double a) { return std::expm1(a); }, [](double a) { return std::exp(a); }, anywhere);
    unary(
        Op::Ln, [](double a) { return std::log(a); }, [](double a) { return 1 / a; }, positive);
    unary(
        Op::Log2, [](double a) { return std::log2(a); }, [](double a) { return 1 / (a * std::log(2.0)); },
        positive);
    unary(
        Op::Log10, [](double a) { return std::log10(a); }, [](double a) { return 1 / (a * std::log(10.0)); },
        positive);
    unary(
        Op::Ln1p, [](double a) { return std::log1p(a); }, [](double a) { return 1 / (1 + a); },
        {-0.5, 0.1, 2.0});
    unary(
        Op::Sin, [](double a) { return std::sin(a); }, [](double a) { return std::cos(a); }, anywhere);
    unary(
        Op::Cos, [](double a) { return std::cos(a); }, [](double a) { return -std::sin(a); }, anywhere);
    unary(
        Op::Tan, [](double a) { return std::tan(a); }, [](double a) { return 1 / sq(std::cos(a)); }, unit);
    unary(
        Op::Asin, [](double a) { return std::asin(a); }, [](double a) { return 1 / std::sqrt(1 - a * a); },
        unit);
    unary(
        Op::Acos, [](double a) { return std::acos(a); }, [](double a) { return -1 / std::sqrt(1 - a * a); },
        unit);
    unary(
        Op::Atan, [](double a) { return std::atan(a); }, [](double a) { return 1 / (1 + a * a); }, anywhere);
    unary(
        Op::Sinh, [](double a) { return std::sinh(a); }, [](double a) { return std::cosh(a); }, anywhere);
    unary(
        Op::Cosh, [](double a) { return std::cosh(a); }, [](double a) { return std::sinh(a); }, anywhere);
    unary(
        Op::Tanh, [](double a) { return std::tanh(a); }, [](double a) { return 1 / sq(std::cosh(a)); },
        anywhere);
    unary(
        Op::Asinh, [](double a) { return std::asinh(a); }, [](double a) { return 1 / std::sqrt(a * a + 1); },
        anywhere);
    unary(
        Op::Acosh, [](double a) { return std::acosh(a); }, [](double a) { return 1 / std::sqrt(a * a - 1); },
        {1.2, 2.0, 7.5});
    unary(
        Op::Atanh, [](double a) { return std::atanh(a); }, [](double a) { return 1 / (1 - a * a); }, unit);
    unary(
        Op::Abs, [](double a) { return std::fabs(a); }, [](double a) { return a > 0 ? 1.0 : -1.0; },
        anywhere);
    unary(
        Op::Signum, [](double a) { return a > 0 ? 1.0 : -1.0; }, [](double) { return 0.0; }, anywhere);
    unary(
        Op::Floor, [](double a) { return std::floor(a); }, [](double) { return 0.0; }, anywhere);
    unary(
        Op::Ceil, [](double a) { return std::ceil(a); }, [](double) { return 0.0; }, anywhere);
    unary(
        Op::Round, [](double a) { return std::round(a); }, [](double) { return 0.0; }, anywhere);
    unary(
        Op::Trunc, [](double a) { return std::trunc(a); }, [](double) { return 0.0; }, anywhere);
    unary(
        Op::Fract, [](double a) { return a - std::trunc(a); }, [](double) { return 1.0; }, anywhere);

    auto binary = [&](Op op, std::function<double(double, double)> f,
                      std::function<double(double, double)> da, std::function<double(double, double)> db,
                      std::vector<Args> points) {
        cases.push_back(
            {op,
             [f](const Args& x) { return f(x[0], x[1]); },
             {[da](const Args& x) { return da(x[0], x[1]); }, [db](const Args& x) { return db(x[0], x[1]); }},
             points});
    };
    const std::vector<Args> pairs = {{1.5, -0.7, 0}, {-2.25, 3.5, 0}, {0.3, 0.9, 0}, {4.0, 1.25, 0}};
    const std::vector<Args> positive_base = {{1.5, -0.7, 0}, {2.25, 3.5, 0}, {0.3, 0.9, 0}, {4.0, 1.25, 0}};
    binary(
        Op::Add, [](double a, double b) { return a + b; }, [](double, double) { return 1.0; },
        [](double, double) { return 1.0; }, pairs);
    binary(
        Op::Sub, [](double a, double b) { return a - b; }, [](double, double) { return 1.0; },
        [](double, double) { return -1.0; }, pairs);
    binary(
        Op::Mul, [](double a, double b) { return a * b; }, [](double, double b) { return b; },
        [](double a, double) { return a; }, pairs);
    binary(
        Op::Div, [](double a, double b) { return a / b; }, [](double, double b) { return 1 / b; },
        [](double a, double b) { return -a / (b * b); }, pairs);
    binary(
        Op::Rem, [](double a, double b) { return std::fmod(a, b); }, [](double, double) { return 1.0; },
        [](double a, double b) { return -std::trunc(a / b); }, pairs);
    binary(
        Op::Powf, [](double a, double b) { return std::pow(a, b); },
        [](double a, double b) { return b * std::pow(a, b - 1); },
        [](double a, double b) { return std::pow(a, b) * std::log(a); }, positive_base);
    binary(
        Op::Atan2, [](double a, double b) { return std::atan2(a, b); },
        [](double a, double b) { return b / (a * a + b * b); },
        [](double a, double b) { return -a / (a * a + b * b); }, pairs);
    binary(
        Op::Hypot, [](double a, double b) { return std::sqrt(a * a + b * b); },
        [](double a, double b) { return a / std::sqrt(a * a + b * b); },
        [](double a, double b) { return b / std::sqrt(a * a + b * b); }, pairs);
    binary(
        Op::Max, [](double a, double b) { return a > b ? a : b; },
        [](double a, double b) { return a > b ? 1.0 : 0.0; },
        [](double a, double b) { return a > b ? 0.0 : 1.0; }, pairs);
    binary(
        Op::Min, [](double a, double b) { return a < b ? a : b; },
        [](double a, double b) { return a < b ? 1.0 : 0.0; },
        [](double a, double b) { return a < b ? 0.0 : 1.0; }, pairs);
    auto comparison = [&](Op op, std::function<bool(double, double)> f) {
        binary(
            op, [f](double a, double b) { return f(a, b) ? 1.0 : 0.0; }, [](double, double) { return 0.0; },
            [](double, double) { return 0.0; }, {{1.5, -0.7, 0}, {-2.25, 3.5, 0}});
    };
    comparison(Op::Lt, [](double a, double b) { return a < b; });
    comparison(Op::Le, [](double a, double b) { return a <= b; });
    comparison(Op::Gt, [](double a, double b) { return a > b; });
    comparison(Op::Ge, [](double a, double b) { return a >= b; });
    comparison(Op::Eq, [](double a, double b) { return a == b; });
    comparison(Op::Ne, [](double a, double b) { return a != b; });

    cases.push_back({Op::Select,
                     [](const Args& x) { return x[0] != 0 ? x[1] : x[2]; },
                     {[](const Args&) { return 0.0; }, [](const Args& x) { return x[0] != 0 ? 1.0 : 0.0; },
                      [](const Args& x) { return x[0] != 0 ? 0.0 : 1.0; }},
                     {{1, 2.5, -3}, {0, 2.5, -3}, {-2, 0.5, 7}}});
    cases.push_back({Op::Fma,
                     [](const Args& x) { return x[0] * x[1] + x[2]; },
                     {[](const Args& x) { return x[1]; }, [](const Args& x) { return x[0]; },
                      [](const Args&) { return 1.0; }},
                     {{1.5, -0.7, 2}, {-2.25, 3.5, 0.1}, {0.3, 0.9, -4}}});
    const double two_over_sqrt_pi = 2 / std::sqrt(std::numbers::pi);
    unary(
        Op::Erf, [](double a) { return std::erf(a); },
        [two_over_sqrt_pi](double a) { return two_over_sqrt_pi * std::exp(-a * a); },
        {-2.3, -0.7, 0.4, 1.3, 3.1});
    unary(
        Op::Erfc, [](double a) { return std::erfc(a); },
        [two_over_sqrt_pi](double a) { return -two_over_sqrt_pi * std::exp(-a * a); },
        {-2.3, -0.7, 0.4, 1.3, 3.1});
    unary(
        Op::Lgamma, [](double a) { return std::lgamma(a); }, [](double a) { return digamma(a); },
        {-2.3, -0.7, 0.4, 1.7, 4.5, 12.5});
    unary(
        Op::Digamma, [](double a) { return digamma(a); }, [](double a) { return trigamma(a); },
        {-2.3, 1.7, 4.5, 7.3, 12.5});
    binary(
        Op::Copysign, [](double a, double b) { return std::copysign(a, b); },
        [](double a, double b) { return (a > 0 ? 1.0 : -1.0) * (std::signbit(b) ? -1.0 : 1.0); },
        [](double, double) { return 0.0; }, pairs);
    binary(
        Op::LogSumExp, [](double a, double b) { return std::log(std::exp(a) + std::exp(b)); },
        [](double a, double b) { return std::exp(a) / (std::exp(a) + std::exp(b)); },
        [](double a, double b) { return std::exp(b) / (std::exp(a) + std::exp(b)); }, pairs);
    for (std::int32_t n : {-3, -1, 0, 1, 2, 5}) {
        cases.push_back({Op::Powi,
                         [n](const Args& x) { return std::pow(x[0], n); },
                         {[n](const Args& x) { return n == 0 ? 0.0 : n * std::pow(x[0], n - 1); }},
                         {{-1.7, 0, 0}, {0.6, 0, 0}, {2.3, 0, 0}},
                         n});
    }
    return cases;
}

std::string describe(const OpCase& c, const Args& x) {
    std::string text = std::string(info(c.op).name) + "(";
    for (std::uint32_t k = 0; k < arity(c.op); ++k) text += (k ? ", " : "") + std::to_string(x[k]);
    if (c.op == Op::Powi) text += ", n=" + std::to_string(c.exponent);
    return text + ")";
}

}  // namespace

TEST_CASE("every non-leaf op has a hand-written case") {
    std::set<Op> covered;
    for (const OpCase& c : op_cases()) covered.insert(c.op);
    for (std::uint32_t number = 0; number < op_count; ++number) {
        const Op op = static_cast<Op>(number);
        if (has_flag(op, op_flag::leaf)) continue;
        CHECK_MESSAGE(covered.count(op) == 1, "no test case for ", info(op).name);
    }
}

TEST_CASE("op values and partials match hand-written formulas and finite differences") {
    for (const OpCase& c : op_cases()) {
        const reference::Vm vm(test::single_op_tape(c.op, c.exponent));
        const std::uint32_t n = arity(c.op);
        for (const Args& point : c.smooth_points) {
            const std::vector<double> x(point.begin(), point.begin() + n);
            INFO(describe(c, point));
            const double value = test::forward(vm, x)[0];
            CHECK(close(value, c.value(point), 4e-16));
            const auto reverse = test::jacobian(vm, x, JacobianMode::reverse);
            const auto tangent = test::jacobian(vm, x, JacobianMode::forward);
            for (std::uint32_t k = 0; k < n; ++k) {
                INFO("partial " << k);
                CHECK(close(reverse[k], c.partials[k](point), 1e-14));
                CHECK(reverse[k] == tangent[k]);
                if (c.op == Op::Select && k == 0) continue;  // a condition is not differentiable
                const double fd = test::central_difference(
                    [&](std::span<const double> at) { return test::forward(vm, at)[0]; }, x, k);
                CHECK(close(reverse[k], fd, 1e-6));
            }
        }
    }
}

TEST_CASE("float evaluation agrees with double within float accuracy") {
    for (const OpCase& c : op_cases()) {
        const reference::Vm vm(test::single_op_tape(c.op, c.exponent));
        const std::uint32_t n = arity(c.op);
        for (const Args& point : c.smooth_points) {
            INFO(describe(c, point));
            std::vector<float> x32(n);
            for (std::uint32_t k = 0; k < n; ++k) x32[k] = static_cast<float>(point[k]);
            std::vector<double> x64(x32.begin(), x32.end());  // the same (rounded) point in double
            float value = 0;
            vm.forward(single_point<float>(x32), std::span<float>(&value, 1));
            CHECK(close(value, test::forward(vm, x64)[0], 4 * 6e-8));
            std::vector<float> gradient(n);
            vm.gradient(single_point<float>(x32), std::span<float>(gradient));
            const auto expected = test::jacobian(vm, x64, JacobianMode::reverse);
            for (std::uint32_t k = 0; k < n; ++k) CHECK(close(gradient[k], expected[k], 8 * 6e-8));
        }
    }
}

namespace {

// An exact expectation at an edge case: value and partials, compared bitwise-equal
// (NaN == NaN; the sign of a zero checked where `signed_zero`).
struct Edge {
    Op op;
    Args x;
    double value;
    std::vector<double> partials;
    std::int32_t exponent = 0;
    bool signed_zero = false;
};

bool same(double a, double b, bool signed_zero) {
    if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
    return a == b && (!signed_zero || std::signbit(a) == std::signbit(b));
}

}  // namespace

TEST_CASE("edge cases: zeros, infinities, NaN, out of domain, ties, pow bases") {
    const std::vector<Edge> edges = {
        // Division: partials (1/b, -r/b).
        {Op::Div, {1, 0, 0}, infinity, {infinity, -infinity}},
        {Op::Div, {0, 0, 0}, not_a_number, {infinity, not_a_number}},
        {Op::Div, {6, -3, 0}, -2, {-1.0 / 3, -2.0 / 3}},
        // Square root and logarithms at 0, -0 and out of domain.
        {Op::Sqrt, {0, 0, 0}, 0, {infinity}},
        {Op::Sqrt, {-0.0, 0, 0}, -0.0, {infinity}, 0, true},
        {Op::Sqrt, {-1, 0, 0}, not_a_number, {not_a_number}},
        {Op::Sqrt, {infinity, 0, 0}, infinity, {0}},
        {Op::Ln, {0, 0, 0}, -infinity, {infinity}},
        {Op::Ln, {-0.0, 0, 0}, -infinity, {infinity}},
        {Op::Ln, {-1, 0, 0}, not_a_number, {not_a_number}},
        {Op::Log2, {-1, 0, 0}, not_a_number, {not_a_number}},
        {Op::Log10, {-1, 0, 0}, not_a_number, {not_a_number}},
        {Op::Ln1p, {-2, 0, 0}, not_a_number, {not_a_number}},
        {Op::Ln1p, {-1, 0, 0}, -infinity, {infinity}},
        {Op::Cbrt, {0, 0, 0}, 0, {infinity}},
        {Op::Asin, {2, 0, 0}, not_a_number, {not_a_number}},
        {Op::Acos, {-2, 0, 0}, not_a_number, {not_a_number}},
        {Op::Acosh, {0.5, 0, 0}, not_a_number, {not_a_number}},
        {Op::Acosh, {-2, 0, 0}, not_a_number, {not_a_number}},
        {Op::Acosh, {1, 0, 0}, 0, {infinity}},
        {Op::Atanh, {2, 0, 0}, not_a_number, {not_a_number}},
        {Op::Atanh, {1, 0, 0}, infinity, {infinity}},
        // Overflow guards: the naive formulas square the operand and give 0 or NaN.
        {Op::Asinh, {1e200, 0, 0}, std::asinh(1e200), {1e-200}},
        {Op::Acosh, {1e200, 0, 0}, std::acosh(1e200), {1e-200}},
        {Op::Atan, {1e200, 0, 0}, std::atan(1e200), {0}},
        {Op::Atan, {-4, 0, 0}, std::atan(-4.0), {1.0 / 17}},
        {Op::Hypot, {3e200, 4e200, 0}, std::hypot(3e200, 4e200), {0.6, 0.8}},
        {Op::Hypot, {0, 0, 0}, 0, {0, 0}},
        {Op::Atan2, {0, 0, 0}, 0, {not_a_number, not_a_number}},
        // Abs and the step functions.
        {Op::Abs, {0, 0, 0}, 0, {0}},
        {Op::Abs, {-0.0, 0, 0}, 0, {0}},
        {Op::Abs, {-3, 0, 0}, 3, {-1}},
        {Op::Abs, {not_a_number, 0, 0}, not_a_number, {not_a_number}},
        {Op::Signum, {-0.0, 0, 0}, -0.0, {0}, 0, true},
        {Op::Signum, {0.0, 0, 0}, 0.0, {0}, 0, true},
        {Op::Signum, {not_a_number, 0, 0}, not_a_number, {0}},
        {Op::Signum, {-infinity, 0, 0}, -1, {0}},
        {Op::Round, {2.5, 0, 0}, 3, {0}},
        {Op::Round, {-2.5, 0, 0}, -3, {0}},
        {Op::Round, {0.49999999999999994, 0, 0}, 0, {0}},
        {Op::Floor, {-0.5, 0, 0}, -1, {0}},
        {Op::Ceil, {-0.5, 0, 0}, -0.0, {0}, 0, true},
        {Op::Trunc, {-1.75, 0, 0}, -1, {0}},
        {Op::Fract, {-1.25, 0, 0}, -0.25, {1}},
        {Op::Fract, {infinity, 0, 0}, not_a_number, {1}},
        // Max/Min: NaN ignored, +0 above -0, the adjoint split on a tie.
        {Op::Max, {1, 1, 0}, 1, {0.5, 0.5}},
        {Op::Min, {1, 1, 0}, 1, {0.5, 0.5}},
        {Op::Max, {not_a_number, 2, 0}, 2, {0, 1}},
        {Op::Max, {2, not_a_number, 0}, 2, {1, 0}},
        {Op::Min, {not_a_number, 2, 0}, 2, {0, 1}},
        {Op::Max, {-0.0, 0.0, 0}, 0.0, {0.5, 0.5}, 0, true},
        {Op::Max, {0.0, -0.0, 0}, 0.0, {0.5, 0.5}, 0, true},
        {Op::Min, {-0.0, 0.0, 0}, -0.0, {0.5, 0.5}, 0, true},
        {Op::Min, {0.0, -0.0, 0}, -0.0, {0.5, 0.5}, 0, true},
        {Op::Max, {-infinity, 3, 0}, 3, {0, 1}},
        {Op::Max, {not_a_number, not_a_number, 0}, not_a_number, {0.5, 0.5}},
        {Op::Min, {not_a_number, not_a_number, 0}, not_a_number, {0.5, 0.5}},
        // pow with zero and negative bases: the exponent's partial is 0 where base <= 0.
        {Op::Powf, {0, 2, 0}, 0, {0, 0}},
        {Op::Powf, {0, 0, 0}, 1, {0, 0}},
        {Op::Powf, {2, 0, 0}, 1, {0, std::log(2.0)}},
        {Op::Powf, {-2, 3, 0}, -8, {12, 0}},
        {Op::Powf, {-2, 0.5, 0}, not_a_number, {not_a_number, 0}},
        {Op::Powf, {0, 0.5, 0}, 0, {infinity, 0}},
        {Op::Powf, {0, -1, 0}, infinity, {-infinity, 0}},
        {Op::Powi, {0, 0, 0}, 1, {0}, 0},
        {Op::Powi, {0, 0, 0}, infinity, {-infinity}, -1},
        {Op::Powi, {-2, 0, 0}, -8, {12}, 3},
        {Op::Powi, {-0.0, 0, 0}, -infinity, {-infinity}, -1},
        // n = -2^31, where n - 1 overflows int32 (found by fuzz/fuzz_tape): the partial is
        // n x^(n-1) all the same.
        {Op::Powi, {1, 0, 0}, 1, {-2147483648.0}, std::numeric_limits<std::int32_t>::min()},
        {Op::Powi, {-1, 0, 0}, 1, {2147483648.0}, std::numeric_limits<std::int32_t>::min()},
        {Op::Powi, {0, 0, 0}, infinity, {-infinity}, std::numeric_limits<std::int32_t>::min()},
        {Op::Powi, {-0.0, 0, 0}, infinity, {infinity}, std::numeric_limits<std::int32_t>::min()},
        {Op::Powi, {2, 0, 0}, 0, {0}, std::numeric_limits<std::int32_t>::min()},
        {Op::Powi, {-1, 0, 0}, -1, {2147483647.0}, std::numeric_limits<std::int32_t>::max()},
        {Op::Rem, {5.5, 2, 0}, 1.5, {1, -2}},
        {Op::Rem, {-5.5, 2, 0}, -1.5, {1, 2}},
        {Op::Rem, {1, 0, 0}, not_a_number, {1, -infinity}},
        // Exponentials at the ends.
        {Op::Exp, {1000, 0, 0}, infinity, {infinity}},
        {Op::Exp, {-infinity, 0, 0}, 0, {0}},
        {Op::Tanh, {infinity, 0, 0}, 1, {0}},
        {Op::Expm1, {-infinity, 0, 0}, -1, {0}},
        // Comparisons give 1 or 0, NaN compares unequal.
        {Op::Lt, {not_a_number, 1, 0}, 0, {0, 0}},
        {Op::Ne, {not_a_number, not_a_number, 0}, 1, {0, 0}},
        {Op::Eq, {-0.0, 0.0, 0}, 1, {0, 0}},
        {Op::Ge, {infinity, infinity, 0}, 1, {0, 0}},
        // Select: a NaN condition counts as true.
        {Op::Select, {not_a_number, 2, 3}, 2, {0, 1, 0}},
        {Op::Select, {-0.0, 2, 3}, 3, {0, 0, 1}},
        {Op::Fma, {infinity, 0, 1}, not_a_number, {0, infinity, 1}},
        {Op::Mul, {infinity, 0, 0}, not_a_number, {0, infinity}},
        // The special functions at their poles, zeros and ends.
        {Op::Erf, {-0.0, 0, 0}, -0.0, {2 / std::sqrt(std::numbers::pi)}, 0, true},
        {Op::Erf, {infinity, 0, 0}, 1, {0}},
        {Op::Erf, {-infinity, 0, 0}, -1, {0}},
        {Op::Erf, {not_a_number, 0, 0}, not_a_number, {not_a_number}},
        {Op::Erfc, {-infinity, 0, 0}, 2, {0}},
        {Op::Erfc, {30, 0, 0}, 0, {0}},
        {Op::Erfc, {0, 0, 0}, 1, {-2 / std::sqrt(std::numbers::pi)}},
        {Op::Lgamma, {0, 0, 0}, infinity, {-infinity}},
        {Op::Lgamma, {-0.0, 0, 0}, infinity, {infinity}},
        {Op::Lgamma, {-1, 0, 0}, infinity, {not_a_number}},
        {Op::Lgamma, {-3, 0, 0}, infinity, {not_a_number}},
        {Op::Lgamma, {1, 0, 0}, 0, {-0.5772156649015329}},
        {Op::Lgamma, {2, 0, 0}, 0, {0.42278433509846713}},
        {Op::Lgamma, {infinity, 0, 0}, infinity, {infinity}},
        {Op::Lgamma, {-infinity, 0, 0}, infinity, {not_a_number}},
        {Op::Digamma, {0, 0, 0}, -infinity, {infinity}},
        {Op::Digamma, {-0.0, 0, 0}, infinity, {infinity}},
        {Op::Digamma, {-2, 0, 0}, not_a_number, {infinity}},
        {Op::Digamma, {-1e20, 0, 0}, not_a_number, {infinity}},
        {Op::Digamma, {1, 0, 0}, -0.5772156649015329, {std::numbers::pi * std::numbers::pi / 6}},
        {Op::Digamma, {infinity, 0, 0}, infinity, {0}},
        {Op::Digamma, {not_a_number, 0, 0}, not_a_number, {not_a_number}},
        // copysign: b's sign bit (of zeros and NaN too); d/da is 0 at a = +-0, NaN at NaN.
        {Op::Copysign, {3, -0.0, 0}, -3, {-1, 0}},
        {Op::Copysign, {-3, 0.0, 0}, 3, {-1, 0}},
        {Op::Copysign, {-0.0, 1, 0}, 0.0, {0, 0}, 0, true},
        {Op::Copysign, {0.0, -1, 0}, -0.0, {0, 0}, 0, true},
        {Op::Copysign, {2, not_a_number, 0}, 2, {1, 0}},
        {Op::Copysign, {2, -not_a_number, 0}, -2, {-1, 0}},
        {Op::Copysign, {not_a_number, -1, 0}, not_a_number, {not_a_number, 0}},
        // log_sum_exp: ties (infinite ones too) give a + ln2 and 1/2 each, one infinite operand
        // the larger, huge differences the larger exactly, NaN NaN.
        {Op::LogSumExp, {-infinity, -infinity, 0}, -infinity, {0.5, 0.5}},
        {Op::LogSumExp, {infinity, infinity, 0}, infinity, {0.5, 0.5}},
        {Op::LogSumExp, {infinity, -infinity, 0}, infinity, {1, 0}},
        {Op::LogSumExp, {infinity, 3, 0}, infinity, {1, 0}},
        {Op::LogSumExp, {-infinity, 3, 0}, 3, {0, 1}},
        {Op::LogSumExp, {1000, -1000, 0}, 1000, {1, 0}},
        {Op::LogSumExp, {1e308, -1e308, 0}, 1e308, {1, 0}},
        {Op::LogSumExp, {1e308, 1e308, 0}, 1e308, {0.5, 0.5}},
        {Op::LogSumExp, {2, 2, 0}, 2 + std::numbers::ln2, {0.5, 0.5}},
        {Op::LogSumExp, {not_a_number, 1, 0}, not_a_number, {not_a_number, not_a_number}},
    };
    for (const Edge& edge : edges) {
        const reference::Vm vm(test::single_op_tape(edge.op, edge.exponent));
        const std::uint32_t n = arity(edge.op);
        const std::vector<double> x(edge.x.begin(), edge.x.begin() + n);
        INFO(info(edge.op).name << " at " << test::show(x) << " n=" << edge.exponent);
        const double value = test::forward(vm, x)[0];
        CHECK_MESSAGE(same(value, edge.value, edge.signed_zero), "value ", value);
        const auto reverse = test::jacobian(vm, x, JacobianMode::reverse);
        const auto tangent = test::jacobian(vm, x, JacobianMode::forward);
        for (std::uint32_t k = 0; k < n; ++k) {
            const bool ok = test::close_relative(reverse[k], edge.partials[k], 1e-15) ||
                            same(reverse[k], edge.partials[k], false);
            CHECK_MESSAGE(ok, "partial ", k, " is ", reverse[k], ", expected ", edge.partials[k]);
            CHECK_MESSAGE(same(reverse[k], tangent[k], false), "forward mode partial ", k, " is ",
                          tangent[k]);
        }
    }
}

TEST_CASE("Powi's second derivative at n = -2^31 + 1 (hvp reaches the partial of x^(-2^31))") {
    // f = x^n, f'' = n (n - 1) x^(n - 2) = 2^62 - 2^31 at x = 1 (exact in double).
    const reference::Vm vm(test::single_op_tape(Op::Powi, std::numeric_limits<std::int32_t>::min() + 1));
    const std::vector<double> x = {1}, cotangent = {1}, direction = {1};
    const auto hvp = vm.hvp(Batch<double>{1, x, {}}, std::span<const double>(cotangent),
                            std::span<const double>(direction));
    REQUIRE(hvp.values.size() == 1);
    CHECK(hvp.values[0] == 4611686016279904256.0);
}

TEST_CASE("a zero partial absorbs an infinite adjoint, in both modes") {
    // f(x, y) = x * sqrt(y) at x = 0, y = 0: d/dy = x * infinity, taken as 0 by the rule.
    TapeParts parts;
    parts.inputs = 2;
    parts.instructions = {
        {Op::Input, 0, 0, 0}, {Op::Input, 1, 0, 0}, {Op::Sqrt, 1, 0, 0}, {Op::Mul, 0, 2, 0}};
    parts.outputs = {3};
    const reference::Vm vm{Tape(parts)};
    const std::vector<double> x = {0, 0};
    for (auto mode : {JacobianMode::forward, JacobianMode::reverse}) {
        const auto jac = test::jacobian(vm, x, mode);
        CHECK(jac[0] == 0);  // sqrt(0)
        CHECK(jac[1] == 0);
    }
    // An infinite adjoint through a zero partial: g(x, y) = (1/x) * y at x = 0, y = 0 is
    // NaN in value, and dg/dy = 1/x = infinity, dg/dx = y * -1/x^2 = 0 * -infinity -> 0.
    parts.instructions = {
        {Op::Input, 0, 0, 0}, {Op::Input, 1, 0, 0}, {Op::Recip, 0, 0, 0}, {Op::Mul, 2, 1, 0}};
    const reference::Vm vm2{Tape(parts)};
    for (auto mode : {JacobianMode::forward, JacobianMode::reverse}) {
        const auto jac = test::jacobian(vm2, x, mode);
        CHECK(jac[0] == 0);
        CHECK(jac[1] == infinity);
    }
}

TEST_CASE("op table: numbers are stable and names round-trip") {
    // Numbers are stored in .tape files; echidna's numbering for 0..42.
    CHECK(static_cast<std::uint32_t>(Op::Input) == 0);
    CHECK(static_cast<std::uint32_t>(Op::Const) == 1);
    CHECK(static_cast<std::uint32_t>(Op::Powi) == 16);
    CHECK(static_cast<std::uint32_t>(Op::Ln1p) == 23);
    CHECK(static_cast<std::uint32_t>(Op::Atanh) == 35);
    CHECK(static_cast<std::uint32_t>(Op::Fract) == 42);
    CHECK(static_cast<std::uint32_t>(Op::Lt) == 43);
    CHECK(static_cast<std::uint32_t>(Op::Select) == 49);
    CHECK(static_cast<std::uint32_t>(Op::Fma) == 50);
    CHECK(static_cast<std::uint32_t>(Op::Param) == 51);
    CHECK(static_cast<std::uint32_t>(Op::Erf) == 52);
    CHECK(static_cast<std::uint32_t>(Op::Erfc) == 53);
    CHECK(static_cast<std::uint32_t>(Op::Lgamma) == 54);
    CHECK(static_cast<std::uint32_t>(Op::Digamma) == 55);
    CHECK(static_cast<std::uint32_t>(Op::Copysign) == 56);
    CHECK(static_cast<std::uint32_t>(Op::LogSumExp) == 57);
    CHECK(op_from_text("log_sum_exp") == Op::LogSumExp);
    CHECK(op_from_text("lgamma") == Op::Lgamma);
    CHECK(op_count == 58);
    for (std::uint32_t number = 0; number < op_count; ++number) {
        const Op op = static_cast<Op>(number);
        CHECK(op_from_text(info(op).text) == op);
    }
    CHECK(arity(Op::Powi) == 1);
    CHECK(has_flag(Op::Powi, op_flag::immediate));
    CHECK(arity(Op::Fma) == 3);
    CHECK(has_flag(Op::Lt, op_flag::comparison));
    CHECK(!has_flag(Op::Sub, op_flag::commutative));
}

TEST_CASE("digamma and trigamma: known values, recurrence and reflection") {
    const reference::Vm vm(test::single_op_tape(Op::Digamma));
    auto psi = [&](double x) { return test::forward(vm, std::vector<double>{x})[0]; };
    auto psi1 = [&](double x) {
        return test::jacobian(vm, std::vector<double>{x}, JacobianMode::reverse)[0];
    };
    const double pi = std::numbers::pi;
    const double euler = 0.5772156649015329;
    CHECK(test::close_relative(psi(1), -euler, 2.3e-16));
    CHECK(test::close_relative(psi(0.5), -euler - 2 * std::numbers::ln2, 4.5e-16));
    CHECK(test::close_relative(psi(2), 1 - euler, 4.5e-16));
    CHECK(test::close_relative(psi1(1), pi * pi / 6, 4.5e-16));
    CHECK(test::close_relative(psi1(0.5), pi * pi / 2, 4.5e-16));
    CHECK(test::close_relative(psi1(2), pi * pi / 6 - 1, 4.5e-16));
    // The positive zero x0 = 1.4616321449683623: the error there stays relative (the fit
    // around x0), psi(x0 + h) ~ psi1(x0) h.
    CHECK(std::fabs(psi(1.4616321449683623)) < 1e-16);
    const double near_zero = 1.4616321449683622 + 1e-9;
    const double offset = (near_zero - 1.4616321449683622) - 9.549995429965697e-17;  // from the true zero
    CHECK(test::close_relative(psi(near_zero), 0.9676722454476213 * offset, 1e-8));
    for (double x : {0.3, 1.2, 1.6, 2.7, 5.5, 9.5, 10.5, 33.3, 1e5, 1e15}) {
        INFO("x = " << x);
        CHECK(test::close(psi(x + 1), psi(x) + 1 / x, 4.5e-16));
        // Rearranged so the scale is the larger side (psi1(x) = 12.2 at 0.3, psi1(x + 1) = 1.13:
        // the difference form cancels the rounding of psi1(x) into psi1(x + 1)'s scale).
        CHECK(test::close(psi1(x + 1) + 1 / (x * x), psi1(x), 4.5e-16));
        CHECK(test::close_relative(psi(x), digamma(x), 9e-16));
        CHECK(test::close_relative(psi1(x), trigamma(x), 9e-16));
    }
    for (double x : {0.3, 0.7, 2.25, 3.6}) {
        INFO("reflection at x = " << x);
        // psi(1 - x) - psi(x) = pi cot(pi x);  psi1(1 - x) + psi1(x) = pi^2 / sin^2(pi x), with
        // pi x reduced first (x - round(x) is exact).
        const double reduced = pi * (x - std::round(x));
        CHECK(test::close(psi(1 - x) - psi(x), pi / std::tan(reduced), 2e-15));
        CHECK(test::close(psi1(1 - x) + psi1(x), pi * pi / (std::sin(reduced) * std::sin(reduced)), 2e-15));
    }
    for (double x : {-0.5, -1.5, -3.7, -10.25, -100.5}) {
        INFO("negative x = " << x);
        CHECK(test::close(psi(x), digamma(x), 2e-15));
        CHECK(test::close_relative(psi1(x), trigamma(x), 2e-15));
    }
}

TEST_CASE("erf, erfc, lgamma, copysign, log_sum_exp against the C library on a grid") {
    const reference::Vm erf_vm(test::single_op_tape(Op::Erf));
    const reference::Vm erfc_vm(test::single_op_tape(Op::Erfc));
    const reference::Vm lgamma_vm(test::single_op_tape(Op::Lgamma));
    for (double x = -30; x <= 30; x += 0.37) {
        INFO("x = " << x);
        const std::vector<double> at = {x};
        CHECK(test::forward(erf_vm, at)[0] == std::erf(x));
        CHECK(test::forward(erfc_vm, at)[0] == std::erfc(x));
        CHECK(test::forward(lgamma_vm, at)[0] == std::lgamma(x));
    }
    const reference::Vm copysign_vm(test::single_op_tape(Op::Copysign));
    const reference::Vm lse_vm(test::single_op_tape(Op::LogSumExp));
    for (double a : {-3.5, -0.0, 0.0, 0.25, 7.0}) {
        for (double b : {-2.0, -0.0, 0.0, 1.5}) {
            INFO("a = " << a << ", b = " << b);
            const std::vector<double> at = {a, b};
            const double got = test::forward(copysign_vm, at)[0];
            CHECK(got == std::copysign(a, b));
            CHECK(std::signbit(got) == std::signbit(b));
            const long double expected =
                std::log(std::exp(static_cast<long double>(a)) + std::exp(static_cast<long double>(b)));
            CHECK(test::close_relative(test::forward(lse_vm, at)[0], static_cast<double>(expected), 4.5e-16));
        }
    }
}

TEST_CASE("the new ops through the C++ API and a .tape round trip") {
    const Tape tape = record(2, [](std::span<const Var> x) {
        return std::vector<Var>{erf(x[0]),     erfc(x[0]),           lgamma(x[1]),
                                digamma(x[1]), copysign(x[0], x[1]), log_sum_exp(x[0], x[1])};
    });
    std::stringstream file;
    save(tape, file);
    const Tape loaded = load(file);
    REQUIRE(loaded.instructions().size() == tape.instructions().size());
    std::set<Op> seen;
    for (std::size_t i = 0; i < tape.instructions().size(); ++i) {
        CHECK(loaded.instructions()[i].op == tape.instructions()[i].op);
        seen.insert(loaded.instructions()[i].op);
    }
    for (Op op : {Op::Erf, Op::Erfc, Op::Lgamma, Op::Digamma, Op::Copysign, Op::LogSumExp}) {
        CHECK_MESSAGE(seen.count(op) == 1, info(op).name);
    }
    const reference::Vm vm(loaded);
    const auto y = test::forward(vm, std::vector<double>{0.75, 3.5});
    REQUIRE(y.size() == 6);
    CHECK(y[0] == std::erf(0.75));
    CHECK(y[1] == std::erfc(0.75));
    CHECK(y[2] == std::lgamma(3.5));
    CHECK(test::close_relative(y[3], digamma(3.5), 4.5e-16));
    CHECK(y[4] == 0.75);
    CHECK(test::close_relative(y[5], std::log(std::exp(0.75) + std::exp(3.5)), 4.5e-16));
}
