#include "sparse_bench.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <string>

#include "median.hpp"
#include "split_mix64.hpp"
#include "tapevm/cpu.hpp"
#include "tapevm/error.hpp"
#include "tapevm/examples.hpp"
#include "tapevm/sparse.hpp"
#include "timing.hpp"

namespace tapevm::bench {

#if !TAPEVM_BENCH_ADOLC
bool adolc_sparse_jacobian(std::span<const double>, const SparseJacobianPlan&, unsigned, std::vector<double>&,
                           std::vector<double>&) {
    return false;
}
#endif

int run_sparse_bench(std::size_t unknowns, unsigned threads, unsigned repeats, std::ostream& out) {
    using support::Clock;
    using support::seconds_since;
    if (unknowns == 0) throw Error("bench --sparse: needs at least one unknown");
    auto start = Clock::now();
    const Tape tape = examples::bratu_tape(unknowns);
    const double record_s = seconds_since(start);
    start = Clock::now();
    SparseJacobianPlan plan;
    plan.pattern = jacobian_sparsity(tape);
    const double pattern_s = seconds_since(start);
    start = Clock::now();
    plan.colouring = colour_columns(plan.pattern);
    const double colouring_s = seconds_since(start);

    support::SplitMix64 random(42);
    std::vector<double> x(unknowns);
    for (double& v : x) v = random.uniform(-0.5, 0.5);
    const std::vector<double> lambda = {1.0};
    const Batch<double> batch{1, x, lambda};
    cpu::Options options;
    options.threads = threads;
    const cpu::Vm vm(tape, options);
    std::vector<double> values(plan.pattern.nonzeros());
    support::warm_up(0.2, [&] { (void)sparse_jacobian(vm, batch, plan, std::span<double>(values)); });
    const std::vector<double> unprepared_s = support::timed_runs(
        repeats, [&] { (void)sparse_jacobian(vm, batch, plan, std::span<double>(values)); });
    // What a Newton loop runs: set up once (PreparedSparseJacobian), evaluated every iteration.
    const PreparedSparseJacobian prepared(tape, plan);
    support::warm_up(0.2, [&] { (void)prepared.evaluate(vm, batch, std::span<double>(values)); });
    const std::vector<double> tapevm_s =
        support::timed_runs(repeats, [&] { (void)prepared.evaluate(vm, batch, std::span<double>(values)); });

    out << "sparse Jacobian of the 1-D Bratu residual, " << unknowns << " unknowns, "
        << tape.instruction_count() << " instructions, double, " << vm.name() << "\n";
    out << "  pattern: " << plan.pattern.nonzeros() << " nonzeros, " << plan.colouring.colours
        << " colours (jvps per Jacobian, instead of " << unknowns << ")\n";
    out << "  tapevm set-up: record " << support::milliseconds(record_s) << ", pattern "
        << support::milliseconds(pattern_s) << ", colouring (ColPack) " << support::milliseconds(colouring_s)
        << "\n";
    const double tapevm_median = support::median(tapevm_s);
    out << "  tapevm sparse_jacobian (set up every call): median "
        << support::milliseconds(support::median(unprepared_s)) << " of " << repeats << "\n";
    out << "  tapevm PreparedSparseJacobian::evaluate: median " << support::milliseconds(tapevm_median)
        << " of " << repeats << "\n";

    std::vector<double> adolc_s, adolc;
    if (!adolc_sparse_jacobian(x, plan, repeats, adolc_s, adolc)) {
        out << "  ADOL-C: not built into this tapevm-bench\n";
        return 0;
    }
    const double adolc_median = support::median(adolc_s);
    out << "  ADOL-C fov_forward with the same seed (" << plan.colouring.colours << " directions): median "
        << support::milliseconds(adolc_median) << " of " << repeats << "\n";
    out << "  ratio (ADOL-C / tapevm prepared, Jacobian only): " << adolc_median / tapevm_median << "x\n";
    double worst = 0;
    for (std::size_t k = 0; k < values.size(); ++k)
        worst = std::max(worst, std::fabs(adolc[k] - values[k]) / std::max(1.0, std::fabs(values[k])));
    out << "  largest difference from ADOL-C's Jacobian: " << worst << " (relative)\n";
    return worst <= 1e-12 ? 0 : 1;
}

}  // namespace tapevm::bench
