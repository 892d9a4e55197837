#include "first_result.hpp"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <span>
#include <thread>

#include "bench.hpp"
#include "check.hpp"
#include "runner.hpp"
#include "tapevm/gpu.hpp"
#include "workloads.hpp"

namespace tapevm::bench {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_between(Clock::time_point start, Clock::time_point end) {
    return std::chrono::duration<double>(end - start).count();
}

// A Runner holding one call's results, for check_against_reference().
template <class Real> class HeldResults final : public Runner {
public:
    HeldResults(const std::vector<Real>& results, std::size_t width, Mode mode)
        : results_(results), width_(width), mode_(mode) {}
    void prepare(const Points&) override {}
    void run() override {}
    std::vector<double> result(std::size_t point) const override {
        const auto first = results_.begin() + static_cast<std::ptrdiff_t>(point * width_);
        return std::vector<double>(first, first + static_cast<std::ptrdiff_t>(width_));
    }
    Mode mode() const override { return mode_; }
    std::string isa() const override { return "spirv"; }
    unsigned threads() const override { return 1; }

private:
    const std::vector<Real>& results_;
    std::size_t width_;
    Mode mode_;
};

template <class Real>
void call(const gpu::Vm& vm, Mode mode, const Batch<Real>& batch, std::vector<Real>& out) {
    const std::span<Real> results(out);
    switch (mode) {
        case Mode::forward: vm.forward(batch, results); break;
        case Mode::gradient: vm.gradient(batch, results); break;
        case Mode::jacobian: vm.jacobian(batch, results); break;
    }
}

template <class Real>
FirstResultRecord measure_one(const Workload& workload, Mode mode, Precision precision, std::size_t count) {
    FirstResultRecord record;
    record.workload = std::string(workload.name);
    record.mode = mode;
    record.precision = precision;
    record.points = count;
    const Points points = rounded_to(workload.make_points(count), precision);
    const std::vector<Real> inputs(points.inputs.begin(), points.inputs.end());
    const std::vector<Real> params(points.params.begin(), points.params.end());
    const std::size_t width = result_width(workload.tape, mode);
    std::vector<Real> first(count * width), later(count * width);
    const Batch<Real> batch{count, inputs, params};
    gpu::Options options;
    options.engine = gpu::Engine::compiled;
    options.compile = gpu::CompileWait::background;

    const auto start = Clock::now();
    const gpu::Vm vm(workload.tape, options);
    call(vm, mode, batch, first);
    record.first_result_s = seconds_between(start, Clock::now());
    record.first_compiled = vm.last_timing().compiled;

    // Until the compiled kernel is in use: poll its build, then call again (at most 20 minutes).
    const std::string mode_text(mode_name(mode));
    gpu::CompilePlan plan = vm.compile_status<Real>(mode_text);
    const auto deadline = start + std::chrono::minutes(20);
    while (plan.pending && Clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
        plan = vm.compile_status<Real>(mode_text);
    }
    record.compiled_s = std::nan("");
    if (record.first_compiled) {
        record.compiled_s = record.first_result_s;
    } else if (!plan.pending) {
        call(vm, mode, batch, later);
        if (vm.last_timing().compiled) record.compiled_s = seconds_between(start, Clock::now());
    }
    record.build_s = plan.total_s;
    record.queued_s = plan.queued_s;
    record.spirv_from_cache = plan.spirv_from_cache;
    record.reason = plan.pending ? "still building after 20 minutes" : plan.reason;

    const HeldResults<Real> held(first, width, mode);
    const CheckResult check = check_against_reference(workload, precision, points, held, 64);
    record.max_error = check.max_error;
    if (!check.passed()) {
        throw CheckFailed("time to first result: " + record.workload + " " + mode_text + " " +
                          std::string(precision_name(precision)) + ": the first results are off by " +
                          std::to_string(check.max_error) + " (tolerance " + std::to_string(check.tolerance) +
                          ")");
    }
    return record;
}

std::string milliseconds(double seconds) {
    if (std::isnan(seconds)) return "-";
    char text[32];
    std::snprintf(text, sizeof text, "%.1f ms", seconds * 1e3);
    return text;
}

}  // namespace

std::vector<FirstResultRecord> measure_first_results(const Config& config, double& device_open_s,
                                                     std::string& device_name, std::ostream& progress) {
    const auto start = Clock::now();
    {
        gpu::Options options;
        options.engine = gpu::Engine::compiled;
        const gpu::Vm probe(Tape{}, options);  // opens the device, kept open for the process
        device_name = probe.device().name;
    }
    device_open_s = seconds_between(start, Clock::now());
    std::vector<FirstResultRecord> records;
    for (const std::string& name : config.workloads) {
        const Workload& workload = bench::workload(name);
        const std::vector<Mode> modes =
            config.modes.empty() ? std::vector<Mode>{workload.default_mode} : config.modes;
        for (const Mode mode : modes) {
            if (!workload.supports(mode)) continue;
            for (const Precision precision : config.precisions)
                for (const std::size_t points : config.points) {
                    progress << "first result: " << name << ' ' << mode_name(mode) << ' '
                             << precision_name(precision) << ' ' << points << " points\n";
                    records.push_back(precision == Precision::f64
                                          ? measure_one<double>(workload, mode, precision, points)
                                          : measure_one<float>(workload, mode, precision, points));
                }
        }
    }
    return records;
}

void print_first_results(const std::vector<FirstResultRecord>& records, double device_open_s,
                         const std::string& device_name, bool cold, std::ostream& out) {
    out << "time to first result: gpu::Engine::compiled, CompileWait::background, " << device_name << ", "
        << (cold ? "cold caches (an empty TAPEVM_CACHE_DIR)" : "the user's kernel cache")
        << "; device opened first in " << milliseconds(device_open_s) << '\n';
    char line[256];
    std::snprintf(line, sizeof line, "%-13s %-9s %-4s %9s %13s %-11s %15s %11s %9s %s\n", "workload", "mode",
                  "prec", "points", "first result", "first call", "compiled in use", "build", "queued",
                  "max error");
    out << line;
    for (const FirstResultRecord& r : records) {
        std::snprintf(line, sizeof line, "%-13s %-9s %-4s %9zu %13s %-11s %15s %11s %9s %.2g\n",
                      r.workload.c_str(), std::string(mode_name(r.mode)).c_str(),
                      std::string(precision_name(r.precision)).c_str(), r.points,
                      milliseconds(r.first_result_s).c_str(), r.first_compiled ? "compiled" : "interpreter",
                      milliseconds(r.compiled_s).c_str(), milliseconds(r.build_s).c_str(),
                      milliseconds(r.queued_s).c_str(), r.max_error);
        out << line;
        if (!r.reason.empty())
            out << "  compiled kernel not used: " << r.reason << '\n';
        else if (r.spirv_from_cache)
            out << "  (the build found the kernel in a cache)\n";
    }
}

}  // namespace tapevm::bench
