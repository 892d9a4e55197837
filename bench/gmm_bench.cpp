#include "gmm_bench.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "median.hpp"
#include "tapevm/cpu.hpp"
#include "tapevm/error.hpp"
#include "tapevm/reduced.hpp"
#include "timing.hpp"

namespace tapevm::bench {

namespace {

std::string ms(double seconds) {
    char text[32];
    std::snprintf(text, sizeof text, "%.3f ms", seconds * 1e3);
    return text;
}

double largest_difference(const std::vector<double>& got, const std::vector<double>& want) {
    double scale = 0, worst = 0;
    for (const double w : want) scale = std::max(scale, std::fabs(w));
    for (std::size_t j = 0; j < want.size(); ++j)
        worst = std::max(worst, std::fabs(got[j] - want[j]) / std::max(std::fabs(want[j]), 1e-3 * scale));
    return worst;
}

// One row: objective and gradient medians and their ratio.
void print_row(std::ostream& out, const std::string& name, double objective_s, double gradient_s) {
    char text[160];
    std::snprintf(text, sizeof text, "  %-26s objective %12s  gradient %12s  gradient/objective %6.2f\n",
                  name.c_str(), ms(objective_s).c_str(), ms(gradient_s).c_str(), gradient_s / objective_s);
    out << text;
}

}  // namespace

#if !TAPEVM_BENCH_ADOLC
bool adolc_gmm(const examples::GmmInstance&, unsigned, std::vector<double>&, std::vector<double>&, double&,
               std::vector<double>&) {
    return false;
}
#endif

int run_gmm_bench(std::size_t d, std::size_t k, std::size_t n, unsigned threads, unsigned repeats,
                  std::ostream& out) {
    using support::Clock;
    using support::seconds_since;
    const examples::GmmInstance g = examples::gmm_instance(d, k, n, 1);
    auto start = Clock::now();
    const Tape point_tape = examples::gmm_point_tape(d, k);
    const Tape prior_tape = examples::gmm_prior_tape(d, k, n, g.gamma, g.m);
    const double record_s = seconds_since(start);
    const ReducedTape gradient_model = ReducedTape::all_params(point_tape);
    const ReducedTape value_model(point_tape, {});
    cpu::Options options;
    options.threads = threads;
    cpu::Options one = options;
    one.threads = 1;
    start = Clock::now();
    const cpu::Vm gradient_vm(gradient_model.tape(), options), value_vm(value_model.tape(), options),
        prior_vm(prior_tape, one);
    const double setup_s = seconds_since(start);
    const std::vector<double> theta = g.theta();
    const Batch<double> batch{n, g.x, theta};
    const Batch<double> prior_point = single_point<double>(theta);

    double value = 0;
    std::vector<double> gradient(theta.size()), prior_gradient(theta.size());
    const auto objective = [&] {
        ReducedOptions<double> value_only;
        value_only.value = &value;
        value_model.gradient(value_vm, batch, std::span<double>(), value_only);
        double prior = 0;
        prior_vm.forward(prior_point, std::span<double>(&prior, 1));
        value += prior;
    };
    const auto gradient_run = [&] {
        gradient_model.gradient(gradient_vm, batch, std::span<double>(gradient));
        prior_vm.gradient(prior_point, std::span<double>(prior_gradient));
        for (std::size_t j = 0; j < gradient.size(); ++j) gradient[j] += prior_gradient[j];
    };
    support::warm_up(0.2, objective);
    const double tapevm_objective = support::median(support::timed_runs(repeats, objective));
    support::warm_up(0.2, gradient_run);
    const double tapevm_gradient = support::median(support::timed_runs(repeats, gradient_run));

    double hand_value = 0;
    std::vector<double> hand_gradient;
    const double hand_objective = support::median(
        support::timed_runs(repeats, [&] { hand_value = examples::gmm_objective(g, threads); }));
    const double hand_gradient_s = support::median(
        support::timed_runs(repeats, [&] { hand_gradient = examples::gmm_gradient(g, threads); }));

    out << "GMM d=" << d << " K=" << k << " n=" << n << ": " << theta.size() << " parameters, point tape "
        << point_tape.instruction_count() << " instructions, " << gradient_vm.name() << "\n";
    out << "  tapevm set-up: record " << ms(record_s) << ", CPU VM plans " << ms(setup_s) << "\n";
    print_row(out, "tapevm (ReducedTape)", tapevm_objective, tapevm_gradient);
    print_row(out, "hand-written f64", hand_objective, hand_gradient_s);
    const double tapevm_error = largest_difference(gradient, hand_gradient);
    out << "  objective " << value << " (hand-written " << hand_value << "); tapevm gradient's largest "
        << "difference from the hand-written one: " << tapevm_error << " (relative)\n";
    int status = tapevm_error <= 1e-9 ? 0 : 1;

    const double tape_size =
        static_cast<double>(n) * static_cast<double>(k) * static_cast<double>(d * (d + 1) / 2);
    std::vector<double> adolc_objective_s, adolc_gradient_s, adolc_gradient;
    double adolc_value = 0;
    if (tape_size > 3e7) {
        out << "  ADOL-C: not run (its tape would hold n K d (d + 1) / 2 = " << tape_size
            << " > 3e7 operations)\n";
    } else if (!adolc_gmm(g, repeats, adolc_objective_s, adolc_gradient_s, adolc_value, adolc_gradient)) {
        out << "  ADOL-C: not built into this tapevm-bench\n";
    } else {
        const double adolc_objective = support::median(adolc_objective_s);
        const double adolc_gradient_m = support::median(adolc_gradient_s);
        print_row(out, "ADOL-C (1 thread)", adolc_objective, adolc_gradient_m);
        const double adolc_error = largest_difference(adolc_gradient, hand_gradient);
        out << "  ADOL-C gradient's largest difference from the hand-written one: " << adolc_error << "\n";
        out << "  tapevm gradient time / ADOL-C gradient time: " << tapevm_gradient / adolc_gradient_m
            << "\n";
        if (adolc_error > 1e-9) status = 1;
    }
    return status;
}

}  // namespace tapevm::bench
