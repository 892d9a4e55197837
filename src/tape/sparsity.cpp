// Jacobian sparsity patterns by index-set propagation over the tape (tapevm/sparse.hpp).
#include <algorithm>
#include <iterator>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "detail/index_sets.hpp"
#include "tapevm/error.hpp"
#include "tapevm/sparse.hpp"

namespace tapevm {

using detail::contributes;
using detail::IndexSet;
using detail::operand;

bool SparsityPattern::contains(std::size_t row, std::size_t col) const {
    if (row >= rows) return false;
    const auto first = columns.begin() + static_cast<std::ptrdiff_t>(row_starts[row]);
    const auto last = columns.begin() + static_cast<std::ptrdiff_t>(row_starts[row + 1]);
    return std::binary_search(first, last, static_cast<std::uint32_t>(col));
}

namespace detail {

std::vector<IndexSet> propagate_index_sets(
    const Tape& tape, const std::function<void(std::size_t, const std::vector<IndexSet>&)>& visit) {
    const auto instructions = tape.instructions();
    const std::size_t slots = instructions.size();
    // The last instruction that reads each slot (outputs read at the end), so a slot's set
    // is freed once nothing needs it.
    constexpr std::size_t never = std::numeric_limits<std::size_t>::max();
    std::vector<std::size_t> last_use(slots);
    for (std::size_t i = 0; i < slots; ++i) last_use[i] = i;  // read by nothing: freed at once
    for (std::size_t i = 0; i < slots; ++i) {
        const Instruction& ins = instructions[i];
        const std::uint32_t arity = op_infos[static_cast<std::size_t>(ins.op)].arity;
        for (std::uint32_t k = 0; k < arity; ++k) last_use[operand(ins, k)] = i;
    }
    for (const std::uint32_t slot : tape.outputs()) last_use[slot] = never;

    std::vector<IndexSet> sets(slots);
    IndexSet merged;
    for (std::size_t i = 0; i < slots; ++i) {
        const Instruction& ins = instructions[i];
        const OpInfo& info = op_infos[static_cast<std::size_t>(ins.op)];
        if (visit && info.arity > 0) visit(i, sets);
        if (ins.op == Op::Input) {
            sets[i] = {ins.a};
        } else {
            for (std::uint32_t k = 0; k < info.arity; ++k) {
                if (!contributes(ins, k)) continue;
                const std::uint32_t from = operand(ins, k);
                if (sets[i].empty()) {
                    // The first set taken as it is: moved when this is its last reader (and no
                    // later operand of this instruction names it).
                    bool read_again = false;
                    for (std::uint32_t later = k + 1; later < info.arity; ++later)
                        read_again = read_again || operand(ins, later) == from;
                    if (last_use[from] == i && !read_again) {
                        sets[i] = std::move(sets[from]);
                    } else {
                        sets[i] = sets[from];
                    }
                } else {
                    merged.clear();
                    std::set_union(sets[i].begin(), sets[i].end(), sets[from].begin(), sets[from].end(),
                                   std::back_inserter(merged));
                    sets[i].swap(merged);
                }
            }
        }
        for (std::uint32_t k = 0; k < info.arity; ++k) {
            const std::uint32_t from = operand(ins, k);
            if (last_use[from] == i) IndexSet().swap(sets[from]);
        }
        if (last_use[i] == i) IndexSet().swap(sets[i]);
    }

    std::vector<IndexSet> outputs;
    outputs.reserve(tape.output_count());
    for (const std::uint32_t slot : tape.outputs()) outputs.push_back(sets[slot]);
    return outputs;
}

}  // namespace detail

SparsityPattern jacobian_sparsity(const Tape& tape) {
    const std::vector<IndexSet> rows = detail::propagate_index_sets(tape);
    SparsityPattern pattern;
    pattern.rows = tape.output_count();
    pattern.cols = tape.input_count();
    pattern.row_starts.reserve(pattern.rows + 1);
    for (const IndexSet& row : rows) {
        pattern.columns.insert(pattern.columns.end(), row.begin(), row.end());
        pattern.row_starts.push_back(pattern.columns.size());
    }
    return pattern;
}

bool is_distance2_colouring(const SparsityPattern& pattern, const ColumnColouring& colouring) {
    if (colouring.colour.size() != pattern.cols) return false;
    for (const std::uint32_t c : colouring.colour)
        if (c >= colouring.colours) return false;
    std::vector<std::size_t> seen_in_row(colouring.colours, std::numeric_limits<std::size_t>::max());
    for (std::size_t row = 0; row < pattern.rows; ++row) {
        for (std::size_t k = pattern.row_starts[row]; k < pattern.row_starts[row + 1]; ++k) {
            const std::uint32_t c = colouring.colour[pattern.columns[k]];
            if (seen_in_row[c] == row) return false;
            seen_in_row[c] = row;
        }
    }
    return true;
}

SparseJacobianPlan plan_sparse_jacobian(const Tape& tape) {
    SparseJacobianPlan plan;
    plan.pattern = jacobian_sparsity(tape);
    plan.colouring = colour_columns(plan.pattern);
    return plan;
}

}  // namespace tapevm
