#include "point_program.hpp"

#include <algorithm>

namespace tapevm::cpu::detail {

std::vector<PointPart> point_parts(const Tape& tape, const Plan& plan, unsigned parts) {
    const auto instructions = tape.instructions();
    const auto outputs = tape.outputs();
    const std::uint32_t slots = plan.slots;
    const auto m = static_cast<std::uint32_t>(outputs.size());
    parts = std::max(1u, std::min(parts, m));
    // Per slot: 1 + its tangent step's active operands, 0 when it is not a step.
    std::vector<std::uint8_t> step_of(slots, 0);
    for (const Step& step : plan.tangent_steps)
        step_of[step.slot] = static_cast<std::uint8_t>(1 + step.active);
    constexpr std::uint32_t unmarked = ~std::uint32_t{0};
    std::vector<std::uint32_t> mark(slots, unmarked);
    std::vector<std::uint32_t> position(slots, 0);
    std::vector<PointPart> result(parts);
    for (unsigned j = 0; j < parts; ++j) {
        PointPart& part = result[j];
        const std::uint32_t begin = static_cast<std::uint32_t>(std::uint64_t{m} * j / parts);
        const std::uint32_t end = static_cast<std::uint32_t>(std::uint64_t{m} * (j + 1) / parts);
        // The cone: every slot the part's outputs (and part 0's guards) read, marked j.
        std::vector<std::uint32_t> stack, cone;
        const auto visit = [&](std::uint32_t slot) {
            if (mark[slot] == j) return;
            mark[slot] = j;
            stack.push_back(slot);
        };
        for (std::uint32_t k = begin; k < end; ++k) visit(outputs[k]);
        if (j == 0) {
            for (const Guard& guard : tape.guards()) visit(guard.slot);
        }
        while (!stack.empty()) {
            const std::uint32_t slot = stack.back();
            stack.pop_back();
            cone.push_back(slot);
            const Instruction& ins = instructions[slot];
            const std::uint32_t operands[3] = {ins.a, ins.b, ins.c};
            for (std::uint32_t k = 0; k < arity(ins.op); ++k) visit(operands[k]);
        }
        std::sort(cone.begin(), cone.end());
        // Rows: positions are the entries, then one for the results.
        const auto count = static_cast<std::uint32_t>(cone.size());
        std::vector<std::uint32_t> first(count), last(count), rows(count);
        for (std::uint32_t e = 0; e < count; ++e) {
            const std::uint32_t slot = cone[e];
            position[slot] = e;
            first[e] = last[e] = e;
            const Instruction& ins = instructions[slot];
            const std::uint32_t operands[3] = {ins.a, ins.b, ins.c};
            for (std::uint32_t k = 0; k < arity(ins.op); ++k) last[position[operands[k]]] = e;
        }
        for (std::uint32_t k = begin; k < end; ++k) last[position[outputs[k]]] = count;
        if (j == 0) {
            for (const Guard& guard : tape.guards()) last[position[guard.slot]] = count;
        }
        part.rows = assign_rows(first, last, count, 0, rows);
        part.entries.resize(count);
        for (std::uint32_t e = 0; e < count; ++e) {
            const std::uint32_t slot = cone[e];
            const Instruction& ins = instructions[slot];
            PointEntry& entry = part.entries[e];
            entry.slot = slot;
            entry.row = rows[e];
            const std::uint32_t operands[3] = {ins.a, ins.b, ins.c};
            for (std::uint32_t k = 0; k < arity(ins.op); ++k)
                entry.operand_row[k] = rows[position[operands[k]]];
            entry.step = step_of[slot] != 0 ? 1 : 0;
            entry.active = step_of[slot] != 0 ? static_cast<std::uint8_t>(step_of[slot] - 1) : 0;
        }
        for (std::uint32_t k = begin; k < end; ++k) {
            part.outputs.push_back(k);
            part.output_rows.push_back(rows[position[outputs[k]]]);
            part.output_active.push_back(plan.active[outputs[k]]);
        }
        if (j == 0) {
            for (const Guard& guard : tape.guards()) {
                part.guard_rows.push_back(rows[position[guard.slot]]);
                part.guard_expected.push_back(guard.expected != 0 ? 1 : 0);
            }
        }
    }
    return result;
}

}  // namespace tapevm::cpu::detail
