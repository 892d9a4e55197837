// Tape optimisation passes. None changes any result (values, derivatives, guards; NaN and
// signed zeros included), and running them twice changes nothing.
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
