// The CPU VM: evaluates a tape for a batch of points with SIMD over lanes and threads over
// blocks of lanes, with the operations and semantics of the reference VM (evaluator.hpp).
//
//   tapevm::cpu::Vm vm(tape, {.threads = 2});
//   vm.gradient(batch, std::span<double>(gradients));
//
// The instruction set (SSE2, AVX2 + FMA, AVX-512) is chosen when the Vm is built: the widest
// the machine and the build support, a narrower one named by Options::isa or, when that is
// automatic, by the environment variable TAPEVM_CPU_ISA (sse2|avx2|avx512).
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tapevm/batch.hpp"
#include "tapevm/evaluator.hpp"
#include "tapevm/tape.hpp"

namespace tapevm::cpu {

/// An instruction set the CPU VM has kernels for.
enum class Isa { automatic, sse2, avx2, avx512 };

/// "automatic", "sse2", "avx2" or "avx512".
std::string_view isa_name(Isa isa);

/// The instruction sets this machine and this build support, narrowest first (sse2 is
/// always there on x86-64).
std::vector<Isa> supported_isas();

struct Options {
    /// Worker threads, the calling thread included; 0: all hardware threads.
    unsigned threads = 0;
    /// automatic: TAPEVM_CPU_ISA when set, else the widest supported. An unsupported one
    /// (here or in the variable) throws tapevm::Unsupported naming the supported ones.
    Isa isa = Isa::automatic;
    /// Lanes (points) per block; 0: TAPEVM_CPU_BLOCK_LANES when set (1..65536, else
    /// tapevm::Error), else sized so a block's values and adjoints stay within about half
    /// of the L2 cache and a reverse sweep's adjoints within 1.5 x the L1 data cache. Rounded up
    /// to a multiple of the SIMD width.
    std::size_t block_lanes = 0;
};

namespace detail {
struct Engine;
}
/// One tensor of an elementwise call (src/vm_cpu/tensor_bindings.hpp: internal, for the nn
/// layer; not installed).
struct TensorBinding;

/// Evaluates one tape over batches of points (layouts in batch.hpp, operations in
/// evaluator.hpp). Holds its own copy of the tape and a pool of threads-1 workers.
///
/// Threads (docs/THREADS.md): every evaluation (the const member functions, tensor calls
/// included) may run from several threads at once. Each call has its own scratch and block
/// counter and runs on its caller plus whichever pool workers are idle: concurrent callers share
/// the workers but never wait for each other's calls, and a call gives the same bits whichever
/// threads ran it. Construction, moving and destruction need the Vm to themselves; separate Vms
/// share nothing.
class Vm final : public EvaluatorBase<Vm> {
public:
    /// Throws Unsupported for an instruction set this machine or build lacks.
    explicit Vm(Tape tape, Options options = {});
    ~Vm() override;
    Vm(Vm&&) noexcept;
    Vm& operator=(Vm&&) noexcept;

    const Tape& tape() const override;
    /// "cpu (avx512, 2 threads)".
    std::string name() const override;

    /// The instruction set in use (never automatic).
    Isa isa() const;
    /// Threads a call uses, the caller included.
    unsigned threads() const;
    /// Lanes per block for values of sizeof_real bytes (4 or 8), plain evaluation (forward).
    std::size_t block_lanes(std::size_t sizeof_real) const;

    /// Tensor bindings (tensor_bindings.hpp), in float: for each element e < elements, output j
    /// (outputs[j]) = tape output j of the inputs at e, with the shared `params`. Throws
    /// ShapeError for binding counts other than the tape's inputs and outputs or params other
    /// than param_count(), Error for an output that broadcasts.
    Report forward_tensors(std::size_t elements, std::span<const TensorBinding> inputs,
                           std::span<const TensorBinding> outputs, std::span<const float> params = {}) const;
    /// The vjp over tensor bindings: cotangents (one full binding per output) -> results (one
    /// full binding per input; data null: not computed; accumulate: added to the tensor).
    Report vjp_tensors(std::size_t elements, std::span<const TensorBinding> inputs,
                       std::span<const TensorBinding> cotangents, std::span<const TensorBinding> results,
                       std::span<const float> params = {}) const;

private:
    friend class EvaluatorBase<Vm>;

    template <class Real> Report forward_impl(const Batch<Real>& batch, std::span<Real> outputs) const;
    template <class Real> Report gradient_impl(const Batch<Real>& batch, std::span<Real> gradients) const;
    template <class Real>
    Report jacobian_impl(const Batch<Real>& batch, std::span<Real> jacobians, JacobianMode mode) const;
    template <class Real>
    Report jvp_impl(const Batch<Real>& batch, std::span<const Real> tangents, std::span<Real> results) const;
    template <class Real>
    Report vjp_impl(const Batch<Real>& batch, std::span<const Real> cotangents,
                    std::span<Real> results) const;
    template <class Real>
    Report hvp_impl(const Batch<Real>& batch, std::span<const Real> cotangents,
                    std::span<const Real> directions, std::span<Real> results) const;
    /// jvps: on few points (fewer than a few vectors' worth of points x directions) each point
    /// once, its directions in the SIMD lanes (the values computed once, as ADOL-C's
    /// fov_forward does: a long tape of one point, as sparse_jacobian gives, streams once);
    /// otherwise jvp over points x directions. The same bits either way.
    template <class Real>
    Report jvps_impl(const Batch<Real>& batch, std::span<const Real> directions, std::size_t count,
                     std::span<Real> results) const;
    /// ReducedTape's shared-input hooks (Evaluator::evaluate_forward_shared, evaluate_vjp_shared):
    /// the shared inputs filled into every block's lanes, their adjoints summed per block (the
    /// blocks' lanes a power of two: the groups), no row per point of them.
    template <class Real>
    Report forward_shared_impl(const Batch<Real>& batch, std::size_t from, std::span<const Real> shared,
                               std::span<Real> outputs) const;
    template <class Real>
    Report vjp_shared_impl(const Batch<Real>& batch, std::size_t from, std::span<const Real> shared,
                           std::span<const Real> cotangents, std::span<Real> point_results,
                           SharedSums& sums) const;

    std::unique_ptr<detail::Engine> engine_;
};

}  // namespace tapevm::cpu
