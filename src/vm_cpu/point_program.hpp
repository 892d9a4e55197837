// What KernelSet::point_directions runs (Evaluator::jvps on few points, vm.cpp): the tape cut
// by outputs into parts that threads evaluate at once for one point, each part the
// instructions its outputs depend on (part 0 also the guards'), in tape order, with the rows
// of their values and tangents resolved. A row is reused after the last entry of its part
// that reads it, so a tape of any length runs in a few cache-resident rows. An instruction
// several parts need is evaluated in each, from the same operands: the same bits.
#pragma once

#include <cstdint>
#include <vector>

#include "plan.hpp"

namespace tapevm::cpu::detail {

struct PointEntry {
    std::uint32_t slot = 0;             // the instruction: tape.instructions()[slot]
    std::uint32_t row = 0;              // the row of its value and tangents
    std::uint32_t operand_row[3] = {};  // its operands' rows (as many as it has operands)
    std::uint8_t step = 0;              // 1: a tangent step (Plan::tangent_steps)
    std::uint8_t active = 0;            // the step's active operands (Step::active)
};

struct PointPart {
    std::vector<PointEntry> entries;
    std::uint32_t rows = 0;
    /// The outputs this part delivers (indices into tape.outputs()), their rows, and whether
    /// they are active (Plan::active; an inactive one's tangents are 0).
    std::vector<std::uint32_t> outputs;
    std::vector<std::uint32_t> output_rows;
    std::vector<std::uint8_t> output_active;
    /// The guards it checks (part 0: every guard): their rows and expected truth.
    std::vector<std::uint32_t> guard_rows;
    std::vector<std::uint8_t> guard_expected;
};

/// The tape in `parts` parts (at least 1, at most one per output) of consecutive outputs,
/// about as many in each.
std::vector<PointPart> point_parts(const Tape& tape, const Plan& plan, unsigned parts);

}  // namespace tapevm::cpu::detail
