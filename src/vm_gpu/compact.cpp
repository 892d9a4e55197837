#include "compact.hpp"

#include <algorithm>
#include <cstddef>
#include <string>

#include "kernels.hpp"
#include "tape_ops.hpp"
#include "tapevm/error.hpp"

namespace tapevm::gpu::detail {

namespace {

// Slot operands of `ins` (Powi's b is its exponent).
std::uint32_t slot_operands(const Instruction& ins) { return arity(ins.op); }

// Homes handed out and taken back, lowest free first.
class Homes {
public:
    std::uint32_t take() {
        if (free_.empty()) return count_++;
        const std::uint32_t home = free_.back();
        free_.pop_back();
        return home;
    }
    void give_back(std::uint32_t home) { free_.push_back(home); }
    void reserve(std::uint32_t count) { count_ = std::max(count_, count); }
    std::uint32_t count() const { return count_; }

private:
    std::vector<std::uint32_t> free_;
    std::uint32_t count_ = 0;
};

std::uint32_t op_word(Op op) { return static_cast<std::uint32_t>(op) | arity(op) << TV_PROGRAM_ARITY_SHIFT; }

}  // namespace

CompactProgram compact_program(const Tape& tape, bool reverse) {
    const auto instructions = tape.instructions();
    const auto slots = static_cast<std::uint32_t>(instructions.size());
    const std::uint32_t none = slots;  // "no home"
    CompactProgram program;

    // Which instructions carry derivatives.
    std::vector<bool> depends(slots, false), needed(slots, false), active(slots, false);
    for (std::uint32_t s = 0; s < slots; ++s) {
        const Instruction& ins = instructions[s];
        depends[s] = ins.op == Op::Input;
        for (std::uint32_t k = 0; k < slot_operands(ins); ++k)
            depends[s] = depends[s] || depends[operand(ins, k)];
    }
    for (const std::uint32_t o : tape.outputs()) needed[o] = true;
    for (std::uint32_t s = slots; s-- > 0;) {
        const Instruction& ins = instructions[s];
        active[s] = reverse && needed[s] && depends[s] && has_partials(ins.op) && slot_operands(ins) > 0;
        if (active[s])
            for (std::uint32_t k = 0; k < slot_operands(ins); ++k) needed[operand(ins, k)] = true;
    }

    // Values to keep to the end, and each value's last forward use.
    std::vector<bool> pinned(slots, false);
    std::vector<std::uint32_t> last_use(slots, none);
    for (const std::uint32_t o : tape.outputs()) pinned[o] = true;
    for (const Guard& guard : tape.guards()) pinned[guard.slot] = true;
    for (std::uint32_t s = 0; s < slots; ++s) {
        const Instruction& ins = instructions[s];
        const std::uint32_t reads = info(ins.op).partial_reads;
        if (active[s] && (reads & partial_reads_result)) pinned[s] = true;
        for (std::uint32_t k = 0; k < slot_operands(ins); ++k) {
            last_use[operand(ins, k)] = s;
            if (active[s] && (reads & (1u << k))) pinned[operand(ins, k)] = true;
        }
    }

    // Value homes, in tape order: an instruction may take a home its operands just gave back.
    std::vector<std::uint32_t> value_home(slots, none);
    Homes values;
    for (std::uint32_t s = 0; s < slots; ++s) {
        const Instruction& ins = instructions[s];
        for (std::uint32_t k = 0; k < slot_operands(ins); ++k) {
            const std::uint32_t x = operand(ins, k);
            const bool repeated = (k > 0 && operand(ins, 0) == x) || (k > 1 && operand(ins, 1) == x);
            if (last_use[x] == s && !pinned[x] && !repeated) values.give_back(value_home[x]);
        }
        value_home[s] = values.take();
        if (last_use[s] == none && !pinned[s]) values.give_back(value_home[s]);
    }
    program.value_count = std::max<std::uint32_t>(values.count(), 1);

    for (std::uint32_t s = 0; s < slots; ++s) {
        const Instruction& ins = instructions[s];
        std::array<std::uint32_t, 4> first{op_word(ins.op), ins.a, ins.b, ins.c};
        std::uint32_t immediate = 0;
        if (slot_operands(ins) > 0) {
            immediate = ins.op == Op::Powi ? ins.b : 0;
            for (std::uint32_t k = 0; k < 3; ++k)
                first[1 + k] = k < slot_operands(ins) ? value_home[operand(ins, k)] : 0;
        }
        program.words.push_back(first);
        program.words.push_back({value_home[s], immediate, 0, 0});
    }
    program.forward_count = slots;
    program.reverse_begin = static_cast<std::uint32_t>(program.words.size());

    // Adjoint homes, backwards: input i at home i; outputs at seeding; the rest at their first
    // contribution, given back after their own instruction.
    std::vector<std::uint32_t> adjoint_home(slots, none);
    if (reverse) {
        Homes adjoints;
        for (std::uint32_t s = 0; s < slots; ++s) {
            if (instructions[s].op != Op::Input) continue;
            if (instructions[s].a != s)
                throw Error("gpu: the tape's input " + std::to_string(instructions[s].a) +
                            " is not at slot " + std::to_string(instructions[s].a));
            adjoint_home[s] = s;
        }
        adjoints.reserve(tape.input_count());
        for (const std::uint32_t o : tape.outputs())
            if (adjoint_home[o] == none) adjoint_home[o] = adjoints.take();
        for (std::uint32_t s = slots; s-- > 0;) {
            if (!active[s]) continue;
            const Instruction& ins = instructions[s];
            const std::uint32_t own = adjoint_home[s];
            if (own == none)
                throw Error("gpu: internal error: active slot " + std::to_string(s) + " has no adjoint");
            adjoints.give_back(own);  // read before any target is written (compact.glsl)
            std::array<std::uint32_t, 4> values_used{op_word(ins.op), 0, 0, 0};
            std::array<std::uint32_t, 4> targets{0, 0, 0, 0};
            std::uint32_t flags = 0;
            for (std::uint32_t k = 0; k < slot_operands(ins); ++k) {
                const std::uint32_t x = operand(ins, k);
                values_used[1 + k] = value_home[x];
                if (!depends[x]) {
                    flags |= TV_COMPACT_SKIP << k;
                    continue;
                }
                if (adjoint_home[x] == none) {
                    adjoint_home[x] = adjoints.take();
                    flags |= TV_COMPACT_FIRST << k;
                }
                targets[k] = adjoint_home[x];
            }
            program.words.push_back(values_used);
            flags |= info(ins.op).partial_reads << TV_COMPACT_READS_SHIFT;
            program.words.push_back({value_home[s], ins.op == Op::Powi ? ins.b : 0, own, flags});
            program.words.push_back(targets);
            ++program.reverse_count;
        }
        program.adjoint_count = std::max<std::uint32_t>(adjoints.count(), 1);
    }

    program.table_begin = static_cast<std::uint32_t>(program.words.size());
    for (const std::uint32_t o : tape.outputs())
        program.words.push_back({value_home[o], adjoint_home[o] == none ? 0 : adjoint_home[o], 0, 0});
    for (const Guard& guard : tape.guards())
        program.words.push_back({value_home[guard.slot], guard.expected, 0, 0});
    return program;
}

}  // namespace tapevm::gpu::detail
