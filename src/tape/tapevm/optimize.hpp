// Tape optimisation passes. Running them twice changes nothing. What they preserve:
//   - values, guard outcomes and forward-mode derivatives, bit for bit in double, NaN and
//     signed zeros included;
//   - reverse-mode derivatives up to the order of floating-point summation: a merged
//     subexpression sums its adjoints before the chain rule, where the unoptimised tape applies
//     the chain rule to each copy (sqrt(x) - sqrt(x) at x = 0: NaN unoptimised, 0 optimised);
//   - constants fold in double (as they do while recording), so a float evaluation rounds the
//     folded double result once instead of rounding each folded op (x + (c*c)/c with
//     c = 1e30 in float: inf unoptimised, 1e30 optimised).
#pragma once

#include "tapevm/tape.hpp"

namespace tapevm {

/// Constant folding (with the reference VM's own formulas), the identities exact for every
/// input (x*1, x/1, x+(-0), x-(+0), select on a constant), common-subexpression elimination
/// (commutative operands ordered), duplicate constants and guards merged, guards that always
/// hold dropped, then dead-code elimination and constant-pool compaction. Inputs and
/// parameters keep their slots.
Tape optimized(const Tape& tape);

}  // namespace tapevm
