#include "plan.hpp"

#include <algorithm>

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

/// Formula<op>::partial_reads: bit k when the partials read operand k, bit 3 the result.
std::uint32_t partial_reads(Op op) {
    return tapevm::detail::visit_op(op, [](auto tag) -> std::uint32_t {
        constexpr Op o = decltype(tag)::value;
        if constexpr (has_flag(o, op_flag::leaf)) {
            return 0;
        } else {
            return tapevm::detail::Formula<o>::partial_reads;
        }
    });
}

/// Rows for intervals of use: `first[i]`..`last[i]` (inclusive, in some sweep's order) of
/// item i; items with first == none get no row. At each position the rows of the items that
/// start there are taken before those of the items that end there are given back, so an
/// item never shares a row with one it is used together with; the most recently given back
/// row is taken first. Returns the row count; rows[i] is item i's row + `base`.
constexpr std::uint32_t none = ~std::uint32_t{0};

std::uint32_t assign_rows(const std::vector<std::uint32_t>& first, const std::vector<std::uint32_t>& last,
                          std::uint32_t positions, std::uint32_t base, std::vector<std::uint32_t>& rows) {
    std::vector<std::vector<std::uint32_t>> starting(positions + 1);
    std::vector<std::vector<std::uint32_t>> ending(positions + 1);
    for (std::uint32_t i = 0; i < first.size(); ++i) {
        if (first[i] == none) continue;
        starting[first[i]].push_back(i);
        ending[last[i]].push_back(i);
    }
    std::vector<std::uint32_t> free_rows;
    std::uint32_t count = 0;
    for (std::uint32_t position = 0; position <= positions; ++position) {
        for (const std::uint32_t i : starting[position]) {
            if (free_rows.empty()) {
                rows[i] = base + count++;
            } else {
                rows[i] = free_rows.back();
                free_rows.pop_back();
            }
        }
        for (const std::uint32_t i : ending[position]) free_rows.push_back(rows[i]);
    }
    return count;
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

    // Value rows. Positions: 0 .. compute_slots.size() - 1 the value sweep, then one
    // position for everything after it.
    const auto computed = static_cast<std::uint32_t>(compute_slots.size());
    value_row.assign(slots, 0);
    std::vector<std::uint32_t> first(slots, none);
    std::vector<std::uint32_t> last(slots, none);
    std::uint32_t leaf_rows = inputs + params;
    for (std::uint32_t slot = 0; slot < inputs + params; ++slot) value_row[slot] = slot;
    for (const std::uint32_t slot : const_slots) value_row[slot] = leaf_rows++;
    for (std::uint32_t position = 0; position < computed; ++position) {
        const std::uint32_t slot = compute_slots[position];
        const Instruction& ins = instructions[slot];
        first[slot] = last[slot] = position;
        const std::uint32_t operands[3] = {ins.a, ins.b, ins.c};
        for (std::uint32_t k = 0; k < arity(ins.op); ++k) {
            if (first[operands[k]] != none) last[operands[k]] = position;
        }
    }
    const auto keep = [&](std::uint32_t slot) {
        if (first[slot] != none) last[slot] = computed;
    };
    for (const std::uint32_t slot : tape.outputs()) keep(slot);
    for (const Guard& guard : tape.guards()) keep(guard.slot);
    for (const Step& step : tangent_steps) {
        const Instruction& ins = instructions[step.slot];
        const std::uint32_t operands[3] = {ins.a, ins.b, ins.c};
        const std::uint32_t reads = partial_reads(ins.op);
        for (std::uint32_t k = 0; k < arity(ins.op); ++k) {
            if (reads & (1u << k)) keep(operands[k]);
        }
        if (reads & 8u) keep(step.slot);
    }
    value_rows = leaf_rows + assign_rows(first, last, computed, leaf_rows, value_row);
    value_last_read = last;

    // Adjoint rows, per adjoint home. Positions: 0 the output seeds, 1 + i reverse step i,
    // then one position for the results.
    const auto reverse_count = static_cast<std::uint32_t>(reverse_steps.size());
    adjoint_row.assign(slots, 0);
    first.assign(slots, none);
    last.assign(slots, none);
    const auto use = [&](std::uint32_t slot, std::uint32_t position) {
        const std::uint32_t home = adjoint_home[slot];
        if (first[home] == none) first[home] = last[home] = position;
        last[home] = std::max(last[home], position);
    };
    for (const std::uint32_t slot : tape.outputs()) use(slot, 0);
    for (std::uint32_t i = 0; i < reverse_count; ++i) {
        const Step& step = reverse_steps[i];
        const Instruction& ins = instructions[step.slot];
        const std::uint32_t operands[3] = {ins.a, ins.b, ins.c};
        use(step.slot, 1 + i);
        for (std::uint32_t k = 0; k < arity(ins.op); ++k) {
            if (step.active & (1u << k)) use(operands[k], 1 + i);
        }
    }
    for (std::uint32_t i = 0; i < inputs; ++i) {
        if (input_reached[i]) use(i, 1 + reverse_count);
    }
    adjoint_rows = assign_rows(first, last, 1 + reverse_count, 0, adjoint_row);

    std::vector<std::uint32_t> writers(slots, 0);
    std::vector<std::uint32_t> sharers(slots, 0);
    for (const Step& step : reverse_steps) {
        const Instruction& ins = instructions[step.slot];
        const std::uint32_t operands[3] = {ins.a, ins.b, ins.c};
        bool counted[3] = {};
        for (std::uint32_t k = 0; k < arity(ins.op); ++k) {
            if (!(step.active & (1u << k))) continue;
            // One writer per step, however many of its operands name the slot.
            bool seen = false;
            for (std::uint32_t j = 0; j < k; ++j) seen = seen || (counted[j] && operands[j] == operands[k]);
            counted[k] = true;
            if (!seen) ++writers[operands[k]];
        }
    }
    for (std::uint32_t slot = 0; slot < slots; ++slot) {
        if (adjoint_home[slot] != slot) ++sharers[adjoint_home[slot]];
    }
    adjoint_private.assign(slots, 0);
    for (const Step& step : reverse_steps) {
        const std::uint32_t slot = step.slot;
        adjoint_private[slot] =
            writers[slot] == 1 && adjoint_home[slot] == slot && sharers[slot] == 0 ? 1 : 0;
    }
    for (const std::uint32_t slot : tape.outputs()) adjoint_private[slot] = 0;
    for (std::uint32_t slot = 0; slot < slots; ++slot) adjoint_row[slot] = adjoint_row[adjoint_home[slot]];
}

}  // namespace tapevm::cpu::detail
