#include "plan.hpp"

#include "detail/op_formulas.hpp"

namespace tapevm::cpu::detail {
namespace {

/// Formula<op>::unit_partials: bit k set when partial k is identically 1.
std::uint32_t unit_partials(Op op) {
    return tapevm::detail::visit_op(op, [](auto tag) -> std::uint32_t {
        constexpr Op o = decltype(tag)::value;
        if constexpr (has_flag(o, op_flag::leaf)) {
            return 0;
        } else {
            return tapevm::detail::Formula<o>::unit_partials;
        }
    });
}

bool has_partials(Op op) {
    return tapevm::detail::visit_op(op, [](auto tag) {
        constexpr Op o = decltype(tag)::value;
        if constexpr (has_flag(o, op_flag::leaf)) {
            return false;
        } else {
            return tapevm::detail::Formula<o>::has_partials;
        }
    });
}

}  // namespace

Plan::Plan(const Tape& tape)
    : inputs(tape.input_count()), params(tape.param_count()), outputs(tape.output_count()),
      slots(tape.slot_count()), active(tape.slot_count(), 0), seed_first(tape.output_count(), 0),
      input_reached(tape.input_count(), 0) {
    const auto instructions = tape.instructions();
    for (std::uint32_t slot = 0; slot < slots; ++slot) {
        const Instruction& ins = instructions[slot];
        if (ins.op == Op::Input) {
            active[slot] = 1;
            continue;
        }
        if (ins.op == Op::Const) {
            const_slots.push_back(slot);
            const_values.push_back(tape.constants()[ins.a]);
        }
        if (has_flag(ins.op, op_flag::leaf)) continue;
        compute_slots.push_back(slot);
        if (!has_partials(ins.op)) continue;
        const std::uint32_t operands[3] = {ins.a, ins.b, ins.c};
        Step step{slot, 0, 0};
        for (std::uint32_t k = 0; k < arity(ins.op); ++k) {
            if (active[operands[k]]) step.active = static_cast<std::uint8_t>(step.active | (1u << k));
        }
        if (step.active == 0) continue;
        active[slot] = 1;
        tangent_steps.push_back(step);
    }

    std::vector<std::uint8_t> written(slots, 0);
    for (std::uint32_t k = 0; k < outputs; ++k) {
        const std::uint32_t slot = tape.outputs()[k];
        seed_first[k] = written[slot] ? 0 : 1;
        written[slot] = 1;
    }
    for (auto it = tangent_steps.rbegin(); it != tangent_steps.rend(); ++it) {
        if (!written[it->slot]) continue;
        Step step = *it;
        const Instruction& ins = instructions[step.slot];
        const std::uint32_t operands[3] = {ins.a, ins.b, ins.c};
        for (std::uint32_t k = 0; k < arity(ins.op); ++k) {
            if (!(step.active & (1u << k))) continue;
            if (!written[operands[k]]) step.first = static_cast<std::uint8_t>(step.first | (1u << k));
            written[operands[k]] = 1;
        }
        reverse_steps.push_back(step);
    }
    for (std::uint32_t i = 0; i < inputs; ++i) input_reached[i] = written[i];

    adjoint_home.resize(slots);
    for (std::uint32_t slot = 0; slot < slots; ++slot) adjoint_home[slot] = slot;
    for (Step& step : reverse_steps) {
        const Instruction& ins = instructions[step.slot];
        const std::uint32_t operands[3] = {ins.a, ins.b, ins.c};
        const std::uint32_t unit = unit_partials(ins.op);
        for (std::uint32_t k = 0; k < arity(ins.op); ++k) {
            const unsigned bit = 1u << k;
            if (!(unit & bit) || !(step.active & bit) || !(step.first & bit)) continue;
            if (instructions[operands[k]].op == Op::Input) continue;
            // One operand per step: two distinct operands in one storage would see each
            // other's later contributions.
            step.alias = static_cast<std::uint8_t>(step.alias | bit);
            adjoint_home[operands[k]] = adjoint_home[step.slot];
            break;
        }
    }
}

}  // namespace tapevm::cpu::detail
