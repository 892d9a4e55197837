#include "bench.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <set>
#include <string>
#include <tuple>

#include "backends.hpp"
#include "check.hpp"
#include "median.hpp"
#include "runner.hpp"
#include "timing.hpp"
#include "workloads.hpp"

namespace tapevm::bench {
namespace {

using support::Clock;
using support::median;

std::string describe(const Record& r) {
    return r.workload + " " + r.mode + " " + r.backend + " " + r.precision + ", " +
           std::to_string(r.threads) + (r.threads == 1 ? " thread, " : " threads, ") +
           std::to_string(r.points) + " points";
}

bool is_native(std::string_view backend) { return backend.starts_with("native-"); }

}  // namespace

Record measure(Runner& runner, std::string_view backend, const Problem& problem, const Points& points,
               const Config& config) {
    const Workload& workload = *problem.workload;
    Record record;
    record.backend = std::string(backend);
    record.workload = std::string(workload.name);
    record.mode = std::string(mode_name(runner.mode()));
    record.precision = std::string(precision_name(problem.precision));
    record.threads = runner.threads();
    record.points = points.count;
    record.instructions = workload.tape.instruction_count();
    record.isa = runner.isa();
    record.device = runner.device();

    const auto setup_start = Clock::now();
    runner.prepare(points);
    runner.run();
    record.setup_seconds = support::seconds_since(setup_start);
    const CheckResult check =
        check_against_reference(workload, problem.precision, points, runner, config.checked_points);
    record.checked = true;
    record.max_error = check.max_error;
    record.tolerance = check.tolerance;
    record.checked_points = check.points;
    if (!check.passed()) {
        char error[64];
        std::snprintf(error, sizeof error, "%.3g (tolerance %.0e)", check.max_error, check.tolerance);
        throw CheckFailed("check failed: " + describe(record) + ": max error " + error +
                          " against the reference VM");
    }
    // Warm up for at least warmup_seconds: a GPU that idled (while the reference VM checked
    // the results) runs at a fraction of its clock for a while, and the first timed runs would
    // measure its power management instead of the kernels (bench/RESULTS.md: an H100 sampled at
    // 345-1980 MHz during short records).
    support::warm_up(config.warmup_seconds, [&] { runner.run(); });
    std::vector<double> device_ns;
    const std::vector<double> seconds = support::timed_runs(
        config.repeats, [&] { runner.run(); },
        [&] {
            if (const double device = runner.device_seconds(); !std::isnan(device))
                device_ns.push_back(device * 1e9 / static_cast<double>(points.count));
        });
    for (const double run : seconds)
        record.runs_ns_per_point.push_back(run * 1e9 / static_cast<double>(points.count));
    if (!device_ns.empty()) record.device_ns_per_point = median(device_ns);
    record.ns_per_point = median(record.runs_ns_per_point);
    record.min_ns_per_point =
        *std::min_element(record.runs_ns_per_point.begin(), record.runs_ns_per_point.end());
    record.ns_per_instruction_lane = record.ns_per_point / record.instructions;
    return record;
}

std::vector<Record> run_bench(const Config& config, std::ostream& progress) {
    std::vector<std::string> backend_order{std::string(baseline_backend)};
    for (const std::string& name : config.backends)
        if (name != baseline_backend) backend_order.push_back(name);

    std::vector<Record> records;
    // (workload, mode, backend, precision, threads, points) already measured.
    std::set<std::tuple<std::string, std::string, std::string, std::string, unsigned, std::size_t>> measured;
    for (const std::string& workload_name : config.workloads) {
        const Workload& w = workload(workload_name);
        std::vector<Mode> modes;
        for (const Mode mode : config.modes) {
            if (w.supports(mode)) {
                modes.push_back(mode);
            } else {
                progress << "skipped: " << w.name << " has no " << mode_name(mode) << " mode (it has "
                         << w.tape.output_count() << " outputs)\n";
            }
        }
        if (config.modes.empty()) modes.push_back(w.default_mode);
        if (modes.empty()) continue;
        for (const std::size_t count : config.points) {
            const Points points = w.make_points(count);
            for (const Precision precision : config.precisions) {
                const Points rounded = rounded_to(points, precision);
                for (const unsigned threads : config.threads) {
                    double baseline = std::nan("");
                    for (const std::string& backend_name : backend_order) {
                        const BackendInfo& info = backend(backend_name);
                        for (const Mode mode : modes) {
                            const Problem problem{&w, mode, precision, threads};
                            std::unique_ptr<Runner> runner;
                            try {
                                runner = info.make(problem);
                            } catch (const Unsupported& unsupported) {
                                progress << "skipped: " << backend_name << ": " << unsupported.what() << '\n';
                                continue;
                            } catch (const DeviceUnavailable& unavailable) {
                                progress << "skipped: " << backend_name << ": " << unavailable.what() << '\n';
                                continue;
                            }
                            const auto key = std::make_tuple(
                                workload_name, std::string(mode_name(runner->mode())), backend_name,
                                std::string(precision_name(precision)), runner->threads(), count);
                            if (!measured.insert(key).second)
                                continue;  // native in another mode, 1-thread backend
                            progress << "[" << records.size() + 1 << "] " << workload_name << ' '
                                     << mode_name(runner->mode()) << ' ' << backend_name << ' '
                                     << precision_name(precision) << ", " << runner->threads()
                                     << (runner->threads() == 1 ? " thread, " : " threads, ") << count
                                     << " points: " << std::flush;
                            Record record = measure(*runner, backend_name, problem, rounded, config);
                            if (backend_name == baseline_backend) baseline = record.ns_per_point;
                            record.ratio_to_native_simd = record.ns_per_point / baseline;
                            char line[96];
                            std::snprintf(line, sizeof line, "%.4g ns/point (max error %.1e)\n",
                                          record.ns_per_point, record.max_error);
                            progress << line << std::flush;
                            records.push_back(std::move(record));
                            if (is_native(backend_name)) break;  // the primal, whatever the mode
                        }
                    }
                }
            }
        }
    }
    return records;
}

}  // namespace tapevm::bench
