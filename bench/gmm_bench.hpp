// `tapevm-bench bench --gmm D,K,N`: ADBench's GMM objective and its gradient (issue 22 item 1's
// workload, tapevm/gmm.hpp) on the CPU VM through ReducedTape, against the hand-written f64
// objective and gradient and, where tapevm-bench has ADOL-C, ADOL-C's reverse mode on the
// whole objective taped once; every gradient checked against the hand-written one.
#pragma once

#include <cstddef>
#include <ostream>
#include <span>
#include <vector>

#include "tapevm/gmm.hpp"

namespace tapevm::bench {

/// ADOL-C's side: the objective taped with adoubles at theta (x passive), then `repeats` runs
/// of zos_forward (`objective_seconds`) and of gradient (`gradient_seconds`); `value` and
/// `gradient` from the last. Returns false where tapevm-bench was built without ADOL-C.
bool adolc_gmm(const examples::GmmInstance& instance, unsigned repeats,
               std::vector<double>& objective_seconds, std::vector<double>& gradient_seconds, double& value,
               std::vector<double>& gradient);

/// Measures and prints one instance: the gradient / objective time ratio of each (ADBench's
/// figure) and the largest difference from the hand-written gradient. ADOL-C runs only where
/// n K d (d + 1) / 2 is at most 3e7 (its tape holds every point: about 1 GB there). Returns 1
/// when a gradient differs from the hand-written one by more than 1e-9 relative.
int run_gmm_bench(std::size_t d, std::size_t k, std::size_t n, unsigned threads, unsigned repeats,
                  std::ostream& out);

}  // namespace tapevm::bench
