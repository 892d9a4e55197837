#include "codegen.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>
#include <vector>

#include "reverse_order.hpp"
#include "tape_ops.hpp"
#include "tapevm/error.hpp"

namespace tapevm::gpu::detail {

namespace {

// The layout qualifier of storage buffer `binding` of set 0 (shaders/bindings.h's numbers).
std::string buffer_layout(Binding binding) {
    return "layout(std430, set = 0, binding = " + std::to_string(binding) + ") ";
}

std::string op_name(Op op) {
    std::string name(info(op).name);
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return name;
}

std::string hex32(std::uint32_t bits) {
    char text[16];
    std::snprintf(text, sizeof text, "0x%08xu", bits);
    return text;
}

// A constant of the pool, exactly: its bits (the interpreter converts doubles to float the
// same way, static_cast, when it uploads the float constants). With `hide` (a uint variable
// that is 0 at run time but unknown to the driver), the bits are xor-ed with it: drivers
// fold ops on a literal operand as if no value were NaN, infinite or -0 (lavapipe: x * 0
// gave +0 for x NaN, 0 - x gave -x, x / 0 gave 8.9e-313 in double), although the pipelines
// declare SignedZeroInfNanPreserve. An integer xor per constant use costs next to nothing
// (bench/RESULTS.md: "Compiled kernels: constants hidden from the driver").
std::string real_literal(double value, bool double_precision, const std::string& hide = {}) {
    char comment[40];
    std::snprintf(comment, sizeof comment, " /* %.9g */", value);
    const auto word = [&](std::uint32_t bits) {
        return hide.empty() ? hex32(bits) : "(" + hex32(bits) + " ^ " + hide + ")";
    };
    if (double_precision) {
        std::uint64_t bits;
        std::memcpy(&bits, &value, sizeof bits);
        return "packDouble2x32(uvec2(" + word(static_cast<std::uint32_t>(bits)) + ", " +
               word(static_cast<std::uint32_t>(bits >> 32)) + "))" + comment;
    }
    const auto single = static_cast<float>(value);
    std::uint32_t bits;
    std::memcpy(&bits, &single, sizeof bits);
    return "uintBitsToFloat(" + word(bits) + ")" + comment;
}

std::string u(std::uint64_t value) { return std::to_string(value) + "u"; }

// A variable name: prefix and number ("v12"). (Built by appending: g++ 12 warns, wrongly,
// about "literal" + std::string temporaries at -O3.)
std::string var(std::string_view prefix, std::uint64_t index) {
    std::string name(prefix);
    name += std::to_string(index);
    return name;
}

// The generated text and its statement count.
class Writer {
public:
    void line(const std::string& text) {
        text_ += "    " + text + "\n";
        ++statements_;
    }
    void raw(const std::string& text) { text_ += text; }
    std::string& text() { return text_; }
    std::size_t statements() const { return statements_; }

private:
    std::string text_;
    std::size_t statements_ = 0;
};

class Generator {
public:
    Generator(const Tape& tape, const KernelSpec& spec)
        : tape_(tape), spec_(spec), slots_(tape.slot_count()), depends_(slots_, false), live_(slots_, false) {
        const auto instructions = tape.instructions();
        for (std::uint32_t s = 0; s < slots_; ++s) {
            const Instruction& ins = instructions[s];
            depends_[s] = ins.op == Op::Input;
            for (std::uint32_t k = 0; k < arity(ins.op); ++k)
                depends_[s] = depends_[s] || depends_[operand(ins, k)];
        }
        for (const std::uint32_t o : tape.outputs()) live_[o] = true;
        for (const Guard& guard : tape.guards()) live_[guard.slot] = true;
        for (std::uint32_t s = slots_; s-- > 0;) {
            if (!live_[s]) continue;
            const Instruction& ins = instructions[s];
            for (std::uint32_t k = 0; k < arity(ins.op); ++k) live_[operand(ins, k)] = true;
        }
        sincos_emitted_.assign(slots_, false);
        for (std::uint32_t s = 0; s < slots_; ++s)
            if (live_[s] && arity(instructions[s].op) == 1)
                unary_.emplace(std::pair(instructions[s].op, instructions[s].a), s);
        const std::uint64_t element = spec.double_precision ? 8 : 4;
        const auto fits = [&](std::uint32_t stride) {
            return std::uint64_t{spec.workgroup} * stride * element <= staging_bytes_limit;
        };
        stage_inputs_ = spec.staging && n() > 1 && fits(input_stride());
        stage_results_ = spec.staging && result_width() > 1 && fits(result_stride());
    }

    /// generate_body(): the statements and results only, leaves and seeds from `operands`.
    GeneratedBody body(const BodyOperands& operands) {
        body_ = &operands;
        switch (spec_.kernel) {
            case Kernel::forward:
                values();
                for (std::uint32_t j = 0; j < m(); ++j) results_.push_back(value(tape_.outputs()[j]));
                break;
            case Kernel::reverse: reverse(); break;
            default: throw Error("gpu::generate_body: only forward and vjp bodies");
        }
        return {std::move(w_.text()), std::move(results_), w_.statements(), library_calls_};
    }

    GeneratedKernel run() {
        prelude();
        w_.raw("void main() {\n");
        // 0 in every dispatch (a chunk holds at most 2^30 points: chunking.hpp's
        // max_chunk_lanes), but not a constant to the driver: the constants' bits are xor-ed
        // with it (real_literal).
        w_.line("uint tv_hide = pc.points >> 31u;");
        // Lanes past the chunk's end compute on clamped (in-bounds) operands and write nothing,
        // so that every invocation reaches the barriers of the staged loads and stores.
        w_.line("uint local_lane = gl_LocalInvocationID.x;");
        w_.line("uint group_first = gl_WorkGroupID.x * " + u(spec_.workgroup) + ";");
        w_.line("uint group_points = min(" + u(spec_.workgroup) + ", pc.points - group_first);");
        w_.line("bool in_chunk = local_lane < group_points;");
        w_.line("uint lane = group_first + min(local_lane, group_points - 1u);");
        if (stage_inputs_) {
            copy_loop("inputs", n(), true);
            w_.line("barrier();");
        }
        w_.line("uint in_base = " +
                (stage_inputs_ ? "local_lane * " + u(input_stride()) : "lane * " + u(n())) + ";");
        if (tape_.param_count() > 0)
            w_.line("uint par_base = pc.params_per_point != 0u ? lane * " + u(tape_.param_count()) +
                    " : 0u;");
        switch (spec_.kernel) {
            case Kernel::forward:
                values();
                for (std::uint32_t j = 0; j < m(); ++j) results_.push_back(value(tape_.outputs()[j]));
                break;
            case Kernel::reverse: reverse(); break;
            case Kernel::tangent: tangent(); break;
            case Kernel::hvp: hvp(); break;
            default:
                throw Error(std::string("gpu::compile: no compiled form of the ") +
                            kernel_name(spec_.kernel) + " kernel");
        }
        store_results();
        guards();
        w_.raw("}\n");
        return {std::move(w_.text()), w_.statements(), library_calls_};
    }

private:
    bool dual() const { return spec_.kernel == Kernel::hvp; }
    std::string value(std::uint32_t slot) const { return var("v", slot) + (dual() ? ".v" : ""); }
    std::uint32_t n() const { return tape_.input_count(); }
    std::uint32_t m() const { return tape_.output_count(); }

    void prelude() {
        const bool d = spec_.double_precision;
        w_.raw("// tapevm compiled kernel: " + spec_name(spec_, tape_) + ", " + (d ? "double" : "float") +
               ", " + std::to_string(slots_) + " instructions, " + std::to_string(n()) + " inputs, " +
               std::to_string(m()) + " outputs\n");
        w_.raw("#version 450\n#extension GL_GOOGLE_include_directive : require\n");
        w_.raw(std::string("#define REAL ") + (d ? "double" : "float") + "\n#define REAL_IS_DOUBLE " +
               (d ? "1" : "0") + "\n");
        w_.raw("#include \"ops.glsl\"\n");
        if (dual()) w_.raw("#include \"dual_ops.glsl\"\n");
        w_.raw("layout(local_size_x = " + std::to_string(spec_.workgroup) +
               ") in;\n#include \"push_constants.h\"\n");
        w_.raw(buffer_layout(binding_inputs) + "readonly buffer Inputs { REAL inputs[]; };\n");
        const std::string real4 = d ? "dvec4" : "vec4";  // the same buffers, four values at a time
        if (stage_inputs_)
            w_.raw(buffer_layout(binding_inputs) + "readonly buffer Inputs4 { " + real4 + " inputs4[]; };\n");
        w_.raw(buffer_layout(binding_params) + "readonly buffer Params { REAL params[]; };\n");
        w_.raw(buffer_layout(binding_extra0) + "readonly buffer Extra0 { REAL extra0[]; };\n");
        w_.raw(buffer_layout(binding_extra1) + "readonly buffer Extra1 { REAL extra1[]; };\n");
        w_.raw(buffer_layout(binding_results) + "writeonly buffer Results { REAL results[]; };\n");
        if (stage_results_)
            w_.raw(buffer_layout(binding_results) + "writeonly buffer Results4 { " + real4 +
                   " results4[]; };\n");
        w_.raw(buffer_layout(binding_work) + "writeonly buffer Values { REAL values[]; };\n");
        if (!tape_.guards().empty())
            w_.raw(buffer_layout(binding_flags) + "buffer Flags { uint diverged[]; };\n");
        const std::uint32_t tile =
            std::max(stage_inputs_ ? input_stride() : 0u, stage_results_ ? result_stride() : 0u);
        if (tile > 0)  // the workgroup's rows of inputs, then of results, in shared memory
            w_.raw("shared REAL tile[" + std::to_string(std::uint64_t{tile} * spec_.workgroup) + "];\n");
        w_.raw("bool tvc_truth(REAL x) { return !(x == REAL(0)); }\n\n");
    }

    // The value of leaf `ins` as a REAL expression.
    std::string leaf(const Instruction& ins) const {
        if (body_ != nullptr && ins.op == Op::Input) return "(" + body_->inputs[ins.a] + ")";
        if (body_ != nullptr && ins.op == Op::Param) return "(" + body_->params[ins.a] + ")";
        if (ins.op == Op::Input)
            return std::string(stage_inputs_ ? "tile" : "inputs") + "[in_base + " + u(ins.a) + "]";
        if (ins.op == Op::Param) return "params[par_base + " + u(ins.a) + "]";
        // Whole kernels hide their constants from the driver (real_literal); bodies (nn's
        // fused kernels, no push constants of ours) keep literals.
        return real_literal(tape_.constants()[ins.a], spec_.double_precision,
                            body_ == nullptr ? "tv_hide" : "");
    }

    // Arguments of op functions: the operands' variables (and Powi's exponent).
    std::string arguments(const Instruction& ins) const {
        std::string text;
        for (std::uint32_t k = 0; k < arity(ins.op); ++k)
            text += (k ? ", v" : "v") + std::to_string(operand(ins, k));
        if (has_flag(ins.op, op_flag::immediate)) text += ", " + std::to_string(powi_exponent(ins));
        return text;
    }

    // Every live value in tape order (scalars, or duals with the direction's tangents for hvp).
    void values() {
        for (std::uint32_t s = 0; s < slots_; ++s)
            if (live_[s]) value_statement(s);
    }

    // The statement of live slot s's value.
    void value_statement(std::uint32_t s) {
        const Instruction& ins = tape_.instructions()[s];
        const std::string v = var("v", s);
        if (const auto trig = sincos_of(ins)) {  // sin and cos of the operand from one reduction
            if (!sincos_emitted_[ins.a]) {
                w_.line("REAL " + trig->sin + ", " + trig->cos + ";");
                w_.line("tv_sincos(" + value(ins.a) + ", " + trig->sin + ", " + trig->cos + ");");
                sincos_emitted_[ins.a] = true;
                library_calls_ += 2;
            }
            const bool is_sin = ins.op == Op::Sin;
            if (!dual()) {
                w_.line("REAL " + v + " = " + (is_sin ? trig->sin : trig->cos) + ";");
            } else {  // td_sin, td_cos: the value, and the tangent through the partial
                w_.line("Dual " + v + " = Dual(" + (is_sin ? trig->sin : trig->cos) + ", tv_contribution(" +
                        (is_sin ? trig->cos : "-" + trig->sin) + ", " + var("v", ins.a) + ".t));");
            }
            return;
        }
        library_calls_ += (dual() ? 2 : 1) * info(ins.op).value_calls;
        if (!dual()) {
            w_.line("REAL " + v + " = " +
                    (arity(ins.op) == 0 ? leaf(ins)
                                        : "tv_value_" + op_name(ins.op) + "(" + arguments(ins) + ")") +
                    ";");
        } else if (ins.op == Op::Input) {
            w_.line("Dual " + v + " = Dual(" + leaf(ins) + ", extra1[lane * " + u(n()) + " + " + u(ins.a) +
                    "]);");
        } else if (arity(ins.op) == 0) {
            w_.line("Dual " + v + " = td_const(" + leaf(ins) + ");");
        } else {
            w_.line("Dual " + v + " = td_value_" + op_name(ins.op) + "(" + dual_operands(ins) + ");");
        }
    }

    // td_value / td_partials arguments: three duals (zero where the op has fewer) and the exponent.
    std::string dual_operands(const Instruction& ins) const {
        std::string text;
        for (std::uint32_t k = 0; k < 3; ++k) {
            if (k) text += ", ";
            text += k < arity(ins.op) ? var("v", operand(ins, k)) : "td_const(REAL(0))";
        }
        return text + ", " + std::to_string(has_flag(ins.op, op_flag::immediate) ? powi_exponent(ins) : 0);
    }

    // A Sin or Cos whose operand's sine and cosine come from one tv_sincos (exactly tv_sin and
    // tv_cos): where the kernel needs both, because the tape has a Sin and a Cos of that operand,
    // or because the op's partial is the other (reverse, tangent and hvp kernels, where the
    // operand depends on an input). The variables holding them.
    struct SinCos {
        std::string sin, cos;
    };
    std::optional<SinCos> sincos_of(const Instruction& ins) const {
        if ((ins.op != Op::Sin && ins.op != Op::Cos) || !live_[ins.a]) return std::nullopt;
        const bool both =
            unary_.count(std::pair(Op::Sin, ins.a)) != 0 && unary_.count(std::pair(Op::Cos, ins.a)) != 0;
        const bool partial_needed = spec_.kernel != Kernel::forward && depends_[ins.a];
        if (!both && !partial_needed) return std::nullopt;
        return SinCos{var("sin", ins.a), var("cos", ins.a)};
    }

    // Sin's partial is cos(a): the value of a Cos of the same operand, when the tape computes
    // one, bit for bit (the same formula, in scalars and in duals), instead of a second cos.
    // The slot holding it and whether the partial is its negation (Cos: -sin(a)).
    std::optional<std::pair<std::uint32_t, bool>> sibling_slot(const Instruction& ins) const {
        const auto sibling = partial_sibling(ins.op);
        if (!sibling) return std::nullopt;
        const auto found = unary_.find(std::pair(sibling->op, ins.a));
        if (found == unary_.end()) return std::nullopt;
        return std::pair(found->second, sibling->negated);
    }

    // The partials of slot s into p<s>_0.. (scalar kernels).
    void partials(std::uint32_t s) {
        const Instruction& ins = tape_.instructions()[s];
        const std::string p = var("p", s) + "_";
        if (const auto trig = sincos_of(ins)) {  // Sin: cos(a), Cos: -sin(a)
            w_.line("REAL " + p + "0 = " + (ins.op == Op::Sin ? trig->cos : "-" + trig->sin) + ";");
            return;
        }
        if (const auto sibling = sibling_slot(ins)) {
            w_.line("REAL " + p + "0 = " + (sibling->second ? "-" : "") + value(sibling->first) + ";");
            return;
        }
        std::string declared = "REAL ";
        std::string outs;
        for (std::uint32_t k = 0; k < arity(ins.op); ++k) {
            declared += (k ? ", " : "") + p + std::to_string(k);
            outs += ", " + p + std::to_string(k);
        }
        w_.line(declared + ";");
        library_calls_ += info(ins.op).partial_calls;
        w_.line("tv_partials_" + op_name(ins.op) + "(" + read_arguments(s) + outs + ");");
    }

    // tv_partials_<op>'s value arguments for slot s: the operands and the result, each the
    // variable where the partials read it (OpInfo::partial_reads), else REAL(0), as in the
    // interpreter's compact kernels; and Powi's exponent.
    std::string read_arguments(std::uint32_t s) const {
        const Instruction& ins = tape_.instructions()[s];
        const std::uint32_t reads = info(ins.op).partial_reads;
        std::string text;
        for (std::uint32_t k = 0; k < arity(ins.op); ++k)
            text +=
                (k ? ", " : "") + ((reads >> k) & 1u ? var("v", operand(ins, k)) : std::string("REAL(0)"));
        if (has_flag(ins.op, op_flag::immediate)) text += ", " + std::to_string(powi_exponent(ins));
        return text + ", " + (reads & partial_reads_result ? var("v", s) : std::string("REAL(0)"));
    }

    // The last slot whose statement declares a variable that s's partials (partials()) read;
    // ReverseOrder::before_forward when they read none.
    std::int64_t partials_read_at(std::uint32_t s) const {
        const Instruction& ins = tape_.instructions()[s];
        if (sincos_of(ins)) return s;  // the operand's sine or cosine, declared by slot s at the latest
        if (const auto sibling = sibling_slot(ins)) return sibling->first;
        const std::uint32_t reads = info(ins.op).partial_reads;
        std::int64_t at = ReverseOrder::before_forward;
        for (std::uint32_t k = 0; k < arity(ins.op); ++k)
            if ((reads >> k) & 1u) at = std::max<std::int64_t>(at, operand(ins, k));
        if (reads & partial_reads_result) at = s;
        return at;
    }

    // Reverse mode in vector form: K sweeps (seeds) over the same values and partials, each
    // reverse statement placed among the forward ones as early as it can run (reverse_order.hpp),
    // so that values the partials read die early. An adjoint is a variable from its first
    // contribution on (written, not added: the interpreter's compact program does the same),
    // summed in the reference VM's order: a contribution computed before those ahead of it
    // waits in a variable of its own.
    void reverse() {
        const std::uint32_t seeds = spec_.directions;
        std::vector<std::int64_t> reads(slots_, ReverseOrder::before_forward);
        const auto instructions = tape_.instructions();
        for (std::uint32_t s = 0; s < slots_; ++s)
            if (has_partials(instructions[s].op) && depends_[s]) reads[s] = partials_read_at(s);
        const ReverseOrder order = reverse_order(tape_, depends_, seeds, spec_.seeds_from_buffer, reads);
        sums_.assign(seeds, std::vector<Sum>(slots_));
        for (std::uint32_t k = 0; k < seeds; ++k) {
            for (std::uint32_t j = 0; j < m(); ++j) {
                const std::uint32_t o = tape_.outputs()[j];
                if (!depends_[o]) continue;
                if (body_ != nullptr)
                    add_term(k, o, sums_[k][o].added, "(" + body_->seeds[j] + ")", "");
                else if (spec_.seeds_from_buffer)
                    add_term(k, o, sums_[k][o].added, "extra0[lane * " + u(m()) + " + " + u(j) + "]", "");
                else if (j == k)
                    add_term(k, o, sums_[k][o].added, "REAL(1)", "");
            }
        }
        // Reverse statements by placement (after slot p: index p + 1), in descending slot order.
        std::vector<std::vector<std::uint32_t>> placed(std::size_t{slots_} + 1);
        for (std::uint32_t s = slots_; s-- > 0;)
            if (order.active[s]) placed[static_cast<std::size_t>(order.after[s] + 1)].push_back(s);
        for (const std::uint32_t s : placed[0]) reverse_statement(s, order);
        for (std::uint32_t p = 0; p < slots_; ++p) {
            if (live_[p]) value_statement(p);
            for (const std::uint32_t s : placed[p + 1]) reverse_statement(s, order);
        }
        if (spec_.write_values)
            for (std::uint32_t j = 0; j < m(); ++j)
                w_.line("if (in_chunk) values[lane * " + u(m()) + " + " + u(j) +
                        "] = " + value(tape_.outputs()[j]) + ";");
        for (std::uint32_t k = 0; k < seeds; ++k)
            for (std::uint32_t i = 0; i < n(); ++i) {
                complete(k, i, order);
                results_.push_back(order.reached[k][i] ? var("g", k) + "_" + std::to_string(i)
                                                       : std::string("REAL(0)"));
            }
    }

    // Slot s's partials and its contributions to its operands' adjoints, for every seed that
    // reaches it.
    void reverse_statement(std::uint32_t s, const ReverseOrder& order) {
        const Instruction& ins = tape_.instructions()[s];
        partials(s);
        for (std::uint32_t k = 0; k < spec_.directions; ++k) {
            if (!order.reached[k][s]) continue;
            complete(k, s, order);
            const std::string g = var("g", k) + "_" + std::to_string(s);
            for (std::uint32_t i = 0; i < arity(ins.op); ++i) {
                if (!depends_[operand(ins, i)]) continue;
                add_term(k, operand(ins, i), order.position[k][3 * s + i],
                         "tv_contribution(p" + std::to_string(s) + "_" + std::to_string(i) + ", " + g + ")",
                         var("c", k) + "_" + std::to_string(s) + "_" + std::to_string(i));
            }
        }
    }

    // One adjoint's sum: the terms added so far, and terms computed ahead of their turn.
    struct Sum {
        std::uint32_t added = 0;
        std::map<std::uint32_t, std::string> waiting;  // position -> variable
    };

    // Term `position` of seed k's adjoint of `target`: added now when it is the next in the
    // reference order (then any waiting terms that follow it), else kept in variable `early`.
    void add_term(std::uint32_t k, std::uint32_t target, std::uint32_t position, const std::string& amount,
                  const std::string& early) {
        Sum& sum = sums_[k][target];
        const std::string g = var("g", k) + "_" + std::to_string(target);
        const auto add = [&](const std::string& term) {
            w_.line(sum.added == 0 ? "precise REAL " + g + " = " + term + ";" : g + " += " + term + ";");
            ++sum.added;
        };
        if (position != sum.added) {
            w_.line("precise REAL " + early + " = " + amount + ";");
            sum.waiting.emplace(position, early);
            return;
        }
        add(amount);
        for (auto next = sum.waiting.begin(); next != sum.waiting.end() && next->first == sum.added;
             next = sum.waiting.erase(next))
            add(next->second);
    }

    // Checks that seed k's adjoint of `slot` has all its terms: reverse_order's placement
    // promises it wherever the adjoint is read.
    void complete(std::uint32_t k, std::uint32_t slot, const ReverseOrder& order) const {
        if (sums_[k][slot].added != order.terms[k][slot])
            throw Error("gpu::compile: internal error: adjoint of slot " + std::to_string(slot) +
                        " read before its last contribution");
    }

    // Forward (tangent) mode: K directions; a tangent known to be zero is not computed.
    void tangent() {
        values();
        const std::uint32_t directions = spec_.directions;
        // Each slot's tangent along each direction: "" when zero, else an expression.
        std::vector<std::vector<std::string>> t(directions, std::vector<std::string>(slots_));
        const auto instructions = tape_.instructions();
        for (std::uint32_t s = 0; s < slots_; ++s) {
            const Instruction& ins = instructions[s];
            if (!live_[s] || !depends_[s]) continue;
            if (ins.op == Op::Input) {
                for (std::uint32_t k = 0; k < directions; ++k) {
                    if (!spec_.seeds_from_buffer) {
                        if (k == ins.a) t[k][s] = "REAL(1)";
                        continue;
                    }
                    t[k][s] = var("t", k) + "_" + std::to_string(s);
                    w_.line("REAL " + t[k][s] + " = extra0[lane * " + u(n()) + " + " + u(ins.a) + "];");
                }
                continue;
            }
            if (!has_partials(ins.op)) continue;
            bool any = false;
            for (std::uint32_t k = 0; k < directions; ++k)
                for (std::uint32_t i = 0; i < arity(ins.op); ++i) any = any || !t[k][operand(ins, i)].empty();
            if (!any) continue;
            partials(s);
            for (std::uint32_t k = 0; k < directions; ++k) {
                std::string sum;
                for (std::uint32_t i = 0; i < arity(ins.op); ++i) {
                    const std::string& tangent = t[k][operand(ins, i)];
                    if (tangent.empty()) continue;
                    sum += (sum.empty() ? "" : " + ") + std::string("tv_contribution(p") + std::to_string(s) +
                           "_" + std::to_string(i) + ", " + tangent + ")";
                }
                if (sum.empty()) continue;
                t[k][s] = var("t", k) + "_" + std::to_string(s);
                w_.line("precise REAL " + t[k][s] + " = " + sum + ";");
            }
        }
        for (std::uint32_t j = 0; j < m(); ++j)
            for (std::uint32_t k = 0; k < directions; ++k) {
                const std::string& tangent = t[k][tape_.outputs()[j]];
                results_.push_back(tangent.empty() ? "REAL(0)" : tangent);
            }
    }

    // Hessian-vector products in dual numbers, forward over reverse, as the hvp kernel (and
    // the reference VM) computes them: adjoints start at zero, a zero adjoint is skipped.
    void hvp() {
        values();
        std::vector<bool> declared(slots_, false);
        const auto adjoint = [&](std::uint32_t slot) {
            const std::string g = var("g", slot);
            if (!declared[slot]) {
                w_.line("Dual " + g + " = td_const(REAL(0));");
                declared[slot] = true;
            }
            return g;
        };
        for (std::uint32_t j = 0; j < m(); ++j) {
            const std::uint32_t o = tape_.outputs()[j];
            if (!depends_[o]) continue;
            const std::string g = adjoint(o);
            w_.line(g + " = td_add(" + g + ", td_const(extra0[lane * " + u(m()) + " + " + u(j) + "]));");
        }
        const auto instructions = tape_.instructions();
        for (std::uint32_t s = slots_; s-- > 0;) {
            const Instruction& ins = instructions[s];
            if (!has_partials(ins.op) || !depends_[s] || !declared[s]) continue;
            std::vector<std::string> targets;
            for (std::uint32_t i = 0; i < arity(ins.op); ++i)
                targets.push_back(depends_[operand(ins, i)] ? adjoint(operand(ins, i)) : "");
            const std::string g = var("g", s);
            const std::string q = var("q", s) + "_";
            // A zero adjoint contributes nothing (the reference skips it): selects rather than a
            // branch, so the kernel stays one basic block (CPU devices' compilers are much faster).
            const std::string skip = var("z", s);
            w_.line("bool " + skip + " = td_is_zero(" + g + ");");
            if (const auto trig = sincos_of(ins)) {  // td_cos(a) or -td_sin(a), as in values()
                const std::string a = var("v", ins.a) + ".t";
                const std::string sin_dual =
                    "Dual(" + trig->sin + ", tv_contribution(" + trig->cos + ", " + a + "))";
                const std::string cos_dual =
                    "Dual(" + trig->cos + ", tv_contribution(-" + trig->sin + ", " + a + "))";
                w_.line("Dual " + q + "0 = " + (ins.op == Op::Sin ? cos_dual : "td_neg(" + sin_dual + ")") +
                        ";");
            } else if (const auto sibling =
                           sibling_slot(ins)) {  // the dual partial is the sibling's dual value
                w_.line("Dual " + q + "0 = " +
                        (sibling->second ? "td_neg(" + var("v", sibling->first) + ")"
                                         : var("v", sibling->first)) +
                        ";");
            } else {
                w_.line("Dual " + q + "0, " + q + "1, " + q + "2;");
                library_calls_ += 2 * info(ins.op).partial_calls;
                w_.line("td_partials_" + op_name(ins.op) + "(" + dual_operands(ins) + ", " + var("v", s) +
                        ", " + q + "0, " + q + "1, " + q + "2);");
            }
            for (std::uint32_t i = 0; i < targets.size(); ++i)
                if (!targets[i].empty())
                    w_.line(targets[i] + " = " + skip + " ? " + targets[i] + " : td_add(" + targets[i] +
                            ", td_contribution(" + q + std::to_string(i) + ", " + g + "));");
        }
        for (std::uint32_t i = 0; i < n(); ++i)
            results_.push_back(declared[i] ? var("g", i) + ".t" : std::string("REAL(0)"));
    }

    void guards() {
        if (tape_.guards().empty()) return;  // no flags to write (the runner reads none)
        std::string failed;
        for (const Guard& guard : tape_.guards())
            failed += (failed.empty() ? "" : " || ") + std::string("tvc_truth(") + value(guard.slot) +
                      (guard.expected ? ") != true" : ") != false");
        // The flag, and the chunk's count of failing lanes (interpreter.glsl's write_flag).
        w_.line("uint failed = (" + failed + ") ? 1u : 0u;");
        w_.line("if (in_chunk) diverged[lane] = failed;");
        w_.line("if (in_chunk && failed != 0u) atomicAdd(diverged[pc.lanes], 1u);");
    }

    // Rows of `width` values are `stride` apart in the tile: an odd stride, so that lanes
    // reading their own rows hit different shared-memory banks.
    static std::uint32_t odd_stride(std::uint32_t width) { return width | 1u; }
    std::uint32_t input_stride() const { return odd_stride(n()); }
    std::uint32_t result_width() const {
        switch (spec_.kernel) {
            case Kernel::forward: return m();
            case Kernel::reverse: return spec_.directions * n();
            case Kernel::tangent: return m() * spec_.directions;
            default: return n();
        }
    }
    std::uint32_t result_stride() const { return odd_stride(result_width()); }

    // A workgroup-wide copy between the group's rows of `width` values in device memory
    // (`buffer`, its 4-wide alias `buffer4`) and the tile: four consecutive values per lane at a
    // time (one 16- or 32-byte access; the group's first value is a multiple of 4 since the
    // workgroup size is), consecutive lanes on consecutive quadruples, then the last few one by
    // one. `load`: device memory to the tile, else the tile to device memory.
    void copy_loop(const std::string& buffer, std::uint32_t width, bool load) {
        const std::string n = u(width), stride = load ? u(input_stride()) : u(result_stride());
        const std::string group = u(spec_.workgroup), real4 = spec_.double_precision ? "dvec4" : "vec4";
        const std::string at = "tile[row * " + stride + " + column]";
        w_.line("for (uint q = local_lane; q < group_points * " + n + " / 4u; q += " + group + ") {");
        if (load) w_.line("    " + real4 + " quad = " + buffer + "4[group_first * " + n + " / 4u + q];");
        if (!load) w_.line("    " + real4 + " quad;");
        w_.line("    for (uint k = 0u; k < 4u; ++k) {");
        w_.line("        uint i = 4u * q + k, row = i / " + n + ", column = i - row * " + n + ";");
        w_.line(load ? "        " + at + " = quad[k];" : "        quad[k] = " + at + ";");
        w_.line("    }");
        if (!load) w_.line("    " + buffer + "4[group_first * " + n + " / 4u + q] = quad;");
        w_.line("}");
        w_.line("for (uint i = group_points * " + n + " / 4u * 4u + local_lane; i < group_points * " + n +
                "; i += " + group + ") {");
        w_.line("    uint row = i / " + n + ", column = i - row * " + n + ";");
        w_.line(load ? "    " + at + " = " + buffer + "[group_first * " + n + " + i];"
                     : "    " + buffer + "[group_first * " + n + " + i] = " + at + ";");
        w_.line("}");
    }

    // The results, row-major [points][result_width()]: through the tile (each lane writes its
    // row there, then the workgroup stores all rows with consecutive addresses), or directly.
    void store_results() {
        const std::uint32_t width = result_width();
        if (!stage_results_) {
            for (std::uint32_t j = 0; j < results_.size(); ++j)
                w_.line("if (in_chunk) results[lane * " + u(width) + " + " + u(j) + "] = " + results_[j] +
                        ";");
            return;
        }
        w_.line("barrier();");  // every lane has read its inputs from the tile
        for (std::uint32_t j = 0; j < results_.size(); ++j)
            w_.line("tile[local_lane * " + u(result_stride()) + " + " + u(j) + "] = " + results_[j] + ";");
        w_.line("barrier();");
        copy_loop("results", width, false);
    }

    // Shared memory a kernel may take for staging (the rest stays free for occupancy).
    static constexpr std::uint64_t staging_bytes_limit = 16 * 1024;

    const Tape& tape_;
    KernelSpec spec_;
    std::uint32_t slots_;
    std::vector<bool> depends_, live_;
    std::map<std::pair<Op, std::uint32_t>, std::uint32_t> unary_;  // (op, operand) -> a live slot
    std::size_t library_calls_ = 0;                                // GeneratedKernel::library_calls
    std::vector<bool> sincos_emitted_;  // per operand slot: its tv_sincos is emitted
    bool stage_inputs_ = false, stage_results_ = false;
    std::vector<std::string> results_;    // the result row's expressions, in order
    std::vector<std::vector<Sum>> sums_;  // reverse: [seed][slot], the adjoints' sums
    const BodyOperands* body_ = nullptr;  // generate_body's operands
    Writer w_;
};

}  // namespace

std::string spec_name(const KernelSpec& spec, const Tape& tape) {
    std::string name;
    switch (spec.kernel) {
        case Kernel::forward: name = "forward"; break;
        case Kernel::reverse:
            name = spec.seeds_from_buffer
                       ? "vjp"
                       : (spec.directions == 1 && tape.output_count() == 1 ? "gradient" : "jacobian-reverse");
            break;
        case Kernel::tangent: name = spec.seeds_from_buffer ? "jvp" : "jacobian-forward"; break;
        case Kernel::hvp: name = "hvp"; break;
        default: name = kernel_name(spec.kernel);
    }
    return spec.write_values ? name + "+values" : name;
}

GeneratedKernel generate_glsl(const Tape& tape, const KernelSpec& spec) {
    return Generator(tape, spec).run();
}

GeneratedBody generate_body(const Tape& tape, const KernelSpec& spec, const BodyOperands& operands) {
    const bool reverse = spec.kernel == Kernel::reverse;
    if (!(spec.kernel == Kernel::forward || (reverse && spec.directions == 1 && spec.seeds_from_buffer)) ||
        spec.write_values)
        throw Error("gpu::generate_body: only forward and vjp (one seed from the operands) bodies");
    if (operands.inputs.size() != tape.input_count() || operands.params.size() != tape.param_count() ||
        (reverse && operands.seeds.size() != tape.output_count()))
        throw Error("gpu::generate_body: operand counts do not match the tape");
    KernelSpec body_spec = spec;
    body_spec.staging = false;
    return Generator(tape, body_spec).body(operands);
}

}  // namespace tapevm::gpu::detail
