// Hessian sparsity patterns (tapevm/sparse_hessian.hpp): the operand pairs of every
// instruction that reaches an output, over the index sets of detail/index_sets.hpp.
#include <algorithm>
#include <vector>

#include "detail/index_sets.hpp"
#include "tapevm/sparse_hessian.hpp"

namespace tapevm {

namespace {

using detail::contributes;
using detail::IndexSet;
using detail::operand;

// The slots whose value reaches an output through operands that contribute: only their
// second derivatives are weighted by a structurally nonzero adjoint.
std::vector<bool> reaching_slots(const Tape& tape) {
    const auto instructions = tape.instructions();
    std::vector<bool> reaches(instructions.size(), false);
    for (const std::uint32_t slot : tape.outputs()) reaches[slot] = true;
    for (std::size_t i = instructions.size(); i-- > 0;) {
        if (!reaches[i]) continue;
        const Instruction& ins = instructions[i];
        const std::uint32_t arity = op_infos[static_cast<std::size_t>(ins.op)].arity;
        for (std::uint32_t k = 0; k < arity; ++k)
            if (contributes(ins, k)) reaches[operand(ins, k)] = true;
    }
    return reaches;
}

// Sorts and deduplicates `row` when it has grown to several times its last deduplicated size.
void compact(IndexSet& row, std::size_t& unique_size, bool force) {
    if (!force && row.size() < 4 * unique_size + 64) return;
    std::sort(row.begin(), row.end());
    row.erase(std::unique(row.begin(), row.end()), row.end());
    unique_size = row.size();
}

}  // namespace

SparsityPattern hessian_sparsity(const Tape& tape) {
    const std::size_t n = tape.input_count();
    const std::vector<bool> reaches = reaching_slots(tape);
    std::vector<IndexSet> rows(n);
    std::vector<std::size_t> unique_sizes(n, 0);
    const auto add_pairs = [&](const IndexSet& left, const IndexSet& right) {
        for (const std::uint32_t i : left) {
            rows[i].insert(rows[i].end(), right.begin(), right.end());
            compact(rows[i], unique_sizes[i], false);
        }
    };
    const auto instructions = tape.instructions();
    detail::propagate_index_sets(tape, [&](std::size_t i, const std::vector<IndexSet>& sets) {
        if (!reaches[i]) return;
        const Instruction& ins = instructions[i];
        const OpInfo& info = op_infos[static_cast<std::size_t>(ins.op)];
        // Operands read by the partials (all of them when a partial reads the result).
        const std::uint32_t reads = (info.partial_reads & 8u) != 0 ? 7u : info.partial_reads & 7u;
        for (std::uint32_t k = 0; k < info.arity; ++k) {
            if (!contributes(ins, k)) continue;
            for (std::uint32_t l = 0; l < info.arity; ++l) {
                if ((reads >> l & 1u) == 0 || !contributes(ins, l)) continue;
                const IndexSet& left = sets[operand(ins, k)];
                const IndexSet& right = sets[operand(ins, l)];
                add_pairs(left, right);
                add_pairs(right, left);
            }
        }
    });
    SparsityPattern pattern;
    pattern.rows = n;
    pattern.cols = n;
    pattern.row_starts.reserve(n + 1);
    for (std::size_t i = 0; i < n; ++i) {
        compact(rows[i], unique_sizes[i], true);
        pattern.columns.insert(pattern.columns.end(), rows[i].begin(), rows[i].end());
        IndexSet().swap(rows[i]);
        pattern.row_starts.push_back(pattern.columns.size());
    }
    return pattern;
}

}  // namespace tapevm
