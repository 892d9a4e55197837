// Index-set propagation over a tape: the inputs each slot depends on (tapevm/sparse.hpp's
// Jacobian and Hessian patterns).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "tapevm/tape.hpp"

namespace tapevm::detail {

/// Sorted, unique input indices.
using IndexSet = std::vector<std::uint32_t>;

/// Operand k (< arity) of `ins`.
inline std::uint32_t operand(const Instruction& ins, std::uint32_t k) {
    return k == 0 ? ins.a : k == 1 ? ins.b : ins.c;
}

/// False when the partial by operand k of `ins` is identically zero (OpInfo::zero_partials).
inline bool contributes(const Instruction& ins, std::uint32_t k) {
    return (op_infos[static_cast<std::size_t>(ins.op)].zero_partials >> k & 1u) == 0;
}

/// The inputs each slot depends on through operands that contribute, in one pass; each
/// slot's set is freed after its last reader. `visit(i, sets)` (when given) runs for every
/// instruction with operands before its own set is made, while its operands' sets are
/// intact. Returns the outputs' sets, in output order.
std::vector<IndexSet> propagate_index_sets(
    const Tape& tape, const std::function<void(std::size_t, const std::vector<IndexSet>&)>& visit = {});

}  // namespace tapevm::detail
