// The value and adjoint sweeps of a block, decoded once per participant and call into a flat
// program of entries: each entry holds the function for its op (specialised on which operands
// carry adjoints) and the addresses of everything it reads and writes in the participant's
// scratch, so running a sweep is one indirect call per instruction with nothing left to
// decode, index or test. Type-agnostic: vm.cpp allocates programs, the kernels fill and run
// them.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tapevm::cpu::detail {

template <class Real> struct Entry {
    /// Evaluates the entry over `lanes` lanes (a multiple of the SIMD width) and, for an
    /// adjoint entry, `rows` adjoint rows (row r of a slot is r * lanes further on).
    using Run = void (*)(const Entry& entry, std::size_t lanes, std::size_t rows);
    Run run = nullptr;
    /// The operands' values and the slot's value.
    const Real* operand[3] = {};
    Real* result = nullptr;
    /// Adjoint entries: the slot's adjoint (the seed), and per active operand the adjoint
    /// read (a row of zeros where this is the first write to it) and the adjoint written.
    const Real* seed = nullptr;
    const Real* adjoint_in[3] = {};
    Real* adjoint_out[3] = {};
    /// Powi's exponent.
    std::int32_t immediate = 0;
    /// Value entries of two instructions, the second reading the first's result (kept in a
    /// register; stored at `result` only when something else reads it): the second's
    /// operands (null where it reads the first's result) and result.
    const Real* second_operand[3] = {};
    Real* second_result = nullptr;
    /// Adjoint entries of two reverse steps, the second for the first's operand whose
    /// adjoint only the first writes (kept in a register): the second's operands' values,
    /// its result's value (second_result) and its operands' adjoints read and written.
    const Real* second_adjoint_in[3] = {};
    Real* second_adjoint_out[3] = {};
};

/// A participant's programs: the value sweep and the adjoint sweep (empty unless reverse).
template <class Real> struct Program {
    Entry<Real>* values = nullptr;
    std::size_t value_count = 0;
    Entry<Real>* adjoints = nullptr;
    std::size_t adjoint_count = 0;
};

}  // namespace tapevm::cpu::detail
