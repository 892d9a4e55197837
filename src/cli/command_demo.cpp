// tapevm demo: record the bundle-adjustment residual, evaluate its values and its 2x15
// Jacobian for a large batch with the reference VM and the CPU VM, time both, and check each
// VM's values against the native compiled function and its Jacobian against finite
// differences of it.
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "arguments.hpp"
#include "commands.hpp"
#include "demo_workload.hpp"
#include "tapevm/cpu.hpp"
#include "tapevm/error.hpp"
#include "tapevm/examples.hpp"
#include "tapevm/gpu.hpp"
#include "tapevm/reference.hpp"
#include "timing.hpp"

namespace tapevm::cli {
namespace {

constexpr std::string_view help = R"(usage: tapevm demo [--points N]

Records ADBench's bundle-adjustment reprojection error (the ba-param example: 15 inputs,
the observed feature as 2 parameters, 2 outputs), evaluates its values and its 2x15 Jacobian
for N points near ADBench's test instance (each value perturbed by up to 3%, fixed seed)
with the reference VM (1 thread) and the CPU VM (SIMD, all threads or --threads N), and
prints the time per point of each (fastest of 3 runs). Then checks each VM's results: the
values against the native compiled function, the Jacobian against its central finite
differences on up to 1000 of the points (errors relative to max(1, |value|)). Exits with
status 1 when a check fails.

options:
  --points N    batch size (default 100000)
  --threads N   threads of the CPU VM (default 0: all hardware threads)
)";

constexpr OptionSpec options[] = {{"--points", true}, {"--threads", true}, {"--help", false}};

constexpr std::size_t default_points = 100'000;
constexpr std::size_t most_points = 10'000'000;
constexpr std::size_t checked_points = 1000;
constexpr double spread = 0.03;
constexpr std::uint64_t seed = 20240501;
constexpr unsigned timed_run_count = 3;
// Tape and native code run the same operations in the same order: values agree to rounding.
constexpr double forward_tolerance = 1e-12;
// Central differences with a step of 1e-5 are accurate to about 1e-9 here; a wrong partial
// is off by far more.
constexpr double jacobian_tolerance = 1e-6;

using support::Clock;
using support::seconds_since;

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

// The wall-clock seconds of the fastest of `timed_run_count` calls of `work`.
template <class Work> double fastest_of_runs(Work&& work) {
    const std::vector<double> seconds = support::timed_runs(timed_run_count, work);
    return *std::min_element(seconds.begin(), seconds.end());
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

    cpu::Options cpu_options;
    if (const auto threads = arguments.value("--threads")) {
        cpu_options.threads = static_cast<unsigned>(parse_count("--threads", *threads, 0, 1024));
    }
    const reference::Vm reference_vm(tape);
    const cpu::Vm cpu_vm(tape, cpu_options);
    const Batch<double> vm_batch{points, batch.inputs, batch.features};
    std::vector<double> native_outputs(points * 2);
    const double native_seconds = fastest_of_runs([&] { native_forward(batch, native_outputs); });

    // Each VM: timings, then the checks of its results.
    struct Outcome {
        double forward_seconds = 0;
        double jacobian_seconds = 0;
        std::size_t diverged = 0;
        double forward_error = 0;
        double jacobian_error = 0;
    };
    const auto measure = [&](const Evaluator& vm) {
        std::vector<double> outputs(points * 2);
        std::vector<double> jacobians(points * 2 * examples::ba_inputs);
        Report forward_report;
        Report jacobian_report;
        Outcome outcome;
        outcome.forward_seconds =
            fastest_of_runs([&] { forward_report = vm.forward(vm_batch, std::span<double>(outputs)); });
        outcome.jacobian_seconds =
            fastest_of_runs([&] { jacobian_report = vm.jacobian(vm_batch, std::span<double>(jacobians)); });
        outcome.diverged = forward_report.diverged.size() + jacobian_report.diverged.size();
        outcome.forward_error = max_forward_error(batch, outputs);
        outcome.jacobian_error = max_jacobian_error(batch, jacobians, checked_points);
        return outcome;
    };
    const Outcome reference_outcome = measure(reference_vm);
    const Outcome cpu_outcome = measure(cpu_vm);
    // The GPU VM, when a GPU with float64 exists. Lavapipe (Mesa's Vulkan driver on the CPU)
    // is left out unless TAPEVM_DEVICE names it: it would time the CPU a second time, slowly.
    std::unique_ptr<gpu::Vm> gpu_vm;
    std::string gpu_note;
    try {
        gpu_vm = std::make_unique<gpu::Vm>(tape);
        if (gpu_vm->device().type == "cpu" && std::getenv("TAPEVM_DEVICE") == nullptr) {
            gpu_note = "the only Vulkan device, " + gpu_vm->device().name + ", runs on the CPU: not timed";
            gpu_vm.reset();
        } else if (!gpu_vm->device().float64) {
            gpu_note = gpu_vm->device().name + " has no float64: not timed (the demo is in double)";
            gpu_vm.reset();
        }
    } catch (const DeviceUnavailable& error) {
        gpu_note = error.what();
    } catch (const Unsupported& error) {  // built without the GPU VM
        gpu_note = error.what();
    }
    const Outcome gpu_outcome = gpu_vm ? measure(*gpu_vm) : Outcome{};

    out << "timings (wall clock, fastest of " << timed_run_count << " runs; reference: 1 thread, "
        << cpu_vm.name() << "):\n"
        << timing_line("reference VM forward", reference_outcome.forward_seconds, points) << '\n'
        << timing_line("reference VM jacobian", reference_outcome.jacobian_seconds, points) << '\n'
        << timing_line("CPU VM forward", cpu_outcome.forward_seconds, points) << '\n'
        << timing_line("CPU VM jacobian", cpu_outcome.jacobian_seconds, points) << '\n'
        << timing_line("native C++ forward", native_seconds, points) << '\n';
    if (gpu_vm) {
        out << timing_line("GPU VM forward", gpu_outcome.forward_seconds, points) << '\n'
            << timing_line("GPU VM jacobian", gpu_outcome.jacobian_seconds, points) << "  (" << gpu_vm->name()
            << ", host memory in and out)\n";
    } else {
        out << "  GPU VM: " << gpu_note << '\n';
    }
    char ratios[240];
    std::snprintf(ratios, sizeof ratios,
                  "ratios: CPU VM jacobian / forward %.2f, reference jacobian / CPU VM jacobian %.1f, "
                  "CPU VM jacobian / native forward %.1f\n",
                  cpu_outcome.jacobian_seconds / cpu_outcome.forward_seconds,
                  reference_outcome.jacobian_seconds / cpu_outcome.jacobian_seconds,
                  cpu_outcome.jacobian_seconds / native_seconds);
    out << ratios;

    const auto verdict = [](bool ok) { return ok ? "ok" : "FAILED"; };
    bool pass = true;
    out << "check:\n";
    std::vector<std::pair<const char*, Outcome>> outcomes = {{"reference VM", reference_outcome},
                                                             {"CPU VM", cpu_outcome}};
    if (gpu_vm) outcomes.emplace_back("GPU VM", gpu_outcome);
    for (const auto& [name, outcome] : outcomes) {
        const bool guards_hold = outcome.diverged == 0;
        const bool forward_ok = outcome.forward_error <= forward_tolerance;  // false for NaN
        const bool jacobian_ok = outcome.jacobian_error <= jacobian_tolerance;
        out << "  " << name << " guards: "
            << (guards_hold ? "all hold" : std::to_string(outcome.diverged) + " points diverged") << ' '
            << verdict(guards_hold) << '\n'
            << "  " << name << " values vs native C++, all " << points << " points: max relative error "
            << scientific(outcome.forward_error) << " (tolerance " << scientific(forward_tolerance) << ") "
            << verdict(forward_ok) << '\n'
            << "  " << name << " jacobian vs central finite differences of native C++, "
            << std::min(points, checked_points) << " points: max relative error "
            << scientific(outcome.jacobian_error) << " (tolerance " << scientific(jacobian_tolerance) << ") "
            << verdict(jacobian_ok) << '\n';
        pass = pass && guards_hold && forward_ok && jacobian_ok;
    }
    out << (pass ? "PASS" : "FAIL") << '\n';
    return pass ? 0 : 1;
}

}  // namespace

Command demo_command() {
    return {"demo", "time the bundle-adjustment Jacobian for a batch and check it (the README's demo)", help,
            run};
}

}  // namespace tapevm::cli
