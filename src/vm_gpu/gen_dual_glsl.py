#!/usr/bin/env python3
"""Generates dual_ops.glsl: the op table's formulas in dual numbers for the GPU hvp kernel.

    gen_dual_glsl.py op_table.py gen_ops.py OUTPUT

The C++ reference VM computes Hessian-vector products in dual numbers (src/tape/detail/dual.hpp):
every primitive (+, -, *, /, sin, ...) is the op of the same name applied to the value, with the
tangent from that op's partials (the zero-absorbing rule), and each op's value and partial
FORMULAS are then evaluated with those primitives. This file emits the same thing in GLSL:

    struct Dual { REAL v; REAL t; };
    Dual td_value_<name>(Dual a, Dual b, Dual c, int n)          (one per op)
    void td_partials_<name>(Dual a, Dual b, Dual c, int n, Dual r, out Dual d0, out Dual d1, out Dual d2)
    Dual td_value(uint op, Dual a, Dual b, Dual c, int n)        (dispatchers over them)
    uint td_partials(uint op, Dual a, Dual b, Dual c, int n, Dual r, out Dual d0, out Dual d1, out Dual d2)

The primitives call the generated scalar dispatchers of shaders/lib's ops.glsl (tv_value,
tv_partials), so no formula is written twice: the formulas are walked from op_table.py with
gen_ops.py's parser conventions, and the scalar math is the GLSL library's.
"""
import ast
import importlib.util
import pathlib
import sys


def load_module(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# Math calls of the formula language and the op whose scalar formula is the dual primitive
# (sin: Sin, log: Ln, ...): derived from the op table by gen_ops.primitive_ops, the same
# mapping as DualMath in src/tape/detail/dual.hpp. Set by generate().
PRIMITIVES = {}
OPERATORS = {ast.Add: "ADD", ast.Sub: "SUB", ast.Mult: "MUL", ast.Div: "DIV"}
OPERANDS = ("a", "b", "c")


def primitive(table, op):
    """td_<name>: the op's scalar formula on the value parts, the tangent from its partials
    (dual_unary / dual_binary in dual.hpp), calling ops.glsl's tv_value_<name> and
    tv_partials_<name>."""
    name = op["name"].lower()
    operands = OPERANDS[:op["arity"]]
    immediate = table.IMMEDIATE in op["flags"]
    parameters = [f"Dual {x}" for x in operands] + (["int n"] if immediate else [])
    values = [f"{x}.v" for x in operands] + (["n"] if immediate else [])
    lines = [f"Dual td_{name}({', '.join(parameters)}) {{",
             f"    REAL r = tv_value_{name}({', '.join(values)});"]
    if all(p.strip() == "0" for p in op["partials"]):
        lines.append("    return Dual(r, REAL(0));")
    else:
        partials = [f"d{i}" for i in range(op["arity"])]
        lines.append(f"    REAL {', '.join(partials)};")
        lines.append(f"    tv_partials_{name}({', '.join(values + ['r'] + partials)});")
        tangent = " + ".join(f"tv_contribution(d{i}, {x}.t)" for i, x in enumerate(operands))
        lines.append(f"    return Dual(r, {tangent});")
    lines.append("}")
    return lines
CONSTANTS = {"nan": "tv_dual_nan()", "inf": "tv_dual_inf()",
             "pi": "td_const(REAL(3.14159265358979323846264338327950288LF))", "ln2": "td_const(REAL(0.693147180559945309417232121458176568LF))",
             "ln10": "td_const(REAL(2.30258509299404568401799145468436421LF))"}
COMPARE = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}


class FormulaError(Exception):
    pass


class DualEmitter:
    """One formula as a GLSL expression over Dual values (masks are bool)."""

    def __init__(self, op, names):
        self.op = op
        self.names = names

    def fail(self, node, why):
        raise FormulaError(f"{self.op['name']}: {why}: {ast.dump(node)}")

    def emit(self, source):
        return self.value(ast.parse(source, mode="eval").body)

    def integer(self, node):
        if isinstance(node, ast.Name) and node.id == "n":
            return "n"
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return str(node.value)
        if isinstance(node, ast.BinOp) and type(node.op) in (ast.Add, ast.Sub, ast.Mult):
            symbol = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*"}[type(node.op)]
            return f"({self.integer(node.left)} {symbol} {self.integer(node.right)})"
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            return f"({self.integer(node.left)} {COMPARE[type(node.ops[0])]} {self.integer(node.comparators[0])})"
        self.fail(node, "not an integer expression over n")

    def value(self, node):
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
            return f"td_const(REAL({float(node.value)!r}LF))"
        if isinstance(node, ast.Name):
            if node.id in CONSTANTS:
                return CONSTANTS[node.id]
            if node.id == "n":
                return "td_const(REAL(n))"
            if node.id in self.names:
                return node.id
            self.fail(node, f"unknown name {node.id!r}")
        if (isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub)
                and isinstance(node.operand, ast.Constant) and isinstance(node.operand.value, (int, float))):
            return f"td_const(REAL({-float(node.operand.value)!r}LF))"  # a negative literal
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return f"td_neg({self.value(node.operand)})"
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return f"(!{self.value(node.operand)})"
        if isinstance(node, ast.BinOp) and type(node.op) in OPERATORS:
            return f"td_{OPERATORS[type(node.op)].lower()}({self.value(node.left)}, {self.value(node.right)})"
        if isinstance(node, ast.BoolOp):
            symbol = " && " if isinstance(node.op, ast.And) else " || "
            return "(" + symbol.join(self.value(v) for v in node.values) + ")"
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            # Comparisons look at values only (dual.hpp).
            return f"({self.value(node.left)}.v {COMPARE[type(node.ops[0])]} {self.value(node.comparators[0])}.v)"
        if isinstance(node, ast.IfExp):
            return f"(({self.integer(node.test)}) ? {self.value(node.body)} : {self.value(node.orelse)})"
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            name = node.func.id
            args = node.args
            if name == "select":
                return f"td_select({self.value(args[0])}, {self.value(args[1])}, {self.value(args[2])})"
            if name == "isnan":
                return f"tv_isnan({self.value(args[0])}.v)"
            if name == "signbit":
                return f"tv_signbit({self.value(args[0])}.v)"
            if name == "powi":
                return f"td_powi({self.value(args[0])}, {self.integer(args[1])})"
            if name in TABLE_FUNCTIONS:
                return f"td_fn_{name}({self.value(args[0])})"
            if name in PRIMITIVES:
                return f"td_{PRIMITIVES[name].lower()}({', '.join(self.value(a) for a in args)})"
            self.fail(node, f"unknown function {name!r}")
        self.fail(node, "unsupported expression")


PRELUDE = """\
// Dual numbers v + eps t for the hvp kernel (forward over reverse), as in
// src/tape/detail/dual.hpp: primitives are the ops' scalar formulas (ops.glsl) with the tangent
// from their partials under the zero-absorbing rule.
struct Dual { REAL v; REAL t; };

Dual td_const(REAL v) { return Dual(v, REAL(0)); }
#if REAL_IS_DOUBLE
Dual tv_dual_nan() { return td_const(packDouble2x32(uvec2(0u, 0x7ff80000u))); }
Dual tv_dual_inf() { return td_const(packDouble2x32(uvec2(0u, 0x7ff00000u))); }
#else
Dual tv_dual_nan() { return td_const(uintBitsToFloat(0x7fc00000u)); }
Dual tv_dual_inf() { return td_const(uintBitsToFloat(0x7f800000u)); }
#endif
Dual td_select(bool m, Dual x, Dual y) { return m ? x : y; }
bool td_is_zero(Dual x) { return x.v == REAL(0) && x.t == REAL(0); }
"""

CONTRIBUTION = """// contribution<DualMath>: exactly zero when either factor is (both parts) zero.
Dual td_contribution(Dual partial, Dual seed) {
    if (td_is_zero(partial) || td_is_zero(seed)) return td_const(REAL(0));
    return td_mul(partial, seed);
}
"""


TABLE_FUNCTIONS = {}


def generate(table, gen_ops):
    gen_ops.check_table(table)
    PRIMITIVES.clear()
    PRIMITIVES.update({name: op.upper() for name, op in gen_ops.primitive_ops(table).items()
                       if name not in ("select", "isnan", "signbit", "powi")})
    TABLE_FUNCTIONS.clear()
    TABLE_FUNCTIONS.update(gen_ops.TABLE_FUNCTIONS)
    lines = ["// Generated by src/vm_gpu/gen_dual_glsl.py from src/tape/op_table.py. Do not edit.",
             f"// {len(table.OPS)} ops.", PRELUDE]
    for op in table.OPS:
        if table.LEAF not in op["flags"]:
            lines += primitive(table, op)
    lines += ["", CONTRIBUTION]
    # The table's FUNCTIONS in dual numbers (their derivatives come from the primitives').
    for name, definition in TABLE_FUNCTIONS.items():
        pseudo = gen_ops.pseudo_op(name)
        names = {"x"}
        lines.append(f"Dual td_fn_{name}(Dual x) {{")
        for let_name, let_source in definition.get("lets", []):
            lines.append(f"    Dual {let_name} = {DualEmitter(pseudo, set(names)).emit(let_source)};")
            names.add(let_name)
        lines += [f"    return {DualEmitter(pseudo, names).emit(definition['value'])};", "}", ""]
    values = ["Dual td_value(uint op, Dual a, Dual b, Dual c, int n) {", "    switch (op) {"]
    partials = ["uint td_partials(uint op, Dual a, Dual b, Dual c, int n, Dual r, out Dual d0, out Dual d1,",
                "                 out Dual d2) {",
                "    d0 = td_const(REAL(0));", "    d1 = d0;", "    d2 = d0;", "    switch (op) {"]
    # One function per op (what the tape compiler's hvp kernels call, with the op known), and
    # the dispatchers over them (what the interpreter's hvp kernel calls).
    functions = ["// Per op: td_value_<name>(a, b, c, n) and td_partials_<name>(a, b, c, n, r, d0, d1, d2)",
                 "// (every op takes three operands and the exponent; unused ones are ignored)."]
    for op in table.OPS:
        if table.LEAF in op["flags"]:
            continue
        name = op["name"].lower()
        const = f"TV_OP_{op['name'].upper()}"
        operands = {"a", "b", "c"}
        functions += [f"Dual td_value_{name}(Dual a, Dual b, Dual c, int n) {{",
                      f"    return {DualEmitter(op, operands).emit(op['value'])};", "}"]
        values.append(f"        case {const}: return td_value_{name}(a, b, c, n);")
        if all(p.strip() == "0" for p in op["partials"]):
            continue  # Formula::has_partials is false: Sweeps::partials reports none
        names = operands | {"r"}
        body = [f"void td_partials_{name}(Dual a, Dual b, Dual c, int n, Dual r, out Dual d0, out Dual d1, out Dual d2) {{",
                "    d0 = td_const(REAL(0));", "    d1 = d0;", "    d2 = d0;"]
        for let_name, let_source in op["lets"]:
            body.append(f"    Dual {let_name} = {DualEmitter(op, set(names)).emit(let_source)};")
            names.add(let_name)
        emitter = DualEmitter(op, names)
        for index, source in enumerate(op["partials"]):
            body.append(f"    d{index} = {emitter.emit(source)};")
        functions += body + ["}"]
        partials.append(f"        case {const}: td_partials_{name}(a, b, c, n, r, d0, d1, d2); return {len(op['partials'])}u;")
    values += ["    }", "    return td_const(REAL(0));", "}", ""]
    partials += ["    }", "    return 0u;", "}", ""]
    return "\n".join(lines + functions + [""] + values + partials)


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: gen_dual_glsl.py op_table.py gen_ops.py OUTPUT")
    table = load_module("op_table", sys.argv[1])
    gen_ops = load_module("gen_ops", sys.argv[2])
    try:
        text = generate(table, gen_ops)
    except (FormulaError, gen_ops.FormulaError) as error:
        sys.exit(f"gen_dual_glsl.py: {error}")
    path = pathlib.Path(sys.argv[3])
    if not path.exists() or path.read_text() != text:
        path.write_text(text)


if __name__ == "__main__":
    main()
