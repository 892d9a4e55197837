// The recording API: write a function on tapevm::Var, call record(), get a Tape.
//
//   tapevm::Tape tape = tapevm::record(2, [](std::span<const tapevm::Var> x) {
//       return sin(x[0]) * x[1] + 1.0;
//   });
//
// A Var is either a constant (a plain double, never on the tape until combined with a
// variable) or a variable: a slot of the tape being recorded on this thread. Every Var also
// carries its value at the recording point, so C++ branches on comparisons work: using a
// comparison of variables as a bool records a guard, and replay reports the points that
// would branch differently (Report::diverged). select() records both sides instead.
//
// Threads: recording is thread-local (docs/THREADS.md). Any number of threads may record at
// once, each its own tape, with the result of a serial recording; a record() inside another on
// the same thread is a recording of its own. A variable Var copied to another thread cannot be
// used in that thread's recording. Mixing Vars of two tapes, or using a variable after its
// record() returned, throws RecordingError. While recording, constants fold and only identities exact for every input
// apply (x*1, x/1, x+(-0), x-0); never x*0 or x-x.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <type_traits>
#include <vector>

#include "tapevm/op.hpp"
#include "tapevm/tape.hpp"

namespace tapevm {

class Var;
class Cond;

namespace detail {
struct VarAccess;
}  // namespace detail

/// A value on the tape being recorded, or a constant.
class Var {
public:
    /// A constant.
    Var(double constant = 0.0) : value_(constant) {}  // NOLINT(google-explicit-constructor)
    template <std::integral I> Var(I constant) : value_(static_cast<double>(constant)) {}  // NOLINT

    Var& operator+=(const Var& other);
    Var& operator-=(const Var& other);
    Var& operator*=(const Var& other);
    Var& operator/=(const Var& other);

    /// Value at the recording point. Branching on it bakes the branch in without a guard:
    /// compare Vars instead.
    double value() const { return value_; }
    /// True for a constant (not on any tape).
    bool is_constant() const { return recording_ == 0; }
    /// The slot on the tape; meaningful only for variables.
    std::uint32_t slot() const { return slot_; }

private:
    friend struct detail::VarAccess;
    Var(double value, std::uint32_t slot, std::uint64_t recording)
        : value_(value), slot_(slot), recording_(recording) {}

    double value_ = 0.0;
    std::uint32_t slot_ = 0;
    std::uint64_t recording_ = 0;  // 0: a constant; else the id of the recording it belongs to
};

/// The outcome of comparing Vars: a 0/1 Var. Used as a C++ bool (if, while, &&, ||, !) it
/// records a guard and yields the outcome at the recording point; select() uses it without
/// a guard.
class Cond {
public:
    explicit Cond(Var flag) : flag_(flag) {}
    /// Records a guard (for a variable comparison) and returns the recorded outcome.
    explicit operator bool() const;
    /// The 0/1 value as a Var, for arithmetic or select().
    const Var& var() const { return flag_; }

private:
    Var flag_;
};

// Arithmetic. Mixed Var/double and Var/int work through Var's implicit constructors.
Var operator+(const Var& a, const Var& b);
Var operator-(const Var& a, const Var& b);
Var operator*(const Var& a, const Var& b);
Var operator/(const Var& a, const Var& b);
Var operator-(const Var& a);
inline Var operator+(const Var& a) { return a; }

Cond operator<(const Var& a, const Var& b);
Cond operator<=(const Var& a, const Var& b);
Cond operator>(const Var& a, const Var& b);
Cond operator>=(const Var& a, const Var& b);
Cond operator==(const Var& a, const Var& b);
Cond operator!=(const Var& a, const Var& b);

/// `if_true` where `condition` holds, else `if_false`; records both sides, no guard.
Var select(const Cond& condition, const Var& if_true, const Var& if_false);

// The <cmath> names.
Var sqrt(const Var& x);
Var cbrt(const Var& x);
Var exp(const Var& x);
Var exp2(const Var& x);
Var expm1(const Var& x);
Var log(const Var& x);
Var log2(const Var& x);
Var log10(const Var& x);
Var log1p(const Var& x);
Var sin(const Var& x);
Var cos(const Var& x);
Var tan(const Var& x);
Var asin(const Var& x);
Var acos(const Var& x);
Var atan(const Var& x);
Var sinh(const Var& x);
Var cosh(const Var& x);
Var tanh(const Var& x);
Var asinh(const Var& x);
Var acosh(const Var& x);
Var atanh(const Var& x);
Var abs(const Var& x);
Var fabs(const Var& x);
Var floor(const Var& x);
Var ceil(const Var& x);
Var round(const Var& x);
Var trunc(const Var& x);
/// -1, 0 or 1 (keeps -0, +0 and NaN).
Var sign(const Var& x);
/// x - trunc(x).
Var fract(const Var& x);
Var recip(const Var& x);
Var atan2(const Var& y, const Var& x);
Var hypot(const Var& x, const Var& y);
Var fmod(const Var& x, const Var& y);
/// Maximum ignoring a NaN operand; the adjoint goes to the larger operand, split on a tie.
Var fmax(const Var& x, const Var& y);
Var fmin(const Var& x, const Var& y);
Var max(const Var& x, const Var& y);
Var min(const Var& x, const Var& y);
Var fma(const Var& x, const Var& y, const Var& z);
Var pow(const Var& x, const Var& y);
Var pow(const Var& x, double y);
Var pow(double x, const Var& y);
Var powi(const Var& x, std::int32_t n);
/// The error function and its complement 1 - erf(x) (accurate where erf(x) is near 1).
Var erf(const Var& x);
Var erfc(const Var& x);
/// log|Gamma(x)| (+inf at 0 and the negative integers); its derivative is digamma.
Var lgamma(const Var& x);
/// Gamma'/Gamma (NaN at the negative integers, -1/x at +-0); its derivative is trigamma.
Var digamma(const Var& x);
/// |x| with the sign bit of `sign`; the derivative in x is +-1 (0 at x = +-0), none in `sign`.
Var copysign(const Var& x, const Var& sign);
/// log(exp(x) + exp(y)) without overflow: max + log1p(exp(-|x - y|)); +-inf and NaN as the
/// limits (log_sum_exp(-inf, -inf) = -inf).
Var log_sum_exp(const Var& x, const Var& y);
template <std::integral I> Var pow(const Var& x, I n) { return powi(x, static_cast<std::int32_t>(n)); }

namespace detail {

/// Sets up the thread's recording for record(); restores the previous one on destruction.
class RecordingScope {
public:
    RecordingScope(std::span<const double> inputs, std::span<const double> params);
    ~RecordingScope();
    RecordingScope(const RecordingScope&) = delete;
    RecordingScope& operator=(const RecordingScope&) = delete;

    std::span<const Var> inputs() const { return inputs_; }
    std::span<const Var> params() const { return params_; }
    /// The finished tape with these outputs.
    Tape finish(std::span<const Var> outputs);

    struct State;  // defined in var.cpp

private:
    std::unique_ptr<State> state_;
    State* previous_;
    std::vector<Var> inputs_;
    std::vector<Var> params_;
};

template <class Result> std::vector<Var> as_outputs(Result&& result) {
    if constexpr (std::is_convertible_v<Result, Var>) {
        return {Var(result)};
    } else {
        return std::vector<Var>(std::begin(result), std::end(result));
    }
}

}  // namespace detail

/// Records f at `inputs` (the recording point; branches are taken and guarded there) with
/// `params` the parameters' values there. f(std::span<const Var> x, std::span<const Var> p)
/// returns a Var or a range of Vars (the outputs).
template <class F> Tape record(std::span<const double> inputs, std::span<const double> params, F&& f) {
    detail::RecordingScope scope(inputs, params);
    auto outputs = detail::as_outputs(f(scope.inputs(), scope.params()));
    return scope.finish(outputs);
}

/// Records f(std::span<const Var> x) at `inputs`.
template <class F> Tape record(std::span<const double> inputs, F&& f) {
    return record(inputs, {}, [&](std::span<const Var> x, std::span<const Var>) { return f(x); });
}

/// Records f(x, p) with n_inputs inputs and n_params parameters, at x = 0, p = 0.
template <class F> Tape record(std::size_t n_inputs, std::size_t n_params, F&& f) {
    std::vector<double> x(n_inputs, 0.0);
    std::vector<double> p(n_params, 0.0);
    return record(std::span<const double>(x), std::span<const double>(p), std::forward<F>(f));
}

/// Records f(x) with n_inputs inputs, at x = 0.
template <class F> Tape record(std::size_t n_inputs, F&& f) {
    std::vector<double> x(n_inputs, 0.0);
    return record(std::span<const double>(x), std::forward<F>(f));
}

}  // namespace tapevm
