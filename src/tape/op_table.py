# The tapevm op table: the single source of truth for every opcode.
#
# Everything per-op in the project is generated from this list by gen_ops.py at build time:
# the C++ `enum class Op`, the name/arity/flag tables, and the value and partial-derivative
# formulas that the reference VM (and later the CPU kernels, the GLSL interpreter and the
# tape compiler) instantiate. Adding an op means adding one row here and its tests.
#
# Numbers are stored in .tape files: never renumber. 0..42 follow echidna's numbering; the
# comparisons, Select, Fma and Param come after.
#
# Formula language (parsed with Python's `ast`, emitted per target by gen_ops.py):
#   operands   a, b, c (in operand order), r (the op's result, partials only), n (Powi's
#              integer exponent, an immediate)
#   literals   numbers, `nan`, `inf`, `ln2`, `ln10`, `pi`
#   operators  + - * / unary -, comparisons (giving a mask), `and`, `or`, `not` on masks
#   calls      sqrt cbrt exp exp2 expm1 log log2 log10 log1p sin cos tan asin acos atan
#              atan2 sinh cosh tanh asinh acosh atanh abs sign floor ceil round trunc fmod
#              pow powi hypot fma erf erfc lgamma copysign isnan signbit select(mask, x, y)
#              (primitives: every math policy implements them), and the FUNCTIONS below
#              (digamma, trigamma: defined by formulas over the primitives, so every target
#              gets them generated, derivatives in dual numbers included).
#   `x if cond else y` only for conditions on the immediate n (a compile-time scalar).
#   `lets` binds names used by the partials (evaluated once, in order).
#   `identities` lists (operand, constant, result): the op with that operand equal to that
#   constant (bit for bit) is exactly its operand `result`, for every input, NaN and signed
#   zeros included. The recorder and the optimiser both apply them (x*1, x/1, x+(-0), x-0);
#   x*0, x-x and x+0 are not exact and never appear here.
#
# Semantics (fixed here, checked by the reference VM's tests):
#   - Div's partials are (1/b, -r/b); Powf's partial in the exponent is 0 where the base is
#     <= 0; out-of-domain partials are NaN; Abs' is 0 at 0; step functions have zero partials
#     and Fract has 1.
#   - Max/Min ignore a NaN operand (IEEE maximumNumber/minimumNumber), prefer +0 over -0
#     (Max) and -0 over +0 (Min), and route the adjoint to the operand equal to the result,
#     split evenly on a tie (which is also what a central finite difference sees) or when
#     both are NaN.
#   - sign(x) is -1, 0 or 1 and keeps -0, +0 and NaN (numpy/JAX `sign`, not Rust's signum).
#   - Fract is x - trunc(x) (Rust's `fract`, echidna's op), Rem is C's fmod, Round rounds
#     half away from zero.
#   - Comparisons give 1 or 0; Select(c, x, y) is x where c != 0 (NaN counts as true).
#   - The VM applies one accumulation rule: a contribution partial * seed is exactly 0 when
#     either factor is exactly 0, so a zero partial absorbs an infinite or NaN adjoint and
#     forward and reverse mode agree.
#   - Formulas guard overflow where they would square a large operand (atan, asinh, acosh,
#     atan2, hypot), and avoid subnormal intermediates where the result is normal (log2's
#     partial is (1/|a|)/ln2: |a|*ln2 is subnormal at the smallest normal a, and devices that
#     flush subnormals made it inf).

LEAF = "leaf"                # no operands: Input, Const, Param
COMMUTATIVE = "commutative"  # value and partials symmetric in the first two operands
STEP = "step"                # piecewise constant: every partial is 0
COMPARISON = "comparison"    # gives 1 or 0
IMMEDIATE = "immediate"      # operand b is an int32 immediate (Powi's exponent), not a slot


def op(number, name, arity, value=None, partials=(), flags=(), lets=(), text=None, identities=()):
    return dict(number=number, name=name, arity=arity, value=value, partials=list(partials),
                flags=set(flags), lets=list(lets), text=text or name.lower(),
                identities=list(identities))


def compare(number, name, symbol, commutative=False):
    flags = {STEP, COMPARISON} | ({COMMUTATIVE} if commutative else set())
    return op(number, name, 2, f"select(a {symbol} b, 1, 0)", ["0", "0"], flags)


def step(number, name, value):
    return op(number, name, 1, value, ["0"], {STEP})


MAX_VALUE = ("select(a > b, a, select(b > a, b, select(isnan(a), b, select(isnan(b), a,"
             " select(signbit(a), b, a)))))")
MIN_VALUE = ("select(a < b, a, select(b < a, b, select(isnan(a), b, select(isnan(b), a,"
             " select(signbit(a), a, b)))))")
# Max and Min route the adjoint to the operand equal to the result: the larger (smaller) one,
# the number when the other is NaN, half to each on a tie or when both are NaN (so the
# partials are symmetric and CSE may swap the operands).
def maxmin_partials(symbol):
    one_nan = "isnan({}) and not isnan({})"
    first = (f"select(a {symbol} b, 1, select(b {symbol} a, 0, select({one_nan.format('a', 'b')}, 0,"
             f" select({one_nan.format('b', 'a')}, 1, 0.5))))")
    second = (f"select(a {symbol} b, 0, select(b {symbol} a, 1, select({one_nan.format('a', 'b')}, 1,"
              f" select({one_nan.format('b', 'a')}, 0, 0.5))))")
    return [first, second]


TWO_OVER_SQRT_PI = 1.1283791670955126  # 2/sqrt(pi), rounded to double

# Functions of the formula language that are not ops, defined by formulas over their argument
# x and the primitives, with `lets` evaluated in order. gen_ops.py, gen_glsl.py and
# gen_dual_glsl.py emit each as a helper function of their target (C++ template over the math
# policy, GLSL over REAL, GLSL over dual numbers), so no target writes them by hand.
#
# digamma and trigamma: for x >= 0 the recurrence psi(x) = psi(x + 10) - sum 1/(x + k)
# (psi1: + sum 1/(x + k)^2, k = 0..9) and the asymptotic series at z = x + 10 >= 10 (terms
# through B14 / z^14, truncation below 1e-17 relative); for x < 0 the reflection
# psi(x) = psi(1 - x) - pi cot(pi r), psi1(x) = pi^2 / sin(pi r)^2 - psi1(1 - x), with
# r = x - round(x) (exact), so the pole structure stays right for every |x|. digamma is -1/x
# at +-0 (-inf at +0, +inf at -0) and NaN at the negative integers (the two one-sided limits
# differ); trigamma is +inf at 0 and the negative integers. Accuracy: a few ulp away from
# digamma's zero x0 = 1.4616..., where the error is absolute (~1e-16 * psi(x + 10)), see
# tests/test_ops.cpp.
_REFLECT = [("y", "select(x < 0, 1 - x, x)"), ("r", "x - round(x)"), ("z", "y + 10"), ("q", "1 / z"),
            ("w", "q * q")]
# The shift sums add the smallest terms first.
_SHIFT = " + ".join(f"1 / (y + {k})" if k else "1 / y" for k in reversed(range(10)))
# 1/y^2 as (1 / y) / y: y * y would be subnormal, and flushed to zero on GPUs, from y < 1.1e-19
# in float (finding 7 of bench/RESULTS.md's fifth pass).
_SHIFT2 = " + ".join(f"1 / ((y + {k}) * (y + {k}))" if k else "(1 / y) / y" for k in reversed(range(10)))


def _horner(variable, coefficients):
    """c0 + v * (c1 + v * (...)) with each coefficient a literal (numerator / denominator)."""
    text = repr(coefficients[-1][0] / coefficients[-1][1])
    for numerator, denominator in reversed(coefficients[:-1]):
        text = f"{numerator / denominator!r} + {variable} * ({text})"
    return text


# psi(z) ~ log z - 1/(2z) - sum B_2k / (2k z^2k);  psi1(z) ~ 1/z + 1/(2z^2) + sum B_2k / z^(2k+1)
_DIGAMMA_SERIES = [(-1, 12), (1, 120), (-1, 252), (1, 240), (-1, 132), (691, 32760), (-1, 12)]
_TRIGAMMA_SERIES = [(1, 6), (-1, 30), (1, 42), (-1, 30), (5, 66), (-691, 2730), (7, 6), (-3617, 510)]
PI_SQUARED = 9.869604401089358
# Near digamma's positive zero x0 = A + B + C (A and B of 24 bits each, so v - A and, in
# float, the next subtraction are exact), psi(v) = t * P(t), t = v - x0 for v in [0.96, 2.06):
# P is a degree-22 Chebyshev fit of psi(x0 + t) / t on [-0.5, 0.6] (mpmath, error 3e-17),
# which keeps the error relative where the shifted series would cancel. y in (0, 4.06) is
# brought there with at most three steps of the recurrence (v = y + 1, y - 1, y - 2, y - 3);
# the series above cancels by less than a factor 2 from 5.06 on, in float too.
_DIGAMMA_ROOT = (1.4616321325302124, 1.243815006546356e-08, -1.2654465062537432e-16)
_DIGAMMA_ROOT_P = [0.9676722454476212, -0.4427631689835917, 0.25849976095563554, -0.16394270544251535, 0.10782405069357429, -0.07219956124821024, 0.048804288028510494, -0.03316112674105503, 0.022597652326225216, -0.015424761814720073, 0.010538719494494572, -0.00720455863941185, 0.00492757046149306, -0.003369927676830681, 0.0022996424599578554, -0.0015738786163243972, 0.0011027041263236056, -0.0007597168512358666, 0.0004441501427785339, -0.0002682360633842576, 0.00030849971273104855, -0.0002972597953923597, 0.00011382133412800689]


def _horner_values(variable, values):
    text = repr(values[-1])
    for value in reversed(values[:-1]):
        text = f"{value!r} + {variable} * ({text})"
    return text


FUNCTIONS = {
    "digamma": dict(
        lets=_REFLECT + [
            ("p0", f"log(z) - 0.5 * q + w * ({_horner('w', _DIGAMMA_SERIES)}) - ({_SHIFT})"),
            ("v", "y - select(y < 0.96, -1, select(y < 2.06, 0, select(y < 3.06, 1, select(y < 4.06, 2, 3))))"),
            ("t", f"((v - {_DIGAMMA_ROOT[0]!r}) - {_DIGAMMA_ROOT[1]!r}) - {_DIGAMMA_ROOT[2]!r}"),
            ("h", "select(y < 0.96, -(1 / y), select(y < 2.06, 0, select(y < 3.06, 1 / v,"
                  " select(y < 4.06, 1 / (v + 1) + 1 / v, (1 / (v + 2) + 1 / (v + 1)) + 1 / v))))"),
            ("p", f"select(y < 5.06, t * ({_horner_values('t', _DIGAMMA_ROOT_P)}) + h, p0)"),
            # cot(pi r), through tan(pi (1/2 - |r|)) for |r| >= 1/4 (1/2 - |r| is exact there),
            # so the rounding of pi r does not matter where cot is near 0 (float!).
            ("c", "select(abs(r) < 0.25, 1 / tan(pi * r), copysign(tan(pi * (0.5 - abs(r))), r))")],
        value="select(x == 0, -(1 / x), select(x < 0, select(x == round(x), nan, p - pi * c), p))"),
    "trigamma": dict(
        lets=_REFLECT + [
            ("s", "sin(pi * r)"),
            ("p", f"q + w * (0.5 + q * ({_horner('w', _TRIGAMMA_SERIES)})) + ({_SHIFT2})")],
        value=f"select(x < 0, {PI_SQUARED!r} / (s * s) - p, p)"),
}

MAXMIN_PARTIALS = {">": maxmin_partials(">"), "<": maxmin_partials("<")}

OPS = [
    op(0, "Input", 0, flags={LEAF}),
    op(1, "Const", 0, flags={LEAF}),
    op(2, "Add", 2, "a + b", ["1", "1"], {COMMUTATIVE}, identities=[(1, -0.0, 0), (0, -0.0, 1)]),
    op(3, "Sub", 2, "a - b", ["1", "-1"], identities=[(1, 0.0, 0)]),
    op(4, "Mul", 2, "a * b", ["b", "a"], {COMMUTATIVE}, identities=[(1, 1.0, 0), (0, 1.0, 1)]),
    op(5, "Div", 2, "a / b", ["1 / b", "-r / b"], identities=[(1, 1.0, 0)]),
    op(6, "Rem", 2, "fmod(a, b)", ["1", "-trunc(a / b)"]),
    op(7, "Powf", 2, "pow(a, b)",
       ["select(b == 0, 0, b * pow(a, b - 1))", "select(a > 0, r * log(a), 0)"], text="pow"),
    op(8, "Atan2", 2, "atan2(a, b)", ["(b / h) / h", "-(a / h) / h"], lets=[("h", "hypot(a, b)")]),
    op(9, "Hypot", 2, "hypot(a, b)", ["select(r == 0, 0, a / r)", "select(r == 0, 0, b / r)"],
       {COMMUTATIVE}),
    op(10, "Max", 2, MAX_VALUE, MAXMIN_PARTIALS[">"], {COMMUTATIVE}),
    op(11, "Min", 2, MIN_VALUE, MAXMIN_PARTIALS["<"], {COMMUTATIVE}),
    op(12, "Neg", 1, "-a", ["-1"]),
    op(13, "Recip", 1, "1 / a", ["-(r * r)"]),
    op(14, "Sqrt", 1, "sqrt(a)", ["select(r == 0, inf, 0.5 / r)"]),
    op(15, "Cbrt", 1, "cbrt(a)", ["1 / (3 * r * r)"]),
    # n - 1 would overflow int32 at n = -2^31 (undefined in C++, another exponent on a GPU):
    # there the partial is n * a^n / a (signs and infinities as n * a^(n - 1) at 0 and inf).
    op(16, "Powi", 1, "powi(a, n)",
       ["0 if n == 0 else (n * powi(a, n - 1) if n >= 0 - 2147483647 else n * powi(a, n) / a)"], {IMMEDIATE}),
    op(17, "Exp", 1, "exp(a)", ["r"]),
    op(18, "Exp2", 1, "exp2(a)", ["r * ln2"]),
    op(19, "Expm1", 1, "expm1(a)", ["r + 1"]),
    op(20, "Ln", 1, "log(a)", ["select(a < 0, nan, 1 / abs(a))"], text="log"),
    op(21, "Log2", 1, "log2(a)", ["select(a < 0, nan, (1 / abs(a)) / ln2)"]),
    op(22, "Log10", 1, "log10(a)", ["select(a < 0, nan, (1 / abs(a)) / ln10)"]),
    op(23, "Ln1p", 1, "log1p(a)", ["select(a < -1, nan, 1 / (1 + a))"], text="log1p"),
    op(24, "Sin", 1, "sin(a)", ["cos(a)"]),
    op(25, "Cos", 1, "cos(a)", ["-sin(a)"]),
    op(26, "Tan", 1, "tan(a)", ["1 + r * r"]),
    op(27, "Asin", 1, "asin(a)", ["1 / sqrt((1 - a) * (1 + a))"]),
    op(28, "Acos", 1, "acos(a)", ["-1 / sqrt((1 - a) * (1 + a))"]),
    op(29, "Atan", 1, "atan(a)", ["select(abs(a) > 1, t * t / (1 + t * t), 1 / (1 + a * a))"],
       lets=[("t", "1 / a")]),
    op(30, "Sinh", 1, "sinh(a)", ["cosh(a)"]),
    op(31, "Cosh", 1, "cosh(a)", ["sinh(a)"]),
    op(32, "Tanh", 1, "tanh(a)", ["(1 - r) * (1 + r)"]),
    op(33, "Asinh", 1, "asinh(a)", ["1 / hypot(1, a)"]),
    op(34, "Acosh", 1, "acosh(a)", ["1 / (sqrt(a - 1) * sqrt(a + 1))"]),
    op(35, "Atanh", 1, "atanh(a)", ["select(abs(a) > 1, nan, 1 / ((1 - a) * (1 + a)))"]),
    op(36, "Abs", 1, "abs(a)", ["sign(a)"]),
    step(37, "Signum", "sign(a)"),
    step(38, "Floor", "floor(a)"),
    step(39, "Ceil", "ceil(a)"),
    step(40, "Round", "round(a)"),
    step(41, "Trunc", "trunc(a)"),
    op(42, "Fract", 1, "a - trunc(a)", ["1"]),
    compare(43, "Lt", "<"),
    compare(44, "Le", "<="),
    compare(45, "Gt", ">"),
    compare(46, "Ge", ">="),
    compare(47, "Eq", "==", commutative=True),
    compare(48, "Ne", "!=", commutative=True),
    op(49, "Select", 3, "select(a != 0, b, c)", ["0", "select(a != 0, 1, 0)", "select(a != 0, 0, 1)"]),
    op(50, "Fma", 3, "fma(a, b, c)", ["b", "a", "1"], {COMMUTATIVE}),
    op(51, "Param", 0, flags={LEAF}),
    # erf' = 2/sqrt(pi) exp(-a^2) (a * a overflows to inf, and the partial to 0, as it should).
    op(52, "Erf", 1, "erf(a)", [f"{TWO_OVER_SQRT_PI!r} * exp(-(a * a))"]),
    op(53, "Erfc", 1, "erfc(a)", [f"-{TWO_OVER_SQRT_PI!r} * exp(-(a * a))"]),
    # log|Gamma(a)| (C's lgamma: +inf at 0 and the negative integers); its partial is digamma
    # (NaN at the negative integers, -1/a at +-0).
    op(54, "Lgamma", 1, "lgamma(a)", ["digamma(a)"]),
    op(55, "Digamma", 1, "digamma(a)", ["trigamma(a)"]),
    # |a| with b's sign bit; the partial in a is sign(a) times b's sign (0 at a = +-0, as
    # Abs'), none in b.
    op(56, "Copysign", 2, "copysign(a, b)", ["sign(a) * select(signbit(b), -1, 1)", "0"]),
    # log(exp(a) + exp(b)) = max + log1p(exp(-|a - b|)): exact ties (+-inf included) give
    # a + ln2, one infinite operand gives the larger, NaN gives NaN. The partials exp(a - r),
    # exp(b - r) are written as 1/(1 + e) and e/(1 + e), e = exp(-|a - b|), which loses
    # nothing where r is large and gives 1/2 each on a tie (both infinite included).
    op(57, "LogSumExp", 2,
       "select(a == b, a + ln2, select(a > b, a, b) + log1p(exp(-abs(a - b))))",
       ["select(a == b, 0.5, select(a > b, 1 / (1 + e), e / (1 + e)))",
        "select(a == b, 0.5, select(b > a, 1 / (1 + e), e / (1 + e)))"],
       {COMMUTATIVE}, lets=[("e", "exp(-abs(a - b))")], text="log_sum_exp"),
]
