// tapevm demo: record the bundle-adjustment residual, evaluate its values and its 2x15
// Jacobian for a large batch with the reference VM, time both, and check the Jacobian against
// finite differences of the native compiled function.
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "arguments.hpp"
#include "commands.hpp"
#include "demo_workload.hpp"
#include "tapevm/examples.hpp"
#include "tapevm/reference.hpp"

namespace tapevm::cli {
namespace {

constexpr std::string_view help = R"(usage: tapevm demo [--points N]

Records ADBench's bundle-adjustment reprojection error (the ba-param example: 15 inputs,
the observed feature as 2 parameters, 2 outputs), evaluates its values and its 2x15 Jacobian
for N points near ADBench's test instance (each value perturbed by up to 3%, fixed seed)
with the reference VM, and prints the time per point of each (fastest of 3 runs). Then checks the results: the
values against the native compiled function, the Jacobian against its central finite
differences on up to 1000 of the points (errors relative to max(1, |value|)). Exits with
status 1 when the check fails.

options:
  --points N    batch size (default 100000)
)";

constexpr OptionSpec options[] = {{"--points", true}, {"--help", false}};

constexpr std::size_t default_points = 100'000;
constexpr std::size_t most_points = 10'000'000;
constexpr std::size_t checked_points = 1000;
constexpr double spread = 0.03;
constexpr std::uint64_t seed = 20240501;
constexpr int timed_runs = 3;
// Tape and native code run the same operations in the same order: values agree to rounding.
constexpr double forward_tolerance = 1e-12;
// Central differences with a step of 1e-5 are accurate to about 1e-9 here; a wrong partial
// is off by far more.
constexpr double jacobian_tolerance = 1e-6;

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
}

// "name   12.345 ms   123.4 ns/point"
std::string timing_line(std::string_view name, double seconds, std::size_t points) {
    char line[160];
    std::snprintf(line, sizeof line, "  %-22.*s %10.3f ms %10.1f ns/point", static_cast<int>(name.size()),
                  name.data(), seconds * 1e3, seconds * 1e9 / static_cast<double>(points));
    return line;
}

std::string scientific(double value) {
    char text[32];
    std::snprintf(text, sizeof text, "%.2e", value);
    return text;
}

// The wall-clock seconds of the fastest of `timed_runs` calls of `work`.
template <class Work> double fastest_of_runs(Work&& work) {
    double fastest = 0;
    for (int run = 0; run < timed_runs; ++run) {
        const auto start = Clock::now();
        work();
        const double seconds = seconds_since(start);
        fastest = run == 0 ? seconds : std::min(fastest, seconds);
    }
    return fastest;
}

// "1 guard", "2 guards"
std::string counted(std::size_t count, std::string_view noun) {
    return std::to_string(count) + " " + std::string(noun) + (count == 1 ? "" : "s");
}

// The native compiled function over the batch: the baseline the tape is compared with.
void native_forward(const BaBatch& batch, std::vector<double>& outputs) {
    for (std::size_t point = 0; point < batch.points; ++point) {
        const auto inputs =
            std::span<const double>(batch.inputs).subspan(point * examples::ba_inputs, examples::ba_inputs);
        const auto residual =
            examples::ba_residual<double, double>(inputs, batch.features.data() + point * 2);
        outputs[point * 2] = residual[0];
        outputs[point * 2 + 1] = residual[1];
    }
}

int run(std::span<const std::string_view> args, std::ostream& out, std::ostream&) {
    const Arguments arguments = parse_arguments("demo", args, options);
    if (arguments.answered_help(help, out)) return 0;
    arguments.expect_positional(0, 0, "no arguments");
    const auto points_text = arguments.value("--points");
    const std::size_t points =
        points_text ? parse_count("--points", *points_text, 1, most_points) : default_points;

    out << "tapevm demo: ADBench bundle adjustment, the 2x15 Jacobian of one observation's "
           "reprojection error\n";
    const auto start = Clock::now();
    const Tape tape = examples::example_tape("ba-param");
    const double record_seconds = seconds_since(start);
    out << "tape: " << counted(tape.input_count(), "input") << ", "
        << counted(tape.param_count(), "parameter") << ", " << counted(tape.output_count(), "output") << ", "
        << counted(tape.instruction_count(), "instruction") << " ("
        << tape.instruction_count() * sizeof(Instruction) << " bytes), "
        << counted(tape.constant_count(), "constant") << ", " << counted(tape.guard_count(), "guard")
        << "; recorded and optimised in " << std::lround(record_seconds * 1e6) << " us\n";

    const BaBatch batch = make_ba_batch(points, spread, seed);
    out << "points: " << points << " (ADBench's test observation, each value perturbed by up to "
        << std::lround(spread * 100) << "%, seed " << seed << ")\n";

    const reference::Vm vm(tape);
    const Batch<double> vm_batch{points, batch.inputs, batch.features};
    std::vector<double> outputs(points * 2);
    std::vector<double> jacobians(points * 2 * examples::ba_inputs);
    std::vector<double> native_outputs(points * 2);

    Report forward_report;
    Report jacobian_report;
    const double forward_seconds =
        fastest_of_runs([&] { forward_report = vm.forward(vm_batch, std::span<double>(outputs)); });
    const double jacobian_seconds =
        fastest_of_runs([&] { jacobian_report = vm.jacobian(vm_batch, std::span<double>(jacobians)); });
    const double native_seconds = fastest_of_runs([&] { native_forward(batch, native_outputs); });

    out << "timings (wall clock, fastest of " << timed_runs << " runs, 1 thread):\n"
        << timing_line("reference VM forward", forward_seconds, points) << '\n'
        << timing_line("reference VM jacobian", jacobian_seconds, points) << '\n'
        << timing_line("native C++ forward", native_seconds, points) << '\n';
    char ratios[160];
    std::snprintf(ratios, sizeof ratios,
                  "ratios: jacobian / forward %.2f, VM forward / native forward %.1f\n",
                  jacobian_seconds / forward_seconds, forward_seconds / native_seconds);
    out << ratios;

    const std::size_t diverged = forward_report.diverged.size() + jacobian_report.diverged.size();
    const double forward_error = max_forward_error(batch, outputs);
    const double jacobian_error = max_jacobian_error(batch, jacobians, checked_points);
    const bool guards_hold = diverged == 0;
    const bool forward_ok = forward_error <= forward_tolerance;  // false for NaN
    const bool jacobian_ok = jacobian_error <= jacobian_tolerance;
    const auto verdict = [](bool ok) { return ok ? "ok" : "FAILED"; };
    out << "check:\n"
        << "  guards: " << (guards_hold ? "all hold" : std::to_string(diverged) + " points diverged") << ' '
        << verdict(guards_hold) << '\n'
        << "  values vs native C++, all " << points << " points: max relative error "
        << scientific(forward_error) << " (tolerance " << scientific(forward_tolerance) << ") "
        << verdict(forward_ok) << '\n'
        << "  jacobian vs central finite differences of native C++, " << std::min(points, checked_points)
        << " points: max relative error " << scientific(jacobian_error) << " (tolerance "
        << scientific(jacobian_tolerance) << ") " << verdict(jacobian_ok) << '\n';
    const bool pass = guards_hold && forward_ok && jacobian_ok;
    out << (pass ? "PASS" : "FAIL") << '\n';
    return pass ? 0 : 1;
}

}  // namespace

Command demo_command() {
    return {"demo", "time the bundle-adjustment Jacobian for a batch and check it (the README's demo)", help,
            run};
}

}  // namespace tapevm::cli
