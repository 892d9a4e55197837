// Where a compiled reverse kernel (codegen.cpp) places each reverse statement among the forward
// statements, and in which order each adjoint sums its contributions.
//
// The reference VM runs the forward sweep, then the reverse sweep from the last slot down.
// Straight-line code in that order keeps every value the partials read alive from the forward
// to the reverse sweep: trig16's gradient held about 7 values per input across the whole kernel
// (152 registers on an H100). Instead a reverse statement is placed as early as it can run:
//   - after the forward statements of the values its partials read (OpInfo::partial_reads, or
//     the variable holding a sibling's value), so a value the reverse sweep needs dies soon;
//   - after the reverse statements of every consumer that contributes to its adjoint, so the
//     adjoint is complete;
//   - a statement whose partials read no value (Add, Sub, Neg: constant partials) waits until
//     the first of its operands' reverse statements, so that a chain of sums does not hold its
//     adjoints across the whole forward sweep.
// Contributions to one adjoint may then be computed out of the reference order. The kernel keeps
// the reference VM's sum order all the same (bit-identical results): each contribution has its
// position in its adjoint's sum, and one computed early waits in a variable until those before
// it have been added.
#pragma once

#include <cstdint>
#include <vector>

#include "tapevm/tape.hpp"

namespace tapevm::gpu::detail {

struct ReverseOrder {
    /// A statement placed before every forward statement.
    static constexpr std::int64_t before_forward = -1;
    /// Per slot: whether it has a reverse statement (partials, depends on an input, some seed
    /// reaches it).
    std::vector<bool> active;
    /// Per active slot: the forward slot after whose statement its reverse statement comes
    /// (before_forward: before the first). Statements placed after the same slot run in
    /// descending slot order.
    std::vector<std::int64_t> after;
    /// [k][slot]: seed k's adjoint of slot receives a contribution (a seed or a consumer's).
    std::vector<std::vector<bool>> reached;
    /// [k][3 * slot + i]: the position of slot's contribution through operand i in the sum of
    /// seed k's adjoint of that operand (seeds first, in output order; then consumers in
    /// descending slot order, operands in order: the reference VM's order).
    std::vector<std::vector<std::uint32_t>> position;
    /// [k][slot]: the number of contributions to seed k's adjoint of slot.
    std::vector<std::vector<std::uint32_t>> terms;
};

/// The order for `tape`'s reverse kernel with `seeds` seeds (all outputs seeded in each when
/// `seeds_from_buffer`, else output k in seed k). `depends[s]`: slot s depends on an input.
/// `reads[s]`: the last forward slot whose statement declares a variable that s's partials read
/// (before_forward when they read none).
ReverseOrder reverse_order(const Tape& tape, const std::vector<bool>& depends, std::uint32_t seeds,
                           bool seeds_from_buffer, const std::vector<std::int64_t>& reads);

}  // namespace tapevm::gpu::detail
