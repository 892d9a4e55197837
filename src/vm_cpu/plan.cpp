#include "plan.hpp"

#include <algorithm>

#include "detail/op_formulas.hpp"

namespace tapevm::cpu::detail {
namespace {

constexpr std::uint32_t none = ~std::uint32_t{0};

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

/// Per slot, the indices of the steps (in `steps`) that write its adjoint, ascending, each
/// step once however many of its operands name the slot.
std::vector<std::vector<std::uint32_t>> adjoint_writers(const Tape& tape, const std::vector<Step>& steps) {
    const auto instructions = tape.instructions();
    std::vector<std::vector<std::uint32_t>> writers(tape.slot_count());
    for (std::uint32_t i = 0; i < steps.size(); ++i) {
        const Instruction& ins = instructions[steps[i].slot];
        const std::uint32_t operands[3] = {ins.a, ins.b, ins.c};
        for (std::uint32_t k = 0; k < arity(ins.op); ++k) {
            if (!(steps[i].active & (1u << k))) continue;
            std::vector<std::uint32_t>& list = writers[operands[k]];
            if (list.empty() || list.back() != i) list.push_back(i);
        }
    }
    return writers;
}

/// `steps` (in reverse tape order) reordered so that the step of a slot whose adjoint one
/// step alone writes comes right after that step, where moving it up passes no step that
/// writes an adjoint it writes too; chains of such steps move along. Every adjoint then
/// receives the same contributions in the same order, each computed from the same final
/// seed (all writers of a step's adjoint still run before it), so results are unchanged,
/// and a step and its operand's step sit next to each other for the fused adjoint entries
/// (program_sweeps.hpp).
std::vector<Step> hoist_private_steps(const Tape& tape, const std::vector<Step>& steps) {
    const auto instructions = tape.instructions();
    const auto count = static_cast<std::uint32_t>(steps.size());
    const std::vector<std::vector<std::uint32_t>> writers = adjoint_writers(tape, steps);
    std::vector<std::uint32_t> index_of(tape.slot_count(), none);
    for (std::uint32_t i = 0; i < count; ++i) index_of[steps[i].slot] = i;
    std::vector<std::uint8_t> placed(count, 0);
    // Whether a step not yet placed before step `limit` (other than it) writes slot's adjoint.
    const auto written_before = [&](std::uint32_t slot, std::uint32_t limit) {
        for (const std::uint32_t w : writers[slot]) {
            if (w >= limit) break;
            if (!placed[w]) return true;
        }
        return false;
    };
    // The step that can follow step i: that of its first operand (in operand order) whose
    // adjoint only step i writes, if it can move up; none otherwise.
    const auto follower = [&](std::uint32_t i) {
        const Instruction& ins = instructions[steps[i].slot];
        const std::uint32_t operands[3] = {ins.a, ins.b, ins.c};
        for (std::uint32_t k = 0; k < arity(ins.op); ++k) {
            if (!(steps[i].active & (1u << k))) continue;
            const std::uint32_t j = index_of[operands[k]];
            if (j == none || placed[j] || writers[operands[k]].size() != 1) continue;
            const Instruction& moved = instructions[steps[j].slot];
            const std::uint32_t written[3] = {moved.a, moved.b, moved.c};
            bool blocked = false;
            for (std::uint32_t q = 0; q < arity(moved.op) && !blocked; ++q)
                blocked = (steps[j].active & (1u << q)) && written_before(written[q], j);
            if (!blocked) return j;
        }
        return none;
    };
    std::vector<Step> order;
    order.reserve(count);
    for (std::uint32_t i = 0; i < count; ++i) {
        for (std::uint32_t j = i; j != none && !placed[j]; j = follower(j)) {
            placed[j] = 1;
            order.push_back(steps[j]);
        }
    }
    return order;
}

/// Fills home (Plan::adjoint_home) and the steps' alias bits: an operand whose adjoint a
/// step writes first, through a partial identically 1, and which is not an input, lives in
/// the storage of that step's slot (its adjoint is a copy of the seed there), unless a
/// write to that storage could then change a value one of its slots still needs. A storage
/// holds the adjoints of several slots at once only while none of them is written: at each
/// step the slots whose adjoint lives in a storage and whose step is still to come (live)
/// are known, and a new one joins only if neither it nor any of those is written from this
/// step until the earlier of their steps.
void share_adjoint_storage(const Tape& tape, std::vector<Step>& steps, std::vector<std::uint32_t>& home) {
    const auto instructions = tape.instructions();
    const std::uint32_t slots = tape.slot_count();
    const std::vector<std::vector<std::uint32_t>> writers = adjoint_writers(tape, steps);
    std::vector<std::uint32_t> step_of(slots, none);
    for (std::uint32_t i = 0; i < steps.size(); ++i) step_of[steps[i].slot] = i;
    // Whether slot's adjoint is written by a step in [from, to).
    const auto written_in = [&](std::uint32_t slot, std::uint32_t from, std::uint32_t to) {
        const auto& list = writers[slot];
        const auto it = std::lower_bound(list.begin(), list.end(), from);
        return it != list.end() && *it < to;
    };
    home.resize(slots);
    // Per storage (named by its slot), the other slots whose adjoints joined it, some dead.
    std::vector<std::vector<std::uint32_t>> joined(slots);
    for (std::uint32_t slot = 0; slot < slots; ++slot) home[slot] = slot;
    for (std::uint32_t i = 0; i < steps.size(); ++i) {
        Step& step = steps[i];
        const Instruction& ins = instructions[step.slot];
        const std::uint32_t operands[3] = {ins.a, ins.b, ins.c};
        const std::uint32_t unit = unit_partials(ins.op);
        const std::uint32_t storage = home[step.slot];
        std::vector<std::uint32_t>& members = joined[storage];
        // Live members: joined ones whose step is still to come, and the storage's own slot
        // (its adjoint was written first there, so it is live until its step).
        std::erase_if(members, [&](std::uint32_t m) { return step_of[m] <= i; });
        const std::size_t live_before = members.size();
        for (std::uint32_t k = 0; k < arity(ins.op); ++k) {
            const unsigned bit = 1u << k;
            if (!(unit & bit) || !(step.active & bit) || !(step.first & bit)) continue;
            const std::uint32_t slot = operands[k];
            if (instructions[slot].op == Op::Input) continue;
            // A second operand naming the slot writes it here.
            bool repeated = false;
            for (std::uint32_t q = k + 1; q < arity(ins.op); ++q)
                repeated = repeated || ((step.active & (1u << q)) && operands[q] == slot);
            // Members that joined at this step were written here only by joining.
            bool interferes = false;
            const auto check = [&](std::uint32_t member, std::uint32_t from) {
                const std::uint32_t until = std::min(step_of[member], step_of[slot]);
                interferes = interferes || repeated || written_in(member, from, until) ||
                             written_in(slot, i + 1, until);
            };
            for (std::size_t m = 0; m < members.size(); ++m) check(members[m], m < live_before ? i : i + 1);
            if (storage != step.slot && step_of[storage] > i) check(storage, i);
            if (interferes) continue;
            step.alias = static_cast<std::uint8_t>(step.alias | bit);
            home[slot] = storage;
            members.push_back(slot);
        }
    }
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
    std::vector<Step> steps;
    for (auto it = tangent_steps.rbegin(); it != tangent_steps.rend(); ++it) {
        if (!written[it->slot]) continue;
        const Instruction& ins = instructions[it->slot];
        const std::uint32_t operands[3] = {ins.a, ins.b, ins.c};
        for (std::uint32_t k = 0; k < arity(ins.op); ++k) {
            if (it->active & (1u << k)) written[operands[k]] = 1;
        }
        steps.push_back(*it);
    }
    for (std::uint32_t i = 0; i < inputs; ++i) input_reached[i] = written[i];
    reverse_steps = hoist_private_steps(tape, steps);

    // First writes, in the order the steps run (each adjoint's writes keep their order, so
    // these are the same writes as in reverse tape order).
    written.assign(slots, 0);
    for (const std::uint32_t slot : tape.outputs()) written[slot] = 1;
    for (Step& step : reverse_steps) {
        const Instruction& ins = instructions[step.slot];
        const std::uint32_t operands[3] = {ins.a, ins.b, ins.c};
        step.first = 0;
        for (std::uint32_t k = 0; k < arity(ins.op); ++k) {
            if (!(step.active & (1u << k))) continue;
            if (!written[operands[k]]) step.first = static_cast<std::uint8_t>(step.first | (1u << k));
            written[operands[k]] = 1;
        }
    }

    share_adjoint_storage(tape, reverse_steps, adjoint_home);

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
