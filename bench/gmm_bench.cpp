#include "gmm_bench.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "median.hpp"
#include "tapevm/cpu.hpp"
#include "tapevm/error.hpp"
#include "tapevm/reduced.hpp"
#include "timing.hpp"

namespace tapevm::bench {

namespace {

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
                  name.c_str(), support::milliseconds(objective_s).c_str(),
                  support::milliseconds(gradient_s).c_str(), gradient_s / objective_s);
    out << text;
}

}  // namespace

#if !TAPEVM_BENCH_ADOLC
bool adolc_gmm(const examples::GmmInstance&, unsigned, std::vector<double>&, std::vector<double>&, double&,
               std::vector<double>&) {
    return false;
}
#endif

GmmResult measure_gmm(std::size_t d, std::size_t k, std::size_t n, unsigned threads, unsigned repeats) {
    using support::Clock;
    using support::seconds_since;
    GmmResult r;
    r.d = d;
    r.k = k;
    r.n = n;
    r.threads = threads;
    const examples::GmmInstance g = examples::gmm_instance(d, k, n, 1);
    auto start = Clock::now();
    const Tape point_tape = examples::gmm_point_tape(d, k);
    const Tape prior_tape = examples::gmm_prior_tape(d, k, n, g.gamma, g.m);
    r.record_s = seconds_since(start);
    r.instructions = point_tape.instruction_count();
    const ReducedTape gradient_model = ReducedTape::all_params(point_tape);
    const ReducedTape value_model(point_tape, {});
    cpu::Options options;
    options.threads = threads;
    cpu::Options one = options;
    one.threads = 1;
    start = Clock::now();
    const cpu::Vm gradient_vm(gradient_model.tape(), options), value_vm(value_model.tape(), options),
        prior_vm(prior_tape, one);
    r.setup_s = seconds_since(start);
    r.backend = gradient_vm.name();
    const std::vector<double> theta = g.theta();
    r.parameters = theta.size();
    const Batch<double> batch{n, g.x, theta};
    const Batch<double> prior_point = single_point<double>(theta);

    std::vector<double> gradient(theta.size()), prior_gradient(theta.size());
    const auto objective = [&] {
        ReducedOptions<double> value_only;
        value_only.value = &r.objective;
        value_model.gradient(value_vm, batch, std::span<double>(), value_only);
        double prior = 0;
        prior_vm.forward(prior_point, std::span<double>(&prior, 1));
        r.objective += prior;
    };
    const auto gradient_run = [&] {
        gradient_model.gradient(gradient_vm, batch, std::span<double>(gradient));
        prior_vm.gradient(prior_point, std::span<double>(prior_gradient));
        for (std::size_t j = 0; j < gradient.size(); ++j) gradient[j] += prior_gradient[j];
    };
    support::warm_up(0.2, objective);
    r.tapevm_objective_s = support::median(support::timed_runs(repeats, objective));
    support::warm_up(0.2, gradient_run);
    r.tapevm_gradient_s = support::median(support::timed_runs(repeats, gradient_run));

    std::vector<double> hand_gradient;
    r.hand_objective_s = support::median(
        support::timed_runs(repeats, [&] { r.hand_objective = examples::gmm_objective(g, threads); }));
    r.hand_gradient_s = support::median(
        support::timed_runs(repeats, [&] { hand_gradient = examples::gmm_gradient(g, threads); }));
    r.tapevm_error = largest_difference(gradient, hand_gradient);

    const double tape_size =
        static_cast<double>(n) * static_cast<double>(k) * static_cast<double>(d * (d + 1) / 2);
    std::vector<double> adolc_objective_s, adolc_gradient_s, adolc_gradient;
    double adolc_value = 0;
    if (tape_size > 3e7) {
        r.adolc_note = "not run: its tape would hold n K d (d + 1) / 2 = " + std::to_string(tape_size) +
                       " > 3e7 operations";
    } else if (!adolc_gmm(g, repeats, adolc_objective_s, adolc_gradient_s, adolc_value, adolc_gradient)) {
        r.adolc_note = "not built into this tapevm-bench";
    } else {
        r.adolc_run = true;
        r.adolc_objective_s = support::median(adolc_objective_s);
        r.adolc_gradient_s = support::median(adolc_gradient_s);
        r.adolc_error = largest_difference(adolc_gradient, hand_gradient);
    }
    return r;
}

void print_gmm(const GmmResult& r, std::ostream& out) {
    out << "GMM d=" << r.d << " K=" << r.k << " n=" << r.n << ": " << r.parameters
        << " parameters, point tape " << r.instructions << " instructions, " << r.backend << "\n";
    out << "  tapevm set-up: record " << support::milliseconds(r.record_s) << ", CPU VM plans "
        << support::milliseconds(r.setup_s) << "\n";
    print_row(out, "tapevm (ReducedTape)", r.tapevm_objective_s, r.tapevm_gradient_s);
    print_row(out, "hand-written f64", r.hand_objective_s, r.hand_gradient_s);
    out << "  objective " << r.objective << " (hand-written " << r.hand_objective << "); tapevm gradient's "
        << "largest difference from the hand-written one: " << r.tapevm_error << " (relative)\n";
    if (!r.adolc_run) {
        out << "  ADOL-C: " << r.adolc_note << "\n";
        return;
    }
    print_row(out, "ADOL-C (1 thread)", r.adolc_objective_s, r.adolc_gradient_s);
    out << "  ADOL-C gradient's largest difference from the hand-written one: " << r.adolc_error << "\n";
    out << "  tapevm gradient time / ADOL-C gradient time: " << r.tapevm_gradient_s / r.adolc_gradient_s
        << "\n";
}

void write_gmm_json(const GmmResult& r, std::ostream& out) {
    nlohmann::ordered_json json = {
        {"problem", "gmm"},
        {"d", r.d},
        {"k", r.k},
        {"n", r.n},
        {"parameters", r.parameters},
        {"point_tape_instructions", r.instructions},
        {"threads", r.threads},
        {"backend", r.backend},
        {"record_s", r.record_s},
        {"setup_s", r.setup_s},
        {"tapevm",
         {{"objective_s", r.tapevm_objective_s},
          {"gradient_s", r.tapevm_gradient_s},
          {"ratio", r.tapevm_gradient_s / r.tapevm_objective_s},
          {"largest_difference", r.tapevm_error}}},
        {"hand_written",
         {{"objective_s", r.hand_objective_s},
          {"gradient_s", r.hand_gradient_s},
          {"ratio", r.hand_gradient_s / r.hand_objective_s}}},
        {"objective", r.objective},
        {"passed", r.passed()},
    };
    if (r.adolc_run) {
        json["adolc"] = {{"objective_s", r.adolc_objective_s},
                         {"gradient_s", r.adolc_gradient_s},
                         {"ratio", r.adolc_gradient_s / r.adolc_objective_s},
                         {"largest_difference", r.adolc_error}};
    } else {
        json["adolc"] = {{"note", r.adolc_note}};
    }
    out << json.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
}

int run_gmm_bench(std::size_t d, std::size_t k, std::size_t n, unsigned threads, unsigned repeats,
                  std::ostream& out) {
    const GmmResult result = measure_gmm(d, k, n, threads, repeats);
    print_gmm(result, out);
    return result.passed() ? 0 : 1;
}

}  // namespace tapevm::bench
