// `tapevm-bench bench --gmm D,K,N`: ADBench's GMM objective and its gradient (issue 22 item 1's
// workload, tapevm/gmm.hpp) on the CPU VM through ReducedTape, against the hand-written f64
// objective and gradient and, where tapevm-bench has ADOL-C, ADOL-C's reverse mode on the
// whole objective taped once; every gradient checked against the hand-written one.
#pragma once

#include <cstddef>
#include <ostream>
#include <span>
#include <string>
#include <vector>

#include "tapevm/gmm.hpp"

namespace tapevm::bench {

/// ADOL-C's side: the objective taped with adoubles at theta (x passive), then `repeats` runs
/// of zos_forward (`objective_seconds`) and of gradient (`gradient_seconds`); `value` and
/// `gradient` from the last. Returns false where tapevm-bench was built without ADOL-C.
bool adolc_gmm(const examples::GmmInstance& instance, unsigned repeats,
               std::vector<double>& objective_seconds, std::vector<double>& gradient_seconds, double& value,
               std::vector<double>& gradient);

/// One instance's measurements (medians, seconds) and checks.
struct GmmResult {
    std::size_t d = 0, k = 0, n = 0, parameters = 0, instructions = 0;
    unsigned threads = 1;
    std::string backend;  // the CPU VM's name
    double record_s = 0, setup_s = 0;
    double tapevm_objective_s = 0, tapevm_gradient_s = 0;
    double hand_objective_s = 0, hand_gradient_s = 0;
    bool adolc_run = false;
    std::string adolc_note;  // why ADOL-C did not run
    double adolc_objective_s = 0, adolc_gradient_s = 0;
    double objective = 0, hand_objective = 0;
    double tapevm_error = 0, adolc_error = 0;  // largest relative difference from the hand-written gradient

    bool passed() const { return tapevm_error <= 1e-9 && (!adolc_run || adolc_error <= 1e-9); }
};

/// Measures one instance: the gradient / objective time ratio of each (ADBench's figure) and
/// the largest difference from the hand-written gradient. ADOL-C runs only where
/// n K d (d + 1) / 2 is at most 3e7 (its tape holds every point: about 1 GB there).
GmmResult measure_gmm(std::size_t d, std::size_t k, std::size_t n, unsigned threads, unsigned repeats);

/// The table (one row per implementation) and the checks.
void print_gmm(const GmmResult& result, std::ostream& out);
/// The same as JSON (`tapevm adbench gmm --json`).
void write_gmm_json(const GmmResult& result, std::ostream& out);

/// measure_gmm and print_gmm; returns 1 when a gradient differs from the hand-written one by
/// more than 1e-9 relative.
int run_gmm_bench(std::size_t d, std::size_t k, std::size_t n, unsigned threads, unsigned repeats,
                  std::ostream& out);

}  // namespace tapevm::bench
