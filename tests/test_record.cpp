// The recording API: what record() puts on the tape (folding, exact identities only),
// operator and <cmath> coverage, parameters, guards on C++ branches, thread-local recording,
// and misuse (mixing tapes, Vars outliving their recording).
#include <array>
#include <barrier>
#include <cmath>
#include <limits>
#include <set>
#include <thread>

#include <doctest/doctest.h>

#include "tapevm/error.hpp"
#include "tapevm/var.hpp"
#include "test_util.hpp"

using namespace tapevm;

namespace {

std::size_t count_op(const Tape& tape, Op op) {
    std::size_t count = 0;
    for (const Instruction& ins : tape.instructions()) count += ins.op == op;
    return count;
}

double value_at(const Tape& tape, std::vector<double> x, std::vector<double> p = {}) {
    return test::forward(reference::Vm(tape), x, p)[0];
}

}  // namespace

TEST_CASE("record: a simple function, its value and gradient") {
    const Tape tape = record(2, [](std::span<const Var> x) { return sin(x[0]) * x[1] + 1.0; });
    CHECK(tape.input_count() == 2);
    CHECK(tape.output_count() == 1);
    CHECK(tape.param_count() == 0);
    const reference::Vm vm(tape);
    const std::vector<double> x = {0.3, -1.7};
    CHECK(test::close(test::forward(vm, x)[0], std::sin(0.3) * -1.7 + 1.0, 1e-15));
    std::vector<double> gradient(2);
    vm.gradient(single_point<double>(x), std::span<double>(gradient));
    CHECK(gradient[0] == doctest::Approx(std::cos(0.3) * -1.7).epsilon(1e-15));
    CHECK(gradient[1] == doctest::Approx(std::sin(0.3)).epsilon(1e-15));
}

TEST_CASE("record: constants fold and never reach the tape") {
    const Tape tape = record(1, [](std::span<const Var> x) {
        const Var c = Var(2.0) * 3.0 + sqrt(Var(16.0));  // 10, folded
        CHECK(c.is_constant());
        CHECK(c.value() == 10.0);
        return x[0] * c;
    });
    CHECK(tape.instruction_count() == 3);  // input, const 10, mul
    CHECK(tape.constant_count() == 1);
    CHECK(tape.constants()[0] == 10.0);
    CHECK(value_at(tape, {1.5}) == 15.0);
}

TEST_CASE("record: only identities exact for every input are applied") {
    // Exact: x*1, 1*x, x/1, x+(-0), (-0)+x, x-0 add nothing.
    const Tape exact = record(1, [](std::span<const Var> x) {
        Var y = x[0] * 1.0;
        y = 1.0 * y;
        y = y / 1.0;
        y = y + -0.0;
        y = -0.0 + y;
        y = y - 0.0;
        return y;
    });
    CHECK(exact.instruction_count() == 1);
    CHECK(exact.outputs()[0] == 0);
    // Not exact: x*0 (inf*0 is NaN), x-x (inf-inf is NaN), x+0 (-0+0 is +0) stay on the tape.
    const Tape times_zero = record(1, [](std::span<const Var> x) { return x[0] * 0.0; });
    CHECK(count_op(times_zero, Op::Mul) == 1);
    CHECK(std::isnan(value_at(times_zero, {INFINITY})));
    const Tape minus_self = record(1, [](std::span<const Var> x) { return x[0] - x[0]; });
    CHECK(count_op(minus_self, Op::Sub) == 1);
    CHECK(std::isnan(value_at(minus_self, {INFINITY})));
    const Tape plus_zero = record(1, [](std::span<const Var> x) { return x[0] + 0.0; });
    CHECK(count_op(plus_zero, Op::Add) == 1);
    const double at_minus_zero = value_at(plus_zero, {-0.0});
    CHECK(at_minus_zero == 0.0);
    CHECK(!std::signbit(at_minus_zero));
}

TEST_CASE("record: operators and <cmath> names map to their ops") {
    struct Case {
        Op op;
        std::function<Var(const Var&, const Var&)> f;
    };
    const std::vector<Case> cases = {
        {Op::Add, [](const Var& a, const Var& b) { return a + b; }},
        {Op::Sub, [](const Var& a, const Var& b) { return a - b; }},
        {Op::Mul, [](const Var& a, const Var& b) { return a * b; }},
        {Op::Div, [](const Var& a, const Var& b) { return a / b; }},
        {Op::Rem, [](const Var& a, const Var& b) { return fmod(a, b); }},
        {Op::Powf, [](const Var& a, const Var& b) { return pow(a, b); }},
        {Op::Atan2, [](const Var& a, const Var& b) { return atan2(a, b); }},
        {Op::Hypot, [](const Var& a, const Var& b) { return hypot(a, b); }},
        {Op::Max, [](const Var& a, const Var& b) { return fmax(a, b); }},
        {Op::Min, [](const Var& a, const Var& b) { return fmin(a, b); }},
        {Op::Max, [](const Var& a, const Var& b) { return max(a, b); }},
        {Op::Min, [](const Var& a, const Var& b) { return min(a, b); }},
        {Op::Neg, [](const Var& a, const Var&) { return -a; }},
        {Op::Recip, [](const Var& a, const Var&) { return recip(a); }},
        {Op::Sqrt, [](const Var& a, const Var&) { return sqrt(a); }},
        {Op::Cbrt, [](const Var& a, const Var&) { return cbrt(a); }},
        {Op::Powi, [](const Var& a, const Var&) { return pow(a, 3); }},
        {Op::Powi, [](const Var& a, const Var&) { return powi(a, -2); }},
        {Op::Exp, [](const Var& a, const Var&) { return exp(a); }},
        {Op::Exp2, [](const Var& a, const Var&) { return exp2(a); }},
        {Op::Expm1, [](const Var& a, const Var&) { return expm1(a); }},
        {Op::Ln, [](const Var& a, const Var&) { return log(a); }},
        {Op::Log2, [](const Var& a, const Var&) { return log2(a); }},
        {Op::Log10, [](const Var& a, const Var&) { return log10(a); }},
        {Op::Ln1p, [](const Var& a, const Var&) { return log1p(a); }},
        {Op::Sin, [](const Var& a, const Var&) { return sin(a); }},
        {Op::Cos, [](const Var& a, const Var&) { return cos(a); }},
        {Op::Tan, [](const Var& a, const Var&) { return tan(a); }},
        {Op::Asin, [](const Var& a, const Var&) { return asin(a); }},
        {Op::Acos, [](const Var& a, const Var&) { return acos(a); }},
        {Op::Atan, [](const Var& a, const Var&) { return atan(a); }},
        {Op::Sinh, [](const Var& a, const Var&) { return sinh(a); }},
        {Op::Cosh, [](const Var& a, const Var&) { return cosh(a); }},
        {Op::Tanh, [](const Var& a, const Var&) { return tanh(a); }},
        {Op::Asinh, [](const Var& a, const Var&) { return asinh(a); }},
        {Op::Acosh, [](const Var& a, const Var&) { return acosh(a); }},
        {Op::Atanh, [](const Var& a, const Var&) { return atanh(a); }},
        {Op::Abs, [](const Var& a, const Var&) { return abs(a); }},
        {Op::Abs, [](const Var& a, const Var&) { return fabs(a); }},
        {Op::Signum, [](const Var& a, const Var&) { return sign(a); }},
        {Op::Floor, [](const Var& a, const Var&) { return floor(a); }},
        {Op::Ceil, [](const Var& a, const Var&) { return ceil(a); }},
        {Op::Round, [](const Var& a, const Var&) { return round(a); }},
        {Op::Trunc, [](const Var& a, const Var&) { return trunc(a); }},
        {Op::Fract, [](const Var& a, const Var&) { return fract(a); }},
        {Op::Lt, [](const Var& a, const Var& b) { return (a < b).var(); }},
        {Op::Le, [](const Var& a, const Var& b) { return (a <= b).var(); }},
        {Op::Gt, [](const Var& a, const Var& b) { return (a > b).var(); }},
        {Op::Ge, [](const Var& a, const Var& b) { return (a >= b).var(); }},
        {Op::Eq, [](const Var& a, const Var& b) { return (a == b).var(); }},
        {Op::Ne, [](const Var& a, const Var& b) { return (a != b).var(); }},
        {Op::Select, [](const Var& a, const Var& b) { return select(a < b, a, b); }},
        {Op::Fma, [](const Var& a, const Var& b) { return fma(a, b, a); }},
        {Op::Erf, [](const Var& a, const Var&) { return erf(a); }},
        {Op::Erfc, [](const Var& a, const Var&) { return erfc(a); }},
        {Op::Lgamma, [](const Var& a, const Var&) { return lgamma(a); }},
        {Op::Digamma, [](const Var& a, const Var&) { return digamma(a); }},
        {Op::Copysign, [](const Var& a, const Var& b) { return copysign(a, b); }},
        {Op::LogSumExp, [](const Var& a, const Var& b) { return log_sum_exp(a, b); }},
    };
    std::set<Op> seen;
    for (const Case& c : cases) {
        const Tape tape = record(2, [&](std::span<const Var> x) { return c.f(x[0], x[1]); });
        const Instruction& last = tape.instructions()[tape.outputs()[0]];
        CHECK_MESSAGE(last.op == c.op, "expected ", info(c.op).name, ", got ", info(last.op).name);
        seen.insert(c.op);
    }
    for (std::uint32_t number = 0; number < op_count; ++number) {
        const Op op = static_cast<Op>(number);
        if (!has_flag(op, op_flag::leaf)) CHECK_MESSAGE(seen.count(op) == 1, info(op).name, " not reachable");
    }
}

TEST_CASE("record: pow overloads pick Powi for integers, Powf otherwise") {
    const Tape tape = record(2, [](std::span<const Var> x) {
        return std::vector<Var>{pow(x[0], 2), pow(x[0], 2.0), pow(2.0, x[0]), pow(x[0], x[1]), pow(x[0], 3L)};
    });
    const auto op_of = [&](std::size_t k) { return tape.instructions()[tape.outputs()[k]].op; };
    CHECK(op_of(0) == Op::Powi);
    CHECK(powi_exponent(tape.instructions()[tape.outputs()[0]]) == 2);
    CHECK(op_of(1) == Op::Powf);
    CHECK(op_of(2) == Op::Powf);
    CHECK(op_of(3) == Op::Powf);
    CHECK(op_of(4) == Op::Powi);
    const auto y = test::forward(reference::Vm(tape), std::vector<double>{1.5, 0.5});
    CHECK(y[0] == 2.25);
    CHECK(y[1] == 2.25);
    CHECK(y[2] == std::pow(2.0, 1.5));
    CHECK(y[3] == std::pow(1.5, 0.5));
    CHECK(y[4] == 3.375);
}

TEST_CASE("record: mixed Var/double/int arithmetic and compound assignment") {
    const Tape tape = record(1, [](std::span<const Var> x) {
        Var y = 2 * x[0] + 1;  // ints
        y += 0.5;
        y -= x[0];
        y *= 3;
        y /= 2.0;
        return -y + 10 - (4.0 / x[0]);
    });
    const double x = 1.25;
    double y = 2 * x + 1;
    y += 0.5;
    y -= x;
    y *= 3;
    y /= 2.0;
    CHECK(value_at(tape, {x}) == -y + 10 - (4.0 / x));
}

TEST_CASE("record: several outputs as vector or array, constant and input outputs") {
    const Tape tape = record(2, [](std::span<const Var> x) {
        return std::array<Var, 3>{x[1], Var(7.0), x[0] * x[1]};
    });
    CHECK(tape.output_count() == 3);
    const auto y = test::forward(reference::Vm(tape), std::vector<double>{2, 3});
    CHECK(y == std::vector<double>{3, 7, 6});
    const auto jac = test::jacobian(reference::Vm(tape), std::vector<double>{2, 3}, JacobianMode::reverse);
    CHECK(jac == std::vector<double>{0, 1, 0, 0, 3, 2});
}

TEST_CASE("record: parameters are not differentiated, shared or per point") {
    // f(x; p) = p0 * x0^2 + p1 * x1
    const Tape tape = record(2, 2, [](std::span<const Var> x, std::span<const Var> p) {
        return p[0] * x[0] * x[0] + p[1] * x[1];
    });
    CHECK(tape.param_count() == 2);
    CHECK(tape.instructions()[2].op == Op::Param);
    CHECK(tape.instructions()[3].op == Op::Param);
    const reference::Vm vm(tape);
    const std::vector<double> x = {1, 2, 3, 4, 5, 6};  // three points
    std::vector<double> gradients(6);
    SUBCASE("shared") {
        const std::vector<double> p = {10, 100};
        vm.gradient(Batch<double>{3, x, p}, std::span<double>(gradients));
        CHECK(gradients == std::vector<double>{20, 100, 60, 100, 100, 100});
    }
    SUBCASE("per point") {
        const std::vector<double> p = {1, 2, 3, 4, 5, 6};
        vm.gradient(Batch<double>{3, x, p}, std::span<double>(gradients));
        CHECK(gradients == std::vector<double>{2, 2, 18, 4, 50, 6});
        std::vector<double> y(3);
        vm.forward(Batch<double>{3, x, p}, std::span<double>(y));
        CHECK(y == std::vector<double>{1 + 4, 27 + 16, 125 + 36});
    }
    SUBCASE("wrong count") {
        const std::vector<double> p = {1, 2, 3};
        CHECK_THROWS_AS(vm.gradient(Batch<double>{3, x, p}, std::span<double>(gradients)), ShapeError);
    }
}

TEST_CASE("record: a comparison used as a bool records a guard, replay reports other branches") {
    const Tape tape = record(std::vector<double>{2.0}, [](std::span<const Var> x) {
        if (x[0] > 1.0) return x[0] * x[0];
        return -x[0];
    });
    REQUIRE(tape.guard_count() == 1);
    CHECK(tape.guards()[0].expected == 1);
    CHECK(count_op(tape, Op::Neg) == 0);  // the other branch was never recorded
    const reference::Vm vm(tape);
    const std::vector<double> x = {3, 0.5, 2, -4, 1};  // 1 is not > 1
    std::vector<double> y(5);
    const Report report = vm.forward(Batch<double>{5, x, {}}, std::span<double>(y));
    CHECK(report.diverged == std::vector<std::size_t>{1, 3, 4});
    CHECK(y[0] == 9);     // recorded branch
    CHECK(y[1] == 0.25);  // recorded branch, reported as diverged
    // Recording at another point takes the other branch.
    const Tape other = record(std::vector<double>{0.0}, [](std::span<const Var> v) {
        if (v[0] > 1.0) return v[0] * v[0];
        return -v[0];
    });
    CHECK(other.guards()[0].expected == 0);
    CHECK(value_at(other, {0.5}) == -0.5);
}

TEST_CASE("record: && and || guard only the comparisons C++ evaluates; select records no guard") {
    const Tape tape = record(std::vector<double>{-1.0, 5.0}, [](std::span<const Var> x) {
        if (x[0] > 0.0 && x[1] > 0.0) return x[0];  // x[0] > 0 is false: the second is never evaluated
        return x[1];
    });
    CHECK(tape.guard_count() == 1);
    const Tape branch_free =
        record(2, [](std::span<const Var> x) { return select(x[0] > x[1], x[0], x[1]); });
    CHECK(branch_free.guard_count() == 0);
    const reference::Vm vm(branch_free);
    const std::vector<double> x = {1, 2, 5, 3};
    std::vector<double> y(2);
    const Report report = vm.forward(Batch<double>{2, x, {}}, std::span<double>(y));
    CHECK(report.all_guards_hold());
    CHECK(y == std::vector<double>{2, 5});
    std::vector<double> gradients(4);
    vm.gradient(Batch<double>{2, x, {}}, std::span<double>(gradients));
    CHECK(gradients == std::vector<double>{0, 1, 1, 0});
}

TEST_CASE("record: comparisons of constants need no guard") {
    const Tape tape = record(1, [](std::span<const Var> x) {
        if (Var(2.0) > 1.0) return x[0];
        return -x[0];
    });
    CHECK(tape.guard_count() == 0);
}

TEST_CASE("record: two threads record two tapes at once") {
    std::barrier sync(2);
    Tape tapes[2];
    auto work = [&](int which) {
        tapes[which] = record(1, [&](std::span<const Var> x) {
            Var y = x[0];
            for (int step = 0; step < 50; ++step) {
                sync.arrive_and_wait();  // both recordings are open at the same time
                y = which == 0 ? y + 1.0 : y * 2.0;
            }
            return y;
        });
    };
    std::thread first(work, 0);
    std::thread second(work, 1);
    first.join();
    second.join();
    CHECK(value_at(tapes[0], {1.0}) == 51.0);
    CHECK(value_at(tapes[1], {1.0}) == std::ldexp(1.0, 50));
    CHECK(count_op(tapes[0], Op::Mul) == 0);
    CHECK(count_op(tapes[1], Op::Add) == 0);
}

TEST_CASE("record: misuse throws RecordingError") {
    SUBCASE("mixing Vars of two tapes") {
        CHECK_THROWS_AS(record(1,
                               [](std::span<const Var> outer) {
                                   const Tape inner =
                                       record(1, [&](std::span<const Var> x) { return x[0] + outer[0]; });
                                   return outer[0];
                               }),
                        RecordingError);
    }
    SUBCASE("a Var used after its record() returned") {
        Var escaped;
        record(1, [&](std::span<const Var> x) {
            escaped = x[0] * 2.0;
            return escaped;
        });
        CHECK_THROWS_AS(escaped + 1.0, RecordingError);
        CHECK_THROWS_AS(static_cast<void>(static_cast<bool>(escaped > 0.0)), RecordingError);
    }
    SUBCASE("a Var of another thread's recording") {
        Var foreign;
        bool threw = false;
        record(1, [&](std::span<const Var> x) {
            foreign = x[0];
            std::thread([&] {
                try {
                    record(1, [&](std::span<const Var> y) { return y[0] + foreign; });
                } catch (const RecordingError&) {
                    threw = true;
                }
            }).join();
            return x[0];
        });
        CHECK(threw);
    }
    SUBCASE("an exception in f leaves the thread ready to record again") {
        CHECK_THROWS_AS(record(1, [](std::span<const Var>) -> Var { throw Error("boom"); }), Error);
        const Tape tape = record(1, [](std::span<const Var> x) { return x[0] + 2.0; });
        CHECK(value_at(tape, {1.0}) == 3.0);
    }
}
