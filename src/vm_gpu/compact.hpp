// The compact program of the forward and reverse kernels (shaders/compact.glsl): the tape with
// its slots mapped to reused storage ("homes"), so that a point's work area holds only what is
// live instead of every slot, and the reverse sweep visits only the instructions that carry
// derivatives, writing each adjoint first instead of zeroing and accumulating.
//
// Values: a value lives from its instruction to its last use. In the reverse program a value
// the partials of an active instruction read (OpInfo::partial_reads), an output and a guarded
// value are kept to the end; the others' homes are reused once their last user has run.
// Adjoints: input i's adjoint lives at home i from start to finish (zeroed first, results are
// read there); an output's adjoint is allocated at seeding; any other adjoint is allocated at
// its first contribution (written, not added: the entry's first bit) and freed after its own
// instruction has run backwards. An instruction is active when it depends on an input, some
// output depends on it, and its partials are not all zero; contributions to operands that
// depend on no input (constants, parameters) are skipped.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "tapevm/tape.hpp"

namespace tapevm::gpu::detail {

struct CompactProgram {
    /// Binding 0's uvec4s: forward entries (2 each: {op word, a, b, c} with value homes or, for
    /// leaves, the tape's a, b, c; {value home, Powi's exponent, 0, 0}), from reverse_begin the
    /// reverse entries in the order they run (3 each: {op word, a, b, c} value homes;
    /// {result's value home, exponent, adjoint home, flags: TV_COMPACT_FIRST << k when target k is
    /// written first, TV_COMPACT_SKIP << k when it is skipped,
    /// and OpInfo::partial_reads << TV_COMPACT_READS_SHIFT: the values its partials read}; {target adjoint
    /// homes a, b, c, 0}), from table_begin one {value home, adjoint home, 0, 0} per output and one {value
    /// home, expected, 0, 0} per guard.
    std::vector<std::array<std::uint32_t, 4>> words;
    std::uint32_t forward_count = 0;
    std::uint32_t reverse_count = 0;
    std::uint32_t reverse_begin = 0;
    std::uint32_t table_begin = 0;
    /// Homes per point: values, and adjoints per seed (0 without reverse).
    std::uint32_t value_count = 0;
    std::uint32_t adjoint_count = 0;
};

/// The compact program of `tape`, with the reverse part when `reverse`.
CompactProgram compact_program(const Tape& tape, bool reverse);

}  // namespace tapevm::gpu::detail
