#!/usr/bin/env python3
"""Generates the per-op C++ code from op_table.py (the single source of truth).

    gen_ops.py op_table.py OUTPUT...

writes each OUTPUT by its file name: op.hpp (public: enum class Op, names, arities, flags)
or op_formulas.hpp (internal: one Formula<Op> specialisation per op, templated on a
math policy M and a value type T, plus `visit_op`, the one switch every VM dispatches with).

Formulas are parsed with Python's ast module and emitted as C++ by CppEmitter; gen_glsl.py
walks the same trees with a subclass that only changes the spelling (the hooks below).
See op_table.py for the formula language.
"""
import ast
import importlib.util
import pathlib
import sys

CALLS = {
    "sqrt": 1, "cbrt": 1, "exp": 1, "exp2": 1, "expm1": 1, "log": 1, "log2": 1, "log10": 1,
    "log1p": 1, "sin": 1, "cos": 1, "tan": 1, "asin": 1, "acos": 1, "atan": 1, "atan2": 2,
    "sinh": 1, "cosh": 1, "tanh": 1, "asinh": 1, "acosh": 1, "atanh": 1, "abs": 1, "sign": 1,
    "floor": 1, "ceil": 1, "round": 1, "trunc": 1, "fmod": 2, "pow": 2, "powi": 2, "hypot": 2,
    "fma": 3, "erf": 1, "erfc": 1, "lgamma": 1, "copysign": 2, "isnan": 1, "signbit": 1, "select": 3,
}
# The table's FUNCTIONS (op_table.py: digamma, trigamma), set by check_table: calls of one
# argument that every target emits as a helper function of its own (function_definitions).
TABLE_FUNCTIONS = {}
CONSTANTS = {
    "nan": "std::numeric_limits<double>::quiet_NaN()",
    "inf": "std::numeric_limits<double>::infinity()",
    "ln2": "0.693147180559945309417232121458176568",
    "ln10": "2.30258509299404568401799145468436421",
    "pi": "3.14159265358979323846264338327950288",
}
COMPARE = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}
BINARY = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/"}
OPERANDS = ("a", "b", "c")


class FormulaError(Exception):
    pass


def literal(value):
    text = repr(float(value))
    return f"T({text})"


class CppEmitter:
    """Emits one formula as a C++ expression over T with math policy M.

    The tree walk (value, integer) is shared by every target; a target changes only the
    spelling hooks: literal, constant, real_n, mask_not, mask_join, call."""

    def __init__(self, op, names):
        self.op = op
        self.names = names  # names usable as T values

    # Spelling hooks.
    def literal(self, value):
        return literal(value)

    def constant(self, name):
        return f"T({CONSTANTS[name]})"

    def real_n(self):
        return "T(n)"

    def mask_not(self, mask):
        return f"M::mask_not({mask})"

    def mask_join(self, is_and, left, right):
        return f"{'M::mask_and' if is_and else 'M::mask_or'}({left}, {right})"

    def call(self, name, arguments):
        return f"M::{name}({', '.join(arguments)})"

    def function_call(self, name, arguments):
        """A call of one of the table's FUNCTIONS (a helper emitted by the target)."""
        return f"fn_{name}<M>({', '.join(arguments)})"

    def divide(self, left, right):
        return f"({left} / {right})"

    def emit(self, source):
        try:
            tree = ast.parse(source, mode="eval").body
        except SyntaxError as error:
            raise FormulaError(f"{self.op['name']}: cannot parse {source!r}: {error}")
        return self.value(tree)

    def fail(self, node, why):
        raise FormulaError(f"{self.op['name']}: {why}: {ast.dump(node)}")

    # An expression over the integer immediate n (Powi), emitted as plain int arithmetic.
    def integer(self, node):
        if isinstance(node, ast.Name) and node.id == "n":
            return "n"
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return str(node.value)
        if isinstance(node, ast.BinOp) and type(node.op) in (ast.Add, ast.Sub, ast.Mult):
            return f"({self.integer(node.left)} {BINARY[type(node.op)]} {self.integer(node.right)})"
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            symbol = COMPARE[type(node.ops[0])]
            return f"({self.integer(node.left)} {symbol} {self.integer(node.comparators[0])})"
        self.fail(node, "not an integer expression over n")

    def value(self, node):
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
            return self.literal(node.value)
        if isinstance(node, ast.Name):
            if node.id in CONSTANTS:
                return self.constant(node.id)
            if node.id == "n":
                return self.real_n()
            if node.id in self.names:
                return node.id
            self.fail(node, f"unknown name {node.id!r}")
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return f"(-{self.value(node.operand)})"
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return self.mask_not(self.value(node.operand))
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            return self.divide(self.value(node.left), self.value(node.right))
        if isinstance(node, ast.BinOp) and type(node.op) in BINARY:
            return f"({self.value(node.left)} {BINARY[type(node.op)]} {self.value(node.right)})"
        if isinstance(node, ast.BoolOp):
            result = self.value(node.values[0])
            for other in node.values[1:]:
                result = self.mask_join(isinstance(node.op, ast.And), result, self.value(other))
            return result
        if isinstance(node, ast.Compare):
            if len(node.ops) != 1:
                self.fail(node, "chained comparison")
            symbol = COMPARE[type(node.ops[0])]
            return f"({self.value(node.left)} {symbol} {self.value(node.comparators[0])})"
        if isinstance(node, ast.IfExp):
            return (f"(({self.integer(node.test)}) ? {self.value(node.body)}"
                    f" : {self.value(node.orelse)})")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            name = node.func.id
            if name in TABLE_FUNCTIONS:
                if len(node.args) != 1:
                    self.fail(node, f"{name} takes 1 argument")
                return self.function_call(name, [self.value(node.args[0])])
            if name not in CALLS:
                self.fail(node, f"unknown function {name!r}")
            if len(node.args) != CALLS[name]:
                self.fail(node, f"{name} takes {CALLS[name]} arguments")
            if name == "powi":
                return self.call(name, [self.value(node.args[0]), self.integer(node.args[1])])
            return self.call(name, [self.value(arg) for arg in node.args])
        self.fail(node, "unsupported expression")


def load_table(path):
    spec = importlib.util.spec_from_file_location("op_table", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def check_table(table):
    TABLE_FUNCTIONS.clear()
    TABLE_FUNCTIONS.update(getattr(table, "FUNCTIONS", {}))
    for name in TABLE_FUNCTIONS:
        if name in CALLS:
            raise FormulaError(f"function {name} shadows a primitive")
    ops = table.OPS
    numbers = [op["number"] for op in ops]
    if numbers != list(range(len(ops))):
        raise FormulaError(f"op numbers must be 0..{len(ops) - 1} in order, got {numbers}")
    names = [op["name"] for op in ops]
    if len(set(names)) != len(names):
        raise FormulaError("duplicate op names")
    texts = [op["text"] for op in ops]
    if len(set(texts)) != len(texts):
        raise FormulaError("duplicate op texts")
    for op in ops:
        leaf = table.LEAF in op["flags"]
        if leaf != (op["arity"] == 0):
            raise FormulaError(f"{op['name']}: leaf ops and only they have arity 0")
        if not leaf and len(op["partials"]) != op["arity"]:
            raise FormulaError(f"{op['name']}: needs {op['arity']} partials")
        if table.IMMEDIATE in op["flags"] and op["arity"] != 1:
            raise FormulaError(f"{op['name']}: an immediate op has one slot operand")


FLAG_BITS = {"leaf": 1, "commutative": 2, "step": 4, "comparison": 8, "immediate": 16}


def header_op(table):
    ops = table.OPS
    lines = [
        "// Generated by src/tape/gen_ops.py from src/tape/op_table.py. Do not edit.",
        "#pragma once",
        "",
        "#include <array>",
        "#include <cstddef>",
        "#include <cstdint>",
        "#include <optional>",
        "#include <string_view>",
        "",
        "namespace tapevm {",
        "",
        "/// Every opcode of the tape. Numbers are stored in .tape files and never change.",
        "enum class Op : std::uint32_t {",
    ]
    lines += [f"    {op['name']} = {op['number']}," for op in ops]
    lines += [
        "};",
        "",
        f"/// Number of opcodes; valid numbers are 0 .. op_count - 1.",
        f"inline constexpr std::uint32_t op_count = {len(ops)};",
        "",
        "/// Properties of an op, as bits of OpInfo::flags.",
        "namespace op_flag {",
    ]
    lines += [f"inline constexpr std::uint32_t {name} = {bit};" for name, bit in FLAG_BITS.items()]
    lines += [
        "}  // namespace op_flag",
        "",
        "/// Static description of an op: its enum name, the short name used in dumps, its",
        "/// number of slot operands (Powi's exponent is an immediate, not counted), flags, and",
        "/// what its partials read: bits 0-2 operands a, b, c, bit 3 the result (Add: none, Mul: a",
        "/// and b, Exp: the result), so a backend knows which values the reverse sweep needs;",
        "/// and how many math-library functions (exp, sin, pow, ...: not sqrt, abs, rounding or",
        "/// select) its value and its partials call, which is what a compiled kernel's size grows",
        "/// with beyond its statements. zero_partials: bit k when the partial by operand k is",
        "/// identically zero (comparisons, step functions, Select's condition), so that operand",
        "/// adds nothing to a derivative's sparsity pattern.",
        "struct OpInfo {",
        "    std::string_view name;",
        "    std::string_view text;",
        "    std::uint32_t arity;",
        "    std::uint32_t flags;",
        "    std::uint32_t partial_reads;",
        "    std::uint32_t value_calls;",
        "    std::uint32_t partial_calls;",
        "    std::uint32_t zero_partials;",
        "};",
        "",
        "inline constexpr std::array<OpInfo, op_count> op_infos = {{",
    ]
    for op in ops:
        bits = " | ".join(f"op_flag::{flag}" for flag in sorted(op["flags"])) or "0"
        calls = library_calls(op)
        lines.append(f"    {{\"{op['name']}\", \"{op['text']}\", {op['arity']}, {bits}, {partial_reads(op)}, "
                     f"{calls[0]}, {calls[1]}, {zero_partials(op)}}},")
    lines += [
        "}};",
        "",
        "/// True when `number` names an op.",
        "constexpr bool is_op(std::uint32_t number) { return number < op_count; }",
        "",
        "/// The description of `op`; `op` must be valid.",
        "constexpr const OpInfo& info(Op op) { return op_infos[static_cast<std::uint32_t>(op)]; }",
        "",
        "constexpr std::uint32_t arity(Op op) { return info(op).arity; }",
        "constexpr bool has_flag(Op op, std::uint32_t flag) { return (info(op).flags & flag) != 0; }",
        "",
        "/// A unary op whose only partial is exactly the value of another unary op at the same",
        "/// operand, or its negation (Sin: Cos, Cos: -Sin): the same formula, so a backend that has",
        "/// that op's value at that operand already may take the partial from it, bit for bit.",
        "struct PartialSibling {",
        "    Op op;",
        "    bool negated;",
        "};",
        "",
        "constexpr std::optional<PartialSibling> partial_sibling(Op op) {",
        "    switch (op) {",
    ]
    for op in ops:
        sibling = partial_sibling(ops, op)
        if sibling:
            lines.append(f"        case Op::{op['name']}: return PartialSibling{{Op::{sibling[0]}, "
                         f"{'true' if sibling[1] else 'false'}}};")
    lines += [
        "        default: return std::nullopt;",
        "    }",
        "}",
        "",
        "/// The op whose short name (as printed in dumps) is `text`, if any.",
        "constexpr std::optional<Op> op_from_text(std::string_view text) {",
        "    for (std::uint32_t number = 0; number < op_count; ++number) {",
        "        if (op_infos[number].text == text) return static_cast<Op>(number);",
        "    }",
        "    return std::nullopt;",
        "}",
        "",
        "}  // namespace tapevm",
        "",
    ]
    return "\n".join(lines)


def partial_sibling(ops, op):
    """(name, negated) when `op` is unary, has no lets and its one partial is exactly another
    unary op's value formula, or that negated (both over operand a); None otherwise."""
    if op["arity"] != 1 or op["lets"] or len(op["partials"]) != 1:
        return None
    partial = ast.parse(op["partials"][0], mode="eval").body
    negated = isinstance(partial, ast.UnaryOp) and isinstance(partial.op, ast.USub)
    target = ast.dump(partial.operand if negated else partial)
    for other in ops:
        if other is op or other["arity"] != 1 or not other["value"] or other["flags"] & {"immediate"}:
            continue
        if ast.dump(ast.parse(other["value"], mode="eval").body) == target:
            return other["name"], negated
    return None


# Functions the math libraries implement in many instructions (the others are a few: sqrt,
# abs, sign, rounding, fma, tests and select).
LIBRARY_CALLS = {"erf", "erfc", "lgamma", "digamma", "trigamma", "cbrt", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sin", "cos", "tan",
                 "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh",
                 "fmod", "pow", "powi", "hypot"}


def primitive_ops(table):
    """The formula language's calls whose value is exactly an op's value formula
    (sin: Sin, log: Ln, fmod: Rem, ...): call name -> op name. Dual numbers take such a
    call's tangent from that op's partials."""
    out = {}
    for op in table.OPS:
        if not op["value"] or table.IMMEDIATE in op["flags"]:
            continue
        tree = ast.parse(op["value"], mode="eval").body
        if (isinstance(tree, ast.Call) and isinstance(tree.func, ast.Name)
                and [getattr(arg, "id", None) for arg in tree.args] == list(OPERANDS[:op["arity"]])):
            out[tree.func.id] = op["name"]
    return out


def library_calls(op):
    """Calls of LIBRARY_CALLS functions in the value, and in the partials with their lets."""
    def count(sources):
        return sum(1 for source in sources for node in ast.walk(ast.parse(source, mode="eval"))
                   if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                   and node.func.id in LIBRARY_CALLS)
    value = [op["value"]] if op["value"] else []
    return count(value), count(list(op["partials"]) + [source for _, source in op["lets"]])


def zero_partials(op):
    """Bit k when the partial by operand k is identically zero."""
    return sum(1 << k for k, p in enumerate(op["partials"]) if p.strip() == "0")


def partial_reads(op):
    """Bit k when a partial (or a let) names operand k, bit 3 when it names the result r."""
    bits = {"a": 1, "b": 2, "c": 4, "r": 8}
    sources = list(op["partials"]) + [source for _, source in op["lets"]]
    names = {node.id for source in sources for node in ast.walk(ast.parse(source, mode="eval"))
             if isinstance(node, ast.Name)}
    return sum(bit for name, bit in bits.items() if name in names)


def function_bodies(Emitter, make_op):
    """Per table function: (name, [(let name, expression)], value expression), each expression
    spelled by Emitter (constructed as Emitter(pseudo op, names))."""
    out = []
    for name, definition in TABLE_FUNCTIONS.items():
        pseudo = make_op(name)
        names = {"x"}
        lets = []
        for let_name, let_source in definition.get("lets", []):
            lets.append((let_name, Emitter(pseudo, set(names)).emit(let_source)))
            names.add(let_name)
        out.append((name, lets, Emitter(pseudo, names).emit(definition["value"])))
    return out


def pseudo_op(name):
    return dict(name=name, arity=1, flags=set(), lets=[], partials=[], value=None)


def function_definitions():
    lines = ["/// The op table's FUNCTIONS (op_table.py), over the math policy M like the formulas."]
    for name, lets, value in function_bodies(CppEmitter, pseudo_op):
        lines.append(f"template <class M, class T> T fn_{name}(T x) {{")
        lines += [f"    const T {let_name} = {text};" for let_name, text in lets]
        lines += [f"    return {value};", "}", ""]
    return lines


def formula_struct(table, op):
    name = op["name"]
    arity = op["arity"]
    immediate = table.IMMEDIATE in op["flags"]
    operands = list(OPERANDS[:arity])
    value_params = [f"[[maybe_unused]] T {x}" for x in operands]
    if immediate:
        value_params.append("[[maybe_unused]] std::int32_t n")
    names = set(operands)
    emitter = CppEmitter(op, names)
    value = emitter.emit(op["value"])
    zero = all(p.strip() == "0" for p in op["partials"])
    unit = sum(1 << k for k, p in enumerate(op["partials"]) if p.strip() == "1")
    reads = partial_reads(op)
    out = [
        f"template <> struct Formula<Op::{name}> {{",
        f"    static constexpr std::uint32_t arity = {arity};",
        f"    static constexpr bool immediate = {'true' if immediate else 'false'};",
        f"    /// False when every partial is identically zero (step functions, comparisons).",
        f"    static constexpr bool has_partials = {'false' if zero else 'true'};",
        f"    /// Bit k set when partial k is identically 1 (the contribution is the seed itself).",
        f"    static constexpr std::uint32_t unit_partials = {unit};",
        f"    /// What partials() reads: bit k for operand k (a, b, c), bit 3 for the result r.",
        f"    static constexpr std::uint32_t partial_reads = {reads};",
        f"    template <class M, class T> static T value({', '.join(value_params)}) {{",
        f"        return {value};",
        f"    }}",
    ]
    partial_params = value_params + ["[[maybe_unused]] T r", f"T (&d)[{arity}]"]
    names = set(operands) | {"r"}
    body = []
    for let_name, let_source in op["lets"]:
        body.append(f"        const T {let_name} = {CppEmitter(op, set(names)).emit(let_source)};")
        names.add(let_name)
    emitter = CppEmitter(op, names)
    for index, source in enumerate(op["partials"]):
        body.append(f"        d[{index}] = {emitter.emit(source)};")
    out.append(f"    template <class M, class T> static void partials({', '.join(partial_params)}) {{")
    out += body
    out += ["    }", "};", ""]
    return out


def header_formulas(table):
    ops = table.OPS
    lines = [
        "// Generated by src/tape/gen_ops.py from src/tape/op_table.py. Do not edit.",
        "//",
        "// Formula<Op::X>::value(a, b, c) and ::partials(a, b, c, r, d) for every non-leaf op,",
        "// templated on a math policy M (M::sin, M::select, ...) and a value type T, so the",
        "// same formulas run in double, float, dual numbers (hvp) and SIMD batches.",
        "#pragma once",
        "",
        "#include <cstdint>",
        "#include <cstdlib>",
        "#include <limits>",
        "#include <type_traits>",
        "",
        "#include \"tapevm/op.hpp\"",
        "",
        "namespace tapevm::detail {",
        "",
        f"static_assert(op_count == {len(ops)}, \"op_formulas.hpp is out of date with op.hpp\");",
        "",
        "template <Op op> struct Formula;",
        "",
    ]
    lines += function_definitions()
    for op in ops:
        if table.LEAF not in op["flags"]:
            lines += formula_struct(table, op)
    lines += [
        "/// An identity exact for every input: `op` whose operand `constant_operand` is the",
        "/// constant `constant` (bit for bit) equals its operand `result`.",
        "struct Identity {",
        "    Op op;",
        "    std::uint32_t constant_operand;",
        "    double constant;",
        "    std::uint32_t result;",
        "};",
        "",
        "inline constexpr Identity exact_identities[] = {",
    ]
    for op in ops:
        for operand, constant, result in op["identities"]:
            if not (0 <= operand < op["arity"] and 0 <= result < op["arity"] and operand != result):
                raise FormulaError(f"{op['name']}: bad identity {(operand, constant, result)}")
            lines.append(f"    {{Op::{op['name']}, {operand}, {float(constant)!r}, {result}}},")
    lines += [
        "};",
        "",
        "template <Op op> using OpTag = std::integral_constant<Op, op>;",
        "",
        "/// Calls f(OpTag<op>{}) with `op` as a compile-time constant: the one switch over ops.",
        "/// `op` must be valid (validated tapes only).",
        "template <class F> decltype(auto) visit_op(Op op, F&& f) {",
        "    switch (op) {",
    ]
    for op in ops:
        lines.append(f"        case Op::{op['name']}: return f(OpTag<Op::{op['name']}>{{}});")
    lines += [
        "    }",
        "    std::abort();  // unreachable for a validated tape",
        "}",
        "",
        "}  // namespace tapevm::detail",
        "",
    ]
    return "\n".join(lines)


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: gen_ops.py op_table.py OUTPUT...  (op.hpp, op_formulas.hpp)")
    table = load_table(sys.argv[1])
    generators = {"op.hpp": header_op, "op_formulas.hpp": header_formulas}
    try:
        check_table(table)
        for output in sys.argv[2:]:
            path = pathlib.Path(output)
            if path.name not in generators:
                sys.exit(f"gen_ops.py: do not know how to make {path.name}")
            text = generators[path.name](table)
            if not path.exists() or path.read_text() != text:
                path.write_text(text)
    except FormulaError as error:
        sys.exit(f"gen_ops.py: {error}")


if __name__ == "__main__":
    main()
