// `tapevm bench --sparse N`: the sparse Jacobian of the 1-D Bratu residual on N unknowns
// (examples::bratu_tape) on the CPU VM through tapevm::sparse_jacobian, against ADOL-C's vector
// forward mode with the same seed where tapevm-bench has ADOL-C (issue 22 item 3's target:
// >= 5x faster, sweeps = colours).
#pragma once

#include <cstddef>
#include <ostream>
#include <span>
#include <vector>

#include "tapevm/sparse.hpp"

namespace tapevm::bench {

/// ADOL-C's side: the Bratu residual taped with adoubles at `x` (lambda 1), then its vector
/// forward mode (fov_forward) with `plan`'s compressed seed, `repeats` times (`seconds`, one
/// per run); `values`: the Jacobian's entries in `plan`'s CSR order. (Debian's ADOL-C is built
/// without ColPack: its own sparse_jac driver refuses to run.) Returns false where
/// tapevm-bench was built without ADOL-C.
bool adolc_sparse_jacobian(std::span<const double> x, const SparseJacobianPlan& plan, unsigned repeats,
                           std::vector<double>& seconds, std::vector<double>& values);

/// Runs the comparison and prints it: unknowns, colours, nonzeros, tapevm's set-up times
/// (record, pattern, colouring), the median Jacobian time of each and their ratio, and the
/// largest difference between the two Jacobians. Returns 1 when they differ beyond 1e-12
/// relative.
int run_sparse_bench(std::size_t unknowns, unsigned threads, unsigned repeats, std::ostream& out);

}  // namespace tapevm::bench
