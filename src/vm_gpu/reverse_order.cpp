#include "reverse_order.hpp"

#include <algorithm>
#include <limits>

#include "tape_ops.hpp"

namespace tapevm::gpu::detail {

ReverseOrder reverse_order(const Tape& tape, const std::vector<bool>& depends, std::uint32_t seeds,
                           bool seeds_from_buffer, const std::vector<std::int64_t>& reads) {
    const auto instructions = tape.instructions();
    const std::size_t slots = instructions.size();
    ReverseOrder order;
    order.active.assign(slots, false);
    order.after.assign(slots, ReverseOrder::before_forward);
    order.reached.assign(seeds, std::vector<bool>(slots, false));
    order.position.assign(seeds, std::vector<std::uint32_t>(3 * slots, 0));
    // Contributions counted so far per adjoint: the seeds first, then the consumers from the
    // last slot down, as the reference VM adds them.
    auto& count = order.terms;
    count.assign(seeds, std::vector<std::uint32_t>(slots, 0));
    for (std::uint32_t k = 0; k < seeds; ++k)
        for (std::uint32_t j = 0; j < tape.output_count(); ++j) {
            const std::uint32_t o = tape.outputs()[j];
            if (!depends[o] || !(seeds_from_buffer || j == k)) continue;
            order.reached[k][o] = true;
            ++count[k][o];
        }
    for (std::uint32_t s = static_cast<std::uint32_t>(slots); s-- > 0;) {
        const Instruction& ins = instructions[s];
        if (!has_partials(ins.op) || !depends[s]) continue;
        for (std::uint32_t k = 0; k < seeds; ++k) {
            if (!order.reached[k][s]) continue;
            order.active[s] = true;
            for (std::uint32_t i = 0; i < arity(ins.op); ++i) {
                const std::uint32_t x = operand(ins, i);
                if (!depends[x]) continue;
                order.reached[k][x] = true;
                order.position[k][3 * s + i] = count[k][x]++;
            }
        }
    }
    // Earliest placement: after what the partials read and after every contributing consumer
    // (consumers have higher slots, so one pass from the top settles each slot before its operands).
    std::vector<std::int64_t> earliest(slots, ReverseOrder::before_forward);
    for (std::uint32_t s = static_cast<std::uint32_t>(slots); s-- > 0;) {
        if (!order.active[s]) continue;
        earliest[s] = std::max(earliest[s], reads[s]);
        const Instruction& ins = instructions[s];
        for (std::uint32_t i = 0; i < arity(ins.op); ++i) {
            const std::uint32_t x = operand(ins, i);
            if (depends[x] && order.active[x]) earliest[x] = std::max(earliest[x], earliest[s]);
        }
    }
    // A statement that reads values goes at its earliest; one that reads none waits for the first
    // of its operands' statements (operands have lower slots: settled first). Consumers still come
    // first: a consumer's earliest is at most its operand's, and a waiting consumer waits at most
    // until that operand.
    for (std::uint32_t s = 0; s < slots; ++s) {
        if (!order.active[s]) continue;
        std::int64_t placed = earliest[s];
        if (reads[s] == ReverseOrder::before_forward) {
            std::int64_t first_operand = std::numeric_limits<std::int64_t>::max();
            const Instruction& ins = instructions[s];
            for (std::uint32_t i = 0; i < arity(ins.op); ++i) {
                const std::uint32_t x = operand(ins, i);
                if (depends[x] && order.active[x]) first_operand = std::min(first_operand, order.after[x]);
            }
            if (first_operand != std::numeric_limits<std::int64_t>::max())
                placed = std::max(placed, first_operand);
        }
        order.after[s] = placed;
    }
    return order;
}

}  // namespace tapevm::gpu::detail
