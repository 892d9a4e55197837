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
#   literals   numbers, `nan`, `inf`, `ln2`, `ln10`
#   operators  + - * / unary -, comparisons (giving a mask), `and`, `or`, `not` on masks
#   calls      sqrt cbrt exp exp2 expm1 log log2 log10 log1p sin cos tan asin acos atan
#              atan2 sinh cosh tanh asinh acosh atanh abs sign floor ceil round trunc fmod
#              pow powi hypot fma isnan signbit select(mask, x, y)
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
]
