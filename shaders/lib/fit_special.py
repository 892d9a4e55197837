#!/usr/bin/env python3
"""Fits the coefficients of math_f64_special.glsl and math_f32_special.glsl (erf, erfc, lgamma)
with mpmath and prints them as GLSL constants (run by hand, the output is pasted).

    python3 fit_special.py

Each fit is a near-minimax Chebyshev fit (mpmath.chebyfit, 40 digits) of a smooth function on
an interval [lo, hi] mapped to u in [-1, 1] (x = c + h u), printed as monomial coefficients
in u, lowest degree first (well conditioned: |u| <= 1). The comment gives the fit's maximum
relative error before rounding the coefficients to the target precision.

    erf(x) / x         in z = x^2 on [0, 0.25]                       (|x| < 0.5)
    erfcx(x) = erfc(x) exp(x^2)  per piece of [0.5, 28] (f64), [0.5, 10.5] (f32)
    lgamma(2 + t) / t  on t in [-0.5, 0.5]
"""
import mpmath as mp

mp.mp.dps = 40

ERFCX_PIECES = {"f64": [0.5, 1, 1.5, 2.25, 3.25, 4.75, 7, 10, 15, 21, 28],
                "f32": [0.5, 1, 1.5, 2.25, 3.25, 4.75, 7, 10.5]}
DEGREES = {"f64": dict(erf=8, erfcx=16, lgamma=18), "f32": dict(erf=5, erfcx=8, lgamma=9)}


def erf_over_x(z):
    x = mp.sqrt(z)
    return mp.erf(x) / x if z > 0 else 2 / mp.sqrt(mp.pi)


def erfcx(x):
    return mp.erfc(x) * mp.exp(x * x)


def lgamma_over_t(t):
    return mp.loggamma(2 + t) / t if t != 0 else 1 - mp.euler


def fit(function, lo, hi, degree):
    c = (mp.mpf(lo) + hi) / 2
    h = (mp.mpf(hi) - lo) / 2
    g = lambda u: function(c + h * u)  # noqa: E731
    coefficients = list(reversed(mp.chebyfit(g, [-1, 1], degree + 1)))
    worst = max(abs((mp.polyval(list(reversed(coefficients)), u) - g(u)) / g(u))
                for u in mp.linspace(-1, 1, 400))
    return coefficients, worst


def literal(value, precision):
    return f"{float(value)!r}LF" if precision == "f64" else f"{mp.nstr(value, 10)}f"


def emit(name, coefficients, precision):
    kind = "double" if precision == "f64" else "float"
    text = ", ".join(literal(c, precision) for c in coefficients)
    print(f"const {kind} {name}[{len(coefficients)}] = {kind}[{len(coefficients)}]({text});")


def main():
    for precision in ("f64", "f32"):
        prefix = "TVD_" if precision == "f64" else "TVF_"
        degrees = DEGREES[precision]
        coefficients, error = fit(erf_over_x, 0, 0.25, degrees["erf"])
        print(f"// erf(x)/x at z = x^2 = 0.125 + 0.125 u, degree {degrees['erf']}, rel. error {mp.nstr(error, 3)}")
        emit(prefix + "ERF_P", coefficients, precision)
        bounds = ERFCX_PIECES[precision]
        everything = []
        for lo, hi in zip(bounds, bounds[1:]):
            coefficients, error = fit(erfcx, lo, hi, degrees["erfcx"])
            print(f"// erfcx on [{lo}, {hi}], degree {degrees['erfcx']}, rel. error {mp.nstr(error, 3)}")
            everything += coefficients
        emit(prefix + "ERFCX_P", everything, precision)
        coefficients, error = fit(lgamma_over_t, -0.5, 0.5, degrees["lgamma"])
        print(f"// lgamma(2 + t)/t on [-0.5, 0.5], degree {degrees['lgamma']}, rel. error {mp.nstr(error, 3)}")
        emit(prefix + "LGAMMA_P", coefficients, precision)


if __name__ == "__main__":
    main()
