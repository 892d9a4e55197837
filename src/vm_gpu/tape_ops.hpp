// Small questions about tape instructions that the GPU side's program builders share
// (compact.cpp, reverse_order.cpp, codegen.cpp).
#pragma once

#include <cstdint>

#include "tapevm/tape.hpp"

namespace tapevm::gpu::detail {

/// OpInfo::partial_reads: bit k when the partials read operand k, this bit when they read the result.
inline constexpr std::uint32_t partial_reads_result = 8;

/// Slot operand k of `ins` (k < arity(ins.op)).
inline std::uint32_t operand(const Instruction& ins, std::uint32_t k) {
    return k == 0 ? ins.a : (k == 1 ? ins.b : ins.c);
}

/// Whether the op has partials the reverse sweep applies (not a leaf, a step or a comparison).
inline bool has_partials(Op op) { return !has_flag(op, op_flag::leaf | op_flag::step | op_flag::comparison); }

}  // namespace tapevm::gpu::detail
