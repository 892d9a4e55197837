// Dual numbers value + epsilon * tangent, for forward-over-reverse (hvp): over scalars in the
// reference VM (S = ScalarMath<T>) and over SIMD batches in the CPU VM (S = its SIMD policy,
// T = a batch). Every function is derived from the op table's own formulas
// (Formula<Op>::value/partials with S), so the dual numbers know nothing of calculus the
// table does not. Tangents follow the VM's accumulation rule: a zero factor absorbs an
// infinite partner.
#pragma once

#include <concepts>
#include <cstdint>

#include "detail/math_scalar.hpp"
#include "detail/op_formulas.hpp"

namespace tapevm::detail {

/// S is the math policy of the parts (ScalarMath<T> for plain scalars).
template <class T, class S = ScalarMath<T>> struct Dual {
    T value{};
    T tangent{};

    Dual() = default;
    Dual(T v) : value(v) {}  // NOLINT: a constant, as literals in formulas need
    Dual(T v, T t) : value(v), tangent(t) {}
    template <std::integral I> explicit Dual(I v) : value(static_cast<T>(v)) {}
};

template <Op op, class T, class S> Dual<T, S> dual_unary(Dual<T, S> a) {
    const T r = Formula<op>::template value<S>(a.value);
    T d[1];
    Formula<op>::template partials<S>(a.value, r, d);
    return {r, contribution<S>(d[0], a.tangent)};
}

template <Op op, class T, class S> Dual<T, S> dual_binary(Dual<T, S> a, Dual<T, S> b) {
    const T r = Formula<op>::template value<S>(a.value, b.value);
    T d[2];
    Formula<op>::template partials<S>(a.value, b.value, r, d);
    return {r, contribution<S>(d[0], a.tangent) + contribution<S>(d[1], b.tangent)};
}

template <class T, class S> Dual<T, S> operator+(Dual<T, S> a, Dual<T, S> b) {
    return dual_binary<Op::Add>(a, b);
}
template <class T, class S> Dual<T, S> operator-(Dual<T, S> a, Dual<T, S> b) {
    return dual_binary<Op::Sub>(a, b);
}
template <class T, class S> Dual<T, S> operator*(Dual<T, S> a, Dual<T, S> b) {
    return dual_binary<Op::Mul>(a, b);
}
template <class T, class S> Dual<T, S> operator/(Dual<T, S> a, Dual<T, S> b) {
    return dual_binary<Op::Div>(a, b);
}
template <class T, class S> Dual<T, S> operator-(Dual<T, S> a) {
    Dual<T, S> r = dual_unary<Op::Neg>(a);
    // A policy with its own neg (SIMD batches whose unary minus keeps +0) negates the value.
    if constexpr (requires(T x) { S::neg(x); }) r.value = S::neg(a.value);
    return r;
}
template <class T, class S> Dual<T, S>& operator+=(Dual<T, S>& a, Dual<T, S> b) { return a = a + b; }

// Comparisons look at values only: they decide branches, they have no derivative. They
// give S's mask (bool for scalars, a lane mask for batches).
template <class T, class S> auto operator<(Dual<T, S> a, Dual<T, S> b) { return a.value < b.value; }
template <class T, class S> auto operator<=(Dual<T, S> a, Dual<T, S> b) { return a.value <= b.value; }
template <class T, class S> auto operator>(Dual<T, S> a, Dual<T, S> b) { return a.value > b.value; }
template <class T, class S> auto operator>=(Dual<T, S> a, Dual<T, S> b) { return a.value >= b.value; }
template <class T, class S> auto operator==(Dual<T, S> a, Dual<T, S> b) { return a.value == b.value; }
// Not ==, through the policy: the same as != for scalars, and right for SIMD batches whose
// != is ordered.
template <class T, class S> auto operator!=(Dual<T, S> a, Dual<T, S> b) {
    return S::mask_not(a.value == b.value);
}

template <class T, class S = ScalarMath<T>> struct DualMath {
    using D = Dual<T, S>;
    using Mask = typename S::Mask;

    static D sqrt(D x) { return dual_unary<Op::Sqrt>(x); }
    static D cbrt(D x) { return dual_unary<Op::Cbrt>(x); }
    static D exp(D x) { return dual_unary<Op::Exp>(x); }
    static D exp2(D x) { return dual_unary<Op::Exp2>(x); }
    static D expm1(D x) { return dual_unary<Op::Expm1>(x); }
    static D log(D x) { return dual_unary<Op::Ln>(x); }
    static D log2(D x) { return dual_unary<Op::Log2>(x); }
    static D log10(D x) { return dual_unary<Op::Log10>(x); }
    static D log1p(D x) { return dual_unary<Op::Ln1p>(x); }
    static D sin(D x) { return dual_unary<Op::Sin>(x); }
    static D cos(D x) { return dual_unary<Op::Cos>(x); }
    static D tan(D x) { return dual_unary<Op::Tan>(x); }
    static D asin(D x) { return dual_unary<Op::Asin>(x); }
    static D acos(D x) { return dual_unary<Op::Acos>(x); }
    static D atan(D x) { return dual_unary<Op::Atan>(x); }
    static D atan2(D y, D x) { return dual_binary<Op::Atan2>(y, x); }
    static D sinh(D x) { return dual_unary<Op::Sinh>(x); }
    static D cosh(D x) { return dual_unary<Op::Cosh>(x); }
    static D tanh(D x) { return dual_unary<Op::Tanh>(x); }
    static D asinh(D x) { return dual_unary<Op::Asinh>(x); }
    static D acosh(D x) { return dual_unary<Op::Acosh>(x); }
    static D atanh(D x) { return dual_unary<Op::Atanh>(x); }
    static D erf(D x) { return dual_unary<Op::Erf>(x); }
    static D erfc(D x) { return dual_unary<Op::Erfc>(x); }
    static D lgamma(D x) { return dual_unary<Op::Lgamma>(x); }
    static D copysign(D x, D s) { return dual_binary<Op::Copysign>(x, s); }
    static D abs(D x) { return dual_unary<Op::Abs>(x); }
    static D sign(D x) { return dual_unary<Op::Signum>(x); }
    static D floor(D x) { return dual_unary<Op::Floor>(x); }
    static D ceil(D x) { return dual_unary<Op::Ceil>(x); }
    static D round(D x) { return dual_unary<Op::Round>(x); }
    static D trunc(D x) { return dual_unary<Op::Trunc>(x); }
    static D fmod(D x, D y) { return dual_binary<Op::Rem>(x, y); }
    static D pow(D x, D y) { return dual_binary<Op::Powf>(x, y); }
    static D hypot(D x, D y) { return dual_binary<Op::Hypot>(x, y); }
    static D powi(D x, std::int32_t n) {
        const T r = Formula<Op::Powi>::template value<S>(x.value, n);
        T d[1];
        Formula<Op::Powi>::template partials<S>(x.value, n, r, d);
        return {r, contribution<S>(d[0], x.tangent)};
    }
    static D fma(D x, D y, D z) {
        const T r = Formula<Op::Fma>::template value<S>(x.value, y.value, z.value);
        T d[3];
        Formula<Op::Fma>::template partials<S>(x.value, y.value, z.value, r, d);
        return {r, contribution<S>(d[0], x.tangent) + contribution<S>(d[1], y.tangent) +
                       contribution<S>(d[2], z.tangent)};
    }
    static Mask isnan(D x) { return S::isnan(x.value); }
    static Mask signbit(D x) { return S::signbit(x.value); }
    static D select(Mask m, D x, D y) {
        return {S::select(m, x.value, y.value), S::select(m, x.tangent, y.tangent)};
    }
    static Mask mask_and(Mask x, Mask y) { return S::mask_and(x, y); }
    static Mask mask_or(Mask x, Mask y) { return S::mask_or(x, y); }
    static Mask mask_not(Mask x) { return S::mask_not(x); }

    /// A dual is zero only when both parts are: a zero value with a non-zero tangent still
    /// carries a second-order term.
    static Mask is_zero(D x) { return S::mask_and(S::is_zero(x.value), S::is_zero(x.tangent)); }
    static Mask truth(D x) { return S::truth(x.value); }
};

}  // namespace tapevm::detail
