// The tape: a recorded function as SSA bytecode.
//
// Slot i holds the result of instruction i. The first `input_count()` instructions are
// Input 0..n-1, the next `param_count()` are Param 0..p-1; every other operand names an
// earlier slot. Constants live in a pool (Const's operand a is a pool index), outputs are a
// list of slots, and guards record the outcome of each comparison that steered a C++ branch
// while recording, so replay can report the points that would branch differently.
//
// Start reading at Tape; record() (var.hpp) builds tapes, the reference VM (reference.hpp)
// evaluates them, tape_file.hpp saves and loads them.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "tapevm/op.hpp"

namespace tapevm {

/// One instruction. 16 bytes, trivially copyable, uploaded to the GPU as it is (a uvec4).
/// Operand fields by op:
///   Input, Param  a = input / parameter index
///   Const         a = constant-pool index
///   Powi          a = operand slot, b = the int32 exponent's bit pattern
///   other ops     a, b, c = operand slots in order
/// Fields an op does not use are 0.
struct Instruction {
    Op op = Op::Const;
    std::uint32_t a = 0;
    std::uint32_t b = 0;
    std::uint32_t c = 0;

    friend bool operator==(const Instruction&, const Instruction&) = default;
};
static_assert(sizeof(Instruction) == 16, "Instruction is uploaded to the GPU as a uvec4");

/// A branch taken while recording: the point takes the same branch when
/// (value of `slot` != 0) == (expected != 0). `expected` is 0 or 1.
struct Guard {
    std::uint32_t slot = 0;
    std::uint32_t expected = 0;

    friend bool operator==(const Guard&, const Guard&) = default;
};
static_assert(sizeof(Guard) == 8);

/// The raw contents of a tape, for building one by hand (tests, the file loader).
struct TapeParts {
    std::uint32_t inputs = 0;
    std::uint32_t params = 0;
    std::vector<Instruction> instructions;
    std::vector<double> constants;
    std::vector<std::uint32_t> outputs;
    std::vector<Guard> guards;
};

/// Where a tape breaks an invariant (see validate()).
struct TapeDefect {
    enum class Section { header, instruction, constant, output, guard };
    Section section = Section::header;
    std::uint32_t index = 0;  // record index within the section
    std::string field;        // "op", "a", "b", "c", "slot", "expected", "inputs", ...
    std::string what;         // what is wrong, in words
};

/// The first invariant `parts` breaks, or nothing when it is a valid tape.
/// Checks: counts fit (instructions >= inputs + params), the Input/Param prefix, known ops,
/// operands earlier than their slot, unused fields zero, Const indices in the pool, outputs
/// and guard slots in range, guard expectations 0 or 1.
std::optional<TapeDefect> find_defect(const TapeParts& parts);

/// Throws InvalidTape naming the defect, if any.
void validate(const TapeParts& parts);

/// A valid tape. Immutable apart from optimize(); cheap to move, copies its vectors. Const
/// member functions may be called from several threads at once; optimize(), assignment and
/// moving need the tape to themselves.
class Tape {
public:
    /// The empty tape: no inputs, no outputs.
    Tape() = default;

    /// Validates `parts` (throws InvalidTape) and takes them.
    explicit Tape(TapeParts parts);

    std::uint32_t input_count() const { return parts_.inputs; }
    std::uint32_t param_count() const { return parts_.params; }
    std::uint32_t output_count() const { return static_cast<std::uint32_t>(parts_.outputs.size()); }
    std::uint32_t slot_count() const { return static_cast<std::uint32_t>(parts_.instructions.size()); }
    std::uint32_t instruction_count() const { return slot_count(); }
    std::uint32_t constant_count() const { return static_cast<std::uint32_t>(parts_.constants.size()); }
    std::uint32_t guard_count() const { return static_cast<std::uint32_t>(parts_.guards.size()); }

    std::span<const Instruction> instructions() const { return parts_.instructions; }
    std::span<const double> constants() const { return parts_.constants; }
    std::span<const std::uint32_t> outputs() const { return parts_.outputs; }
    std::span<const Guard> guards() const { return parts_.guards; }
    const TapeParts& parts() const { return parts_; }

    /// Constant folding, common-subexpression elimination and dead-code elimination
    /// (optimize.hpp, which states exactly what they preserve: values and guards bit for bit,
    /// derivatives up to the order of summation). Running it twice changes nothing.
    void optimize();

    /// A human-readable listing: counts, one instruction per line, outputs and guards.
    std::string dump() const;

    friend bool operator==(const Tape& x, const Tape& y);

private:
    TapeParts parts_;
};

/// The int32 exponent of a Powi instruction.
inline std::int32_t powi_exponent(const Instruction& instruction) {
    return static_cast<std::int32_t>(instruction.b);
}

}  // namespace tapevm
