#include "tapevm/tape.hpp"

#include <bit>
#include <cstdio>
#include <sstream>

#include "tapevm/error.hpp"

namespace tapevm {
namespace {

TapeDefect defect(TapeDefect::Section section, std::uint32_t index, std::string field, std::string what) {
    return TapeDefect{section, index, std::move(field), std::move(what)};
}

const char* section_name(TapeDefect::Section section) {
    switch (section) {
        case TapeDefect::Section::header: return "header";
        case TapeDefect::Section::instruction: return "instruction";
        case TapeDefect::Section::constant: return "constant";
        case TapeDefect::Section::output: return "output";
        case TapeDefect::Section::guard: return "guard";
    }
    return "?";
}

std::optional<TapeDefect> instruction_defect(const TapeParts& parts, std::uint32_t slot) {
    using S = TapeDefect::Section;
    const Instruction& ins = parts.instructions[slot];
    const auto number = static_cast<std::uint32_t>(ins.op);
    if (!is_op(number)) {
        return defect(S::instruction, slot, "op", "unknown op number " + std::to_string(number));
    }
    const std::uint32_t leading = parts.inputs + parts.params;
    const bool in_prefix = slot < leading;
    const Op expected_leaf = slot < parts.inputs ? Op::Input : Op::Param;
    if (in_prefix && ins.op != expected_leaf) {
        return defect(S::instruction, slot, "op",
                      std::string("slot ") + std::to_string(slot) + " must be " +
                          std::string(info(expected_leaf).text));
    }
    if (!in_prefix && (ins.op == Op::Input || ins.op == Op::Param)) {
        return defect(S::instruction, slot, "op",
                      std::string(info(ins.op).text) + " only in the leading input and parameter slots");
    }
    auto unused_zero = [&](std::uint32_t first) -> std::optional<TapeDefect> {
        const std::uint32_t fields[3] = {ins.a, ins.b, ins.c};
        static const char* names[3] = {"a", "b", "c"};
        for (std::uint32_t k = first; k < 3; ++k) {
            if (fields[k] != 0) return defect(S::instruction, slot, names[k], "unused operand is not 0");
        }
        return std::nullopt;
    };
    if (ins.op == Op::Input || ins.op == Op::Param) {
        const std::uint32_t index = ins.op == Op::Input ? slot : slot - parts.inputs;
        if (ins.a != index) {
            return defect(S::instruction, slot, "a",
                          std::string(info(ins.op).text) + " index " + std::to_string(ins.a) + ", expected " +
                              std::to_string(index));
        }
        return unused_zero(1);
    }
    if (ins.op == Op::Const) {
        if (ins.a >= parts.constants.size()) {
            return defect(S::instruction, slot, "a",
                          "constant index " + std::to_string(ins.a) + " out of range (pool has " +
                              std::to_string(parts.constants.size()) + ")");
        }
        return unused_zero(1);
    }
    const std::uint32_t operands = arity(ins.op);
    const std::uint32_t fields[3] = {ins.a, ins.b, ins.c};
    static const char* names[3] = {"a", "b", "c"};
    for (std::uint32_t k = 0; k < operands; ++k) {
        if (fields[k] >= slot) {
            return defect(S::instruction, slot, names[k],
                          "operand slot " + std::to_string(fields[k]) + " is not earlier than its own slot " +
                              std::to_string(slot));
        }
    }
    // Powi keeps its exponent in b: any 32-bit pattern is a valid int32.
    return unused_zero(has_flag(ins.op, op_flag::immediate) ? 2 : operands);
}

}  // namespace

std::optional<TapeDefect> find_defect(const TapeParts& parts) {
    using S = TapeDefect::Section;
    const std::uint64_t leading = std::uint64_t{parts.inputs} + parts.params;
    if (leading > parts.instructions.size()) {
        const bool inputs_fit = parts.inputs <= parts.instructions.size();
        return defect(S::header, 0, inputs_fit ? "params" : "inputs",
                      std::to_string(parts.inputs) + " inputs and " + std::to_string(parts.params) +
                          " parameters need more than the " + std::to_string(parts.instructions.size()) +
                          " instructions");
    }
    if (parts.instructions.size() > UINT32_MAX || parts.constants.size() > UINT32_MAX ||
        parts.outputs.size() > UINT32_MAX || parts.guards.size() > UINT32_MAX) {
        return defect(S::header, 0, "counts", "more than 2^32 - 1 records");
    }
    const auto slots = static_cast<std::uint32_t>(parts.instructions.size());
    for (std::uint32_t slot = 0; slot < slots; ++slot) {
        if (auto found = instruction_defect(parts, slot)) return found;
    }
    for (std::uint32_t k = 0; k < parts.outputs.size(); ++k) {
        if (parts.outputs[k] >= slots) {
            return defect(S::output, k, "slot",
                          "output slot " + std::to_string(parts.outputs[k]) + " out of range (" +
                              std::to_string(slots) + " slots)");
        }
    }
    for (std::uint32_t k = 0; k < parts.guards.size(); ++k) {
        if (parts.guards[k].slot >= slots) {
            return defect(S::guard, k, "slot",
                          "guard slot " + std::to_string(parts.guards[k].slot) + " out of range (" +
                              std::to_string(slots) + " slots)");
        }
        if (parts.guards[k].expected > 1) {
            return defect(
                S::guard, k, "expected",
                "expected outcome " + std::to_string(parts.guards[k].expected) + " is neither 0 nor 1");
        }
    }
    return std::nullopt;
}

void validate(const TapeParts& parts) {
    if (auto found = find_defect(parts)) {
        throw InvalidTape("invalid tape: " + std::string(section_name(found->section)) + "[" +
                          std::to_string(found->index) + "]." + found->field + ": " + found->what);
    }
}

Tape::Tape(TapeParts parts) : parts_(std::move(parts)) { validate(parts_); }

namespace {

std::string format_double(double value) {
    char text[40];
    std::snprintf(text, sizeof text, "%.17g", value);
    return text;
}

}  // namespace

std::string Tape::dump() const {
    std::ostringstream out;
    auto count = [](std::uint32_t n, const char* noun) {
        return std::to_string(n) + " " + noun + (n == 1 ? "" : "s");
    };
    out << "tape: " << count(input_count(), "input") << ", " << count(param_count(), "param") << ", "
        << count(output_count(), "output") << ", " << count(instruction_count(), "instruction") << ", "
        << count(constant_count(), "constant") << ", " << count(guard_count(), "guard") << "\n";
    for (std::uint32_t slot = 0; slot < slot_count(); ++slot) {
        const Instruction& ins = parts_.instructions[slot];
        out << "  %" << slot << " = " << info(ins.op).text;
        switch (ins.op) {
            case Op::Input:
            case Op::Param: out << ' ' << ins.a; break;
            case Op::Const: out << ' ' << format_double(parts_.constants[ins.a]); break;
            case Op::Powi: out << " %" << ins.a << ", " << powi_exponent(ins); break;
            default: {
                const std::uint32_t fields[3] = {ins.a, ins.b, ins.c};
                for (std::uint32_t k = 0; k < arity(ins.op); ++k) {
                    out << (k == 0 ? " %" : ", %") << fields[k];
                }
            }
        }
        out << '\n';
    }
    out << "outputs:";
    for (std::uint32_t slot : parts_.outputs) out << " %" << slot;
    out << '\n';
    if (!parts_.guards.empty()) {
        out << "guards:";
        for (const Guard& guard : parts_.guards) {
            out << " %" << guard.slot << (guard.expected ? "==true" : "==false");
        }
        out << '\n';
    }
    return out.str();
}

bool operator==(const Tape& x, const Tape& y) {
    const TapeParts& a = x.parts_;
    const TapeParts& b = y.parts_;
    if (a.inputs != b.inputs || a.params != b.params || a.instructions != b.instructions ||
        a.outputs != b.outputs || a.guards != b.guards || a.constants.size() != b.constants.size()) {
        return false;
    }
    for (std::size_t k = 0; k < a.constants.size(); ++k) {  // bitwise: NaN == NaN, -0 != +0
        if (std::bit_cast<std::uint64_t>(a.constants[k]) != std::bit_cast<std::uint64_t>(b.constants[k])) {
            return false;
        }
    }
    return true;
}

}  // namespace tapevm
