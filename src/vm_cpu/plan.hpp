// What the CPU VM's kernels need to know about a tape beyond its instructions, worked out
// once when the Vm is built (plan.cpp) so the sweeps over a block do no analysis:
//   - which slots are active (depend on an input through ops with non-zero partials): only
//     they carry tangents and adjoints; every other operand's contribution is exactly 0;
//   - the tangent steps (forward mode) and the reverse steps (reverse mode) restricted to
//     active slots, each with the mask of its active operands; the reverse steps run in
//     reverse tape order except that the step of a slot whose adjoint one step alone writes
//     follows that step where every adjoint still receives its contributions in order;
//   - for the reverse sweep, which adjoint writes are the first to their slot (stored, so
//     the adjoint buffer needs no clearing) and which slots' adjoints are ever written;
//   - the rows of a block's scratch that hold each slot's value and adjoint: a row is
//     reused once its slot is dead, most recently freed first, so a sweep's short-lived
//     values and adjoints stay in the L1 cache instead of each taking a fresh row.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "tapevm/tape.hpp"

namespace tapevm::cpu::detail {

/// One instruction of a derivative sweep: `slot` (its instruction is tape.instructions()[slot]),
/// bit k of `active` set when operand k carries a derivative, bit k of `first` set when the
/// reverse sweep writes operand k's adjoint for the first time (store instead of add).
struct Step {
    std::uint32_t slot = 0;
    std::uint8_t active = 0;
    std::uint8_t first = 0;
    /// Reverse steps: bit k set when operand k's adjoint is first written here with partial
    /// identically 1 (Formula<op>::unit_partials: Add, Sub's a, ...), the operand is not an
    /// input, and its adjoint lives in this slot's adjoint storage (adjoint_home) as a copy
    /// of the seed instead of being copied there: several operands of a step may, when no
    /// write to that storage comes while two of its adjoints are live (plan.cpp). Used by the
    /// decoded programs (program_sweeps.hpp).
    std::uint8_t alias = 0;
};

struct Plan {
    explicit Plan(const Tape& tape);

    std::uint32_t inputs = 0;
    std::uint32_t params = 0;
    std::uint32_t outputs = 0;
    std::uint32_t slots = 0;
    /// Slots of Const instructions and their values.
    std::vector<std::uint32_t> const_slots;
    std::vector<double> const_values;
    /// Non-leaf slots in tape order (the value sweep).
    std::vector<std::uint32_t> compute_slots;
    /// 1 where the slot depends on an input through non-zero partials.
    std::vector<std::uint8_t> active;
    /// Active non-leaf slots in tape order (forward mode).
    std::vector<Step> tangent_steps;
    /// Active non-leaf slots whose adjoint is ever written (reverse mode): last slot first,
    /// except that the step of a slot whose adjoint one step alone writes is moved up to
    /// right after that step where it passes no step writing an adjoint it writes (so each
    /// adjoint gets the same contributions in the same order, and the two steps can run
    /// fused). Every step still runs after all steps that write its adjoint.
    std::vector<Step> reverse_steps;
    /// Per output: 1 when seeding it is the first write to its slot's adjoint.
    std::vector<std::uint8_t> seed_first;
    /// Per slot: the slot whose adjoint storage holds its adjoint (itself unless aliased).
    std::vector<std::uint32_t> adjoint_home;
    /// Per input: 1 when its adjoint is ever written (else the reverse result is 0).
    std::vector<std::uint8_t> input_reached;

    /// Per slot: its row in the value rows of a block (forward, tangent and reverse mode;
    /// hvp keeps a row per slot). Inputs and params keep rows 0 .. inputs + params - 1
    /// (gathered there), constants have rows of their own (filled once); a computed value
    /// shares its row with values whose last reader ran before it was computed, unless
    /// something reads it after the value sweep: an output, a guard, or the partials of a
    /// derivative step (Formula<op>::partial_reads), which keep their rows to the end.
    std::vector<std::uint32_t> value_row;
    std::uint32_t value_rows = 0;
    /// Per computed slot: the position in compute_slots of the value sweep's last read of
    /// its value, or compute_slots.size() when something reads it after the sweep.
    std::vector<std::uint32_t> value_last_read;
    /// Per slot: the row of its adjoint storage (adjoint_home's) among the adjoint rows of
    /// the reverse sweep, for slots whose adjoint is written; rows are reused the same way
    /// (input adjoints keep theirs to the end: they are the results).
    std::vector<std::uint32_t> adjoint_row;
    std::uint32_t adjoint_rows = 0;
    /// Per slot: 1 when its adjoint is written by one reverse step only (its one consumer),
    /// and is not an output's, shared (adjoint_home) or read by anything but its own step:
    /// that consumer's step can hand it to the slot's step in a register.
    std::vector<std::uint8_t> adjoint_private;
};

/// Rows for intervals of use: `first[i]`..`last[i]` (inclusive, in some sweep's order) of
/// item i; items with first == ~0u get no row. At each position the rows of the items that
/// start there are taken before those of the items that end there are given back, so an
/// item never shares a row with one it is used together with; the most recently given back
/// row is taken first. Returns the row count; rows[i] is item i's row + `base`.
std::uint32_t assign_rows(const std::vector<std::uint32_t>& first, const std::vector<std::uint32_t>& last,
                          std::uint32_t positions, std::uint32_t base, std::vector<std::uint32_t>& rows);

}  // namespace tapevm::cpu::detail
