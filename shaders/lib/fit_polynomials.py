#!/usr/bin/env python3
"""Fits the polynomial coefficients of math_f64.glsl and math_f32.glsl (near-minimax
Chebyshev fits computed with mpmath at 60 digits) and prints them as GLSL constants.

    python3 fit_polynomials.py        (needs mpmath; run by hand, the output is pasted)

Each fit names the function approximated, its variable and interval, so the constants in
the library can be checked or refitted. The printed error is the fit's own maximum
absolute error, before rounding the coefficients.
"""
import mpmath as mp

mp.mp.dps = 60


def exp_rational(t):  # exp(r) = 1 + 2r / (R(r^2) - r), R(t) = 2 + t * P(t)
    r = mp.sqrt(t)
    return (r * (mp.exp(r) + 1) / mp.expm1(r) - 2) / t if t > 0 else mp.mpf(1) / 6


def log_atanh(z):  # log((1+s)/(1-s)) = 2s + s * z * P(z), z = s^2
    s = mp.sqrt(z)
    return (2 * mp.atanh(s) / s - 2) / z if z > 0 else mp.mpf(2) / 3


def pow_log(z):  # (3/2) log((1+s)/(1-s)) = 3s + s^3 + s * z^2 * P(z)
    s = mp.sqrt(z)
    return (3 * mp.atanh(s) / s - 3 - z) / z**2 if z > 0 else mp.mpf(3) / 5


def expm1_tail(r):  # expm1(r) = r + r^2/2 + r^3 * P(r)
    return (mp.expm1(r) - r - r * r / 2) / r**3 if r != 0 else mp.mpf(1) / 6


def exp2_poly(r):  # 2^r = 1 + r * P(r)
    return (mp.power(2, r) - 1) / r if r != 0 else mp.log(2)


def sin_tail(z):  # sin(x) = x + x * z * P(z), z = x^2
    x = mp.sqrt(z)
    return (mp.sin(x) - x) / (x * z) if z > 0 else -mp.mpf(1) / 6


def cos_tail(z):  # cos(x) = 1 - z/2 + z^2 * P(z)
    return (mp.cos(mp.sqrt(z)) - 1 + z / 2) / z**2 if z > 0 else mp.mpf(1) / 24


def asin_tail(z):  # asin(x) = x + x * z * P(z)
    x = mp.sqrt(z)
    return (mp.asin(x) - x) / (x * z) if z > 0 else mp.mpf(1) / 6


def atan_tail(z):  # atan(x) = x + x * z * P(z)
    x = mp.sqrt(z)
    return (mp.atan(x) - x) / (x * z) if z > 0 else -mp.mpf(1) / 3


FITS = [
    # name, function, interval, degree, precision ('f64' or 'f32')
    ("EXP_P", exp_rational, (0, (mp.log(2) / 2) ** 2), 4, "f64"),
    ("LOG_P", log_atanh, (0, ((mp.sqrt(2) - 1) / (mp.sqrt(2) + 1)) ** 2), 7, "f64"),
    ("POW_LOG_P", pow_log, (0, mp.mpf("0.0103")), 5, "f64"),
    ("EXPM1_P", expm1_tail, (-mp.log(2) / 2, mp.log(2) / 2), 10, "f64"),
    ("SIN_P", sin_tail, (0, (mp.pi / 4) ** 2), 6, "f64"),
    ("COS_P", cos_tail, (0, (mp.pi / 4) ** 2), 6, "f64"),
    ("ASIN_P", asin_tail, (0, mp.mpf(1) / 4), 12, "f64"),
    ("ATAN_P", atan_tail, (0, (mp.sqrt(2) - 1) ** 2), 12, "f64"),
    ("EXP2F_P", exp2_poly, (-mp.mpf(1) / 2, mp.mpf(1) / 2), 5, "f32"),
    ("EXPM1F_P", expm1_tail, (-mp.log(2) / 2, mp.log(2) / 2), 4, "f32"),
    ("LOGF_P", log_atanh, (0, ((mp.sqrt(2) - 1) / (mp.sqrt(2) + 1)) ** 2), 3, "f32"),
    ("SINF_P", sin_tail, (0, (mp.pi / 4) ** 2), 3, "f32"),
    ("COSF_P", cos_tail, (0, (mp.pi / 4) ** 2), 3, "f32"),
    ("ASINF_P", asin_tail, (0, mp.mpf(1) / 4), 5, "f32"),
    ("ATANF_P", atan_tail, (0, (mp.sqrt(2) - 1) ** 2), 5, "f32"),
]


def main():
    for name, function, (low, high), degree, precision in FITS:
        coefficients, error = mp.chebyfit(function, [low, high], degree + 1, error=True)
        coefficients = list(reversed(coefficients))  # lowest degree first
        print(f"// {name}: {function.__name__} on [{mp.nstr(low, 6)}, {mp.nstr(high, 6)}],"
              f" degree {degree}, fit error {mp.nstr(error, 3)}")
        for index, c in enumerate(coefficients):
            if precision == "f64":
                print(f"const double {name}{index} = {float(c)!r}LF;")
            else:
                print(f"const float {name}{index} = {mp.nstr(c, 10)}f;")


if __name__ == "__main__":
    main()


def split(value, bits):
    """`value` rounded to a double with `bits` significant bits (so that products by small
    integers are exact), and the rest rounded to double."""
    exponent = mp.floor(mp.log(abs(value), 2))
    scale = mp.power(2, bits - 1 - exponent)
    high = mp.floor(value * scale) / scale
    return float(high), float(value - high)


def constants():
    print("// Constants split into a head with few significant bits and a tail")
    pi = mp.pi
    for name, value, bits in [("LN2", mp.log(2), 32), ("PIO2", pi / 2, 33), ("PIO4", pi / 4, 33),
                              ("PI", pi, 33), ("INV_LN2", 1 / mp.log(2), 32),
                              ("INV_LN10", 1 / mp.log(10), 32), ("LOG10_2", mp.log10(2), 32),
                              ("POW_CP", 2 / (3 * mp.log(2)), 32),
                              ("POW_LOG2_1_5", mp.log(1.5, 2), 32)]:
        high, low = split(value, bits)
        print(f"const double {name}_HI = {high!r}LF;  // {bits} bits")
        print(f"const double {name}_LO = {low!r}LF;")
    rest = pi / 2
    for index in range(1, 4):
        part, _ = split(rest, 33)
        print(f"const double PIO2_PART{index} = {part!r}LF;  // 33 bits")
        rest -= part
    print(f"const double PIO2_PART4 = {float(rest)!r}LF;")
    words = []
    value = 2 / pi
    with mp.workdps(500):
        value = 2 / mp.pi
        for _ in range(40):
            value *= 2**32
            word = int(mp.floor(value))
            words.append(word)
            value -= word
    print("// 2/pi in 32-bit words, most significant first (bits after the binary point)")
    print("const uint TWO_OVER_PI[40] = uint[40](")
    for row in range(0, 40, 6):
        chunk = ", ".join(f"0x{w:08x}u" for w in words[row:row + 6])
        print(f"    {chunk}{',' if row + 6 < 40 else ');'}")
    rest = pi / 2
    for name, bits in [("PIO2_SPLIT_HI", 26)]:
        high, low = split(rest, bits)
        print(f"const double {name} = {high!r}LF;  // 26 bits, for exact products")
        print(f"const double PIO2_SPLIT_LO = {low!r}LF;")
        print(f"const double PIO2_SPLIT_TAIL = {float(pi / 2 - mp.mpf(high) - mp.mpf(low))!r}LF;")


if __name__ == "__main__":
    constants()
