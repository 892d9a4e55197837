#include "tapevm/optimize.hpp"

#include <bit>
#include <map>
#include <optional>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "detail/op_identity.hpp"
#include "detail/op_value.hpp"

namespace tapevm {
namespace {

constexpr std::uint32_t none = UINT32_MAX;

// Pass 1: fold, simplify and merge, in one forward sweep (operands are already final when an
// instruction is reached, so one sweep reaches the fixed point).
class Simplifier {
public:
    explicit Simplifier(const TapeParts& in) : in_(in), remap_(in.instructions.size(), none) {
        out_.inputs = in.inputs;
        out_.params = in.params;
    }

    TapeParts run() {
        for (std::uint32_t slot = 0; slot < in_.instructions.size(); ++slot) remap_[slot] = simplify(slot);
        for (std::uint32_t slot : in_.outputs) out_.outputs.push_back(remap_[slot]);
        std::map<std::pair<std::uint32_t, std::uint32_t>, bool> seen;
        for (const Guard& guard : in_.guards) {
            const Guard mapped{remap_[guard.slot], guard.expected};
            const Instruction& target = out_.instructions[mapped.slot];
            if (target.op == Op::Const && (out_.constants[target.a] != 0.0) == (mapped.expected != 0)) {
                continue;  // always holds
            }
            if (seen.emplace(std::pair{mapped.slot, mapped.expected}, true).second)
                out_.guards.push_back(mapped);
        }
        return std::move(out_);
    }

private:
    std::uint32_t emit(const Instruction& instruction) {
        out_.instructions.push_back(instruction);
        return static_cast<std::uint32_t>(out_.instructions.size() - 1);
    }

    std::uint32_t constant(double value) {
        const auto bits = std::bit_cast<std::uint64_t>(value);
        if (auto found = constants_.find(bits); found != constants_.end()) return found->second;
        const auto index = static_cast<std::uint32_t>(out_.constants.size());
        out_.constants.push_back(value);
        const std::uint32_t slot = emit(Instruction{Op::Const, index, 0, 0});
        constants_.emplace(bits, slot);
        return slot;
    }

    // The constant held by output slot `slot`, if it is one.
    const double* constant_at(std::uint32_t slot) const {
        const Instruction& ins = out_.instructions[slot];
        return ins.op == Op::Const ? &out_.constants[ins.a] : nullptr;
    }

    std::uint32_t simplify(std::uint32_t slot) {
        Instruction ins = in_.instructions[slot];
        if (ins.op == Op::Input || ins.op == Op::Param) return emit(ins);
        if (ins.op == Op::Const) return constant(in_.constants[ins.a]);
        const std::uint32_t operands = arity(ins.op);
        std::uint32_t* fields[3] = {&ins.a, &ins.b, &ins.c};
        std::optional<double> constants[3];
        bool all_constant = true;
        for (std::uint32_t k = 0; k < operands; ++k) {
            *fields[k] = remap_[*fields[k]];
            if (const double* c = constant_at(*fields[k])) constants[k] = *c;
            all_constant = all_constant && constants[k].has_value();
        }
        if (all_constant) {
            return constant(detail::op_value(ins.op, constants[0].value_or(0), constants[1].value_or(0),
                                             constants[2].value_or(0), powi_exponent(ins)));
        }
        if (auto operand = detail::reduces_to(ins.op, constants)) return *fields[*operand];
        if (has_flag(ins.op, op_flag::commutative) && ins.a > ins.b) std::swap(ins.a, ins.b);
        const auto key = std::tuple{static_cast<std::uint32_t>(ins.op), ins.a, ins.b, ins.c};
        if (auto found = common_.find(key); found != common_.end()) return found->second;
        const std::uint32_t result = emit(ins);
        common_.emplace(key, result);
        return result;
    }

    const TapeParts& in_;
    TapeParts out_;
    std::vector<std::uint32_t> remap_;
    std::unordered_map<std::uint64_t, std::uint32_t> constants_;
    std::map<std::tuple<std::uint32_t, std::uint32_t, std::uint32_t, std::uint32_t>, std::uint32_t> common_;
};

// Pass 2: keep what outputs and guards need (and every input and parameter), compact slots
// and the constant pool in their original order.
TapeParts eliminate_dead_code(const TapeParts& in) {
    const std::size_t slots = in.instructions.size();
    std::vector<bool> live(slots, false);
    for (std::uint32_t slot = 0; slot < in.inputs + in.params; ++slot) live[slot] = true;
    for (std::uint32_t slot : in.outputs) live[slot] = true;
    for (const Guard& guard : in.guards) live[guard.slot] = true;
    for (std::size_t slot = slots; slot-- > 0;) {
        if (!live[slot]) continue;
        const Instruction& ins = in.instructions[slot];
        if (has_flag(ins.op, op_flag::leaf)) continue;
        const std::uint32_t fields[3] = {ins.a, ins.b, ins.c};
        for (std::uint32_t k = 0; k < arity(ins.op); ++k) live[fields[k]] = true;
    }
    TapeParts out;
    out.inputs = in.inputs;
    out.params = in.params;
    std::vector<std::uint32_t> remap(slots, none);
    for (std::size_t slot = 0; slot < slots; ++slot) {
        if (!live[slot]) continue;
        Instruction ins = in.instructions[slot];
        if (ins.op == Op::Const) {
            out.constants.push_back(in.constants[ins.a]);
            ins.a = static_cast<std::uint32_t>(out.constants.size() - 1);
        } else if (!has_flag(ins.op, op_flag::leaf)) {
            std::uint32_t* fields[3] = {&ins.a, &ins.b, &ins.c};
            for (std::uint32_t k = 0; k < arity(ins.op); ++k) *fields[k] = remap[*fields[k]];
        }
        remap[slot] = static_cast<std::uint32_t>(out.instructions.size());
        out.instructions.push_back(ins);
    }
    for (std::uint32_t slot : in.outputs) out.outputs.push_back(remap[slot]);
    for (const Guard& guard : in.guards) out.guards.push_back(Guard{remap[guard.slot], guard.expected});
    return out;
}

}  // namespace

Tape optimized(const Tape& tape) { return Tape(eliminate_dead_code(Simplifier(tape.parts()).run())); }

void Tape::optimize() { *this = optimized(*this); }

}  // namespace tapevm
