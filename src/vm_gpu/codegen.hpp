// The tape compiler's code generator: a tape and what to compute become one GLSL compute
// kernel of straight-line code, values and derivatives in local variables (registers) instead
// of the interpreter's work buffer, forward and reverse sweeps fused in one pass.
//
// A generated kernel replaces one interpreter kernel exactly: same bindings (set 0 of
// shaders/interpreter.glsl; the program, constants and work buffers are unused, the guard
// flags are written only when the tape has guards), the same push constants (only `points`
// and `params_per_point` are read: the tape's counts are compiled in), the same results layout,
// one invocation per point. Inputs and results are staged through shared memory (KernelSpec::staging).
// A unary op whose partial is another op's value at the same operand (Sin: Cos) takes it from
// that op's slot when the tape has it (partial_sibling, generated from the op table). The formulas are
// ops.glsl's tv_value_<op> and tv_partials_<op> (and dual_ops.glsl's for hvp), generated from the op table
// like the interpreter's, and every value and adjoint is computed with the reference VM's operations in its
// order of summation, so compiled kernels and the interpreter agree on every op and edge case. Reverse
// statements are placed among the forward ones as early as they can run (reverse_order.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels.hpp"
#include "tapevm/tape.hpp"

namespace tapevm::gpu::detail {

/// What a compiled kernel computes: the interpreter kernel it replaces and that kernel's
/// run-time choices, fixed at compile time.
struct KernelSpec {
    Kernel kernel = Kernel::forward;  // forward, reverse, tangent or hvp
    bool double_precision = false;
    std::uint32_t directions = 0;    // reverse: seeds K; tangent: directions K
    bool seeds_from_buffer = false;  // seeds (vjp) or directions (jvp) from extra0, else unit vectors
    /// Reverse kernels also write the outputs' values to binding 9 ([points][m]): a loss and
    /// its gradient in one dispatch.
    bool write_values = false;
    /// Invocations per workgroup (workgroup_size(): the runner dispatches that many per group).
    std::uint32_t workgroup = 64;
    /// Inputs and results go through shared memory, so that device memory is read and written
    /// four values at a time with consecutive addresses per workgroup instead of one row per
    /// invocation, where a workgroup's rows fit in 16 KiB (on an H100, f32 at 2^22 points:
    /// rosenbrock16's gradient 0.23 -> 0.06 ns/point, BA's Jacobian 0.67 -> 0.11, trig16's
    /// gradient 0.28 -> 0.21); TAPEVM_GPU_COMPILE_STAGING=0 turns it off for A/B runs.
    bool staging = true;

    friend bool operator==(const KernelSpec&, const KernelSpec&) = default;
};

/// "forward", "gradient" (reverse, 1 unit seed), "jacobian-reverse", "vjp", "jacobian-forward",
/// "jvp", "hvp", with "+values" when the spec writes values too.
std::string spec_name(const KernelSpec& spec, const Tape& tape);

struct GeneratedKernel {
    std::string glsl;
    /// Statements in main(): what the size limit counts (compile time and registers grow with it).
    std::size_t statements = 0;
    /// Math-library functions main() calls (OpInfo::value_calls and partial_calls of what it
    /// evaluates; twice that in duals): each is many instructions once inlined, which a CPU
    /// device's compiler pays for (statement_limit).
    std::size_t library_calls = 0;
};

/// The GLSL of `spec` for `tape`. `spec.kernel` is forward, reverse, tangent or hvp.
GeneratedKernel generate_glsl(const Tape& tape, const KernelSpec& spec);

/// The operands of a kernel body that another generator wraps in its own kernel (src/nn/gpu's
/// elementwise kernels over tensor bindings): GLSL expressions of type REAL, each read once.
struct BodyOperands {
    std::vector<std::string> inputs;  // input i's value
    std::vector<std::string> params;  // parameter j's value
    std::vector<std::string> seeds;   // reverse: output j's cotangent
};

/// Straight-line statements computing a tape's results from BodyOperands, and the results.
struct GeneratedBody {
    std::string code;  // statements, one per line, declaring the variables the results name
    /// forward: the m outputs' values; reverse: the n inputs' adjoints ("REAL(0)" where none).
    std::vector<std::string> results;
    std::size_t statements = 0;
    std::size_t library_calls = 0;
};

/// The body of `spec` (forward, or reverse with one seed read from the operands: directions 1,
/// seeds_from_buffer) for `tape`, with the statements, formulas and order of summation of
/// generate_glsl's kernels. The wrapping source defines REAL and includes "ops.glsl"; guards
/// are not checked. Throws tapevm::Error for another kind of spec or operand counts that do
/// not match the tape.
GeneratedBody generate_body(const Tape& tape, const KernelSpec& spec, const BodyOperands& operands);

}  // namespace tapevm::gpu::detail
