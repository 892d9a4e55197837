#include "adbench_run.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iomanip>
#include <limits>
#include <sstream>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "adbench.hpp"
#include "adbench_expected.hpp"
#include "check.hpp"
#include "median.hpp"
#include "runner.hpp"
#include "tapevm/error.hpp"
#include "timing.hpp"

namespace tapevm::bench::adbench {
namespace {

using support::median;

template <class F> Timing timed(unsigned repeats, Progress& progress, F&& f) {
    Timing timing;
    timing.runs = support::timed_runs(repeats, f, [&] { progress.step(); });
    timing.median = median(timing.runs);
    return timing;
}

// Untimed runs of f right before its timed ones: at least one, and until warm_up_seconds
// have passed. On the 2-core development VM the first ~40 ms of Jacobian runs after the
// objective's timing were 1.6x slower than the rest (ba2: 4.1-4.6 ms, then 2.4-2.7, in base
// and changed code alike; not page faults), which a single warm-up run did not cover.
constexpr double warm_up_seconds = 0.2;

template <class F> void warm_up(F&& f) { support::warm_up(warm_up_seconds, f); }

// Refuses instances whose buffers would not fit in this machine's memory.
void check_memory(const std::string& path, std::size_t observations, std::size_t sizeof_real) {
    const long pages = sysconf(_SC_PHYS_PAGES), page_size = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || page_size <= 0) return;
    const double physical = static_cast<double>(pages) * static_cast<double>(page_size);
    const double needed = static_cast<double>(bytes_needed(observations, sizeof_real));
    if (needed > 0.8 * physical) {
        char text[160];
        std::snprintf(text, sizeof text,
                      ": %zu observations need about %.1f GiB, more than 80%% of this machine's %.1f GiB",
                      observations, needed / 1073741824.0, physical / 1073741824.0);
        throw Error(path + text);
    }
}

void compare_expected(const std::string& path, const BaProblem& problem,
                      const std::vector<double>& reprojection, const std::vector<double>& weight,
                      const std::vector<double>& values, RunResult& result) {
    const BaExpected expected = read_ba_expected(path);
    const std::size_t p = problem.observations;
    const auto size_check = [&](const char* what, std::size_t given, std::size_t wanted) {
        if (given != wanted)
            throw Error(path + ": " + what + " has " + std::to_string(given) +
                        " values, but the instance needs " + std::to_string(wanted));
    };
    size_check("the reprojection errors", expected.reprojection_errors.size(), 2 * p);
    size_check("the weight errors", expected.weight_errors.size(), p);
    size_check("the Jacobian values", expected.jacobian_values.size(), nonzeros_per_observation * p);
    result.expected_path = path;
    result.expected_max_rho = -1;
    const auto take = [&](const char* what, const RhoResult& r) {
        if (r.max_rho > result.expected_max_rho) {
            result.expected_max_rho = r.max_rho;
            result.expected_worst = std::string(what) + "[" + std::to_string(r.worst_index) + "]";
        }
    };
    take("reprojection error", max_rho(reprojection, expected.reprojection_errors));
    take("weight error", max_rho(weight, expected.weight_errors));
    take("Jacobian value", max_rho(values, expected.jacobian_values));
}

template <class Real> std::vector<double> as_double(const std::vector<Real>& values) {
    return std::vector<double>(values.begin(), values.end());
}

template <class Real>
void measure(const BaProblem& problem, const RunOptions& options, Progress& progress, RunResult& result) {
    const std::unique_ptr<BlockJacobians> blocks =
        make_block_jacobians(options.backend, options.precision, options.threads);
    result.evaluator = blocks->name();
    const NativeSimdKernels kernels = native_simd_kernels();
    result.objective_isa = std::string(kernels.isa);
    NativeKernel<Real> simd_kernel;
    if constexpr (std::is_same_v<Real, double>) {
        simd_kernel = kernels.f64;
    } else {
        simd_kernel = kernels.f32;
    }
    WorkerPool pool(options.threads);
    Objective<Real> objective = prepare_objective<Real>(problem);
    JacobianWork<Real> work = prepare_jacobian<Real>(problem);

    progress.phase("warm-up run and checks", 0);
    compute_objective(problem, simd_kernel, pool, objective);
    compute_jacobian(problem, *blocks, pool, work);
    const SparseJacobian<Real>& jacobian = work.jacobian;
    result.structure_error = check_structure(problem, jacobian);
    const std::vector<std::size_t> sample = sample_points(problem.observations, options.sample);
    result.sample_points = sample.size();
    result.sample_tolerance = tolerance(options.precision);
    // The sample is read through the row starts: only once they are known to be right.
    result.sample_max_error = result.structure_error.empty()
                                  ? sample_error(problem, jacobian, objective, sample)
                                  : std::numeric_limits<double>::infinity();
    const std::string expected =
        options.expected_path.empty() ? find_expected_for(result.instance) : options.expected_path;
    result.expected_tolerance = expected_tolerance(options.precision);
    if (!expected.empty())
        compare_expected(expected, problem, as_double(objective.reprojection_errors),
                         as_double(objective.weight_errors), as_double(jacobian.values), result);
    if (!result.passed()) return;  // nothing unchecked is timed

    // Each timed function warms up right before its timed runs.
    const auto simd_objective = [&] { compute_objective(problem, simd_kernel, pool, objective); };
    const auto scalar_objective = [&] {
        compute_objective(problem, &native_scalar_primal<Real>, pool, objective);
    };
    progress.phase("objective (native-simd)", options.repeats);
    warm_up(simd_objective);
    result.objective = timed(options.repeats, progress, simd_objective);
    progress.phase("objective (native-scalar)", options.repeats);
    warm_up(scalar_objective);
    result.objective_scalar = timed(options.repeats, progress, scalar_objective);
    progress.phase("jacobian (" + options.backend + ")", options.repeats);
    warm_up([&] { compute_jacobian(problem, *blocks, pool, work); });
    std::vector<double> inputs, evaluations, structures;
    result.jacobian = timed(options.repeats, progress, [&] {
        const JacobianPhases phases = compute_jacobian(problem, *blocks, pool, work);
        inputs.push_back(phases.inputs);
        evaluations.push_back(phases.blocks);
        structures.push_back(phases.structure);
    });
    result.jacobian_inputs = median(inputs);
    result.jacobian_blocks = median(evaluations);
    result.jacobian_structure = median(structures);
    progress.finish();
}

std::vector<double> milliseconds(const std::vector<double>& seconds) {
    std::vector<double> list;
    for (const double value : seconds) list.push_back(1e3 * value);
    return list;
}

std::string ms(double seconds) {
    if (std::isnan(seconds)) return "-";
    char text[32];
    std::snprintf(text, sizeof text, "%.3f ms", 1e3 * seconds);
    return text;
}

std::string short_number(double value) {
    char text[32];
    std::snprintf(text, sizeof text, "%.2g", value);
    return text;
}

}  // namespace

double expected_tolerance(Precision precision) { return precision == Precision::f64 ? 1e-8 : 1e-3; }

RunResult run_adbench(const std::string& path, const RunOptions& options, Progress& progress) {
    if (options.threads == 0 || options.repeats == 0)
        throw Error("adbench: threads and repeats must be >= 1");
    const std::size_t sizeof_real = options.precision == Precision::f64 ? 8 : 4;
    progress.phase("reading " + path, 0);
    const BaFile file = read_ba_file(path);
    check_memory(path, file.observations, sizeof_real);
    RunResult result;
    result.instance = path;
    result.cameras = file.cameras;
    result.points = file.points;
    result.observations = file.observations;
    result.rows = 3 * file.observations;
    result.nonzeros = nonzeros_per_observation * file.observations;
    result.backend = options.backend;
    result.precision = std::string(precision_name(options.precision));
    result.device = cpu_model_name();
    result.threads = options.threads;
    result.repeats = options.repeats;
    const BaProblem problem = replicate(file);
    result.columns = problem.jacobian_columns();
    if (options.precision == Precision::f64) {
        measure<double>(problem, options, progress, result);
    } else {
        measure<float>(problem, options, progress, result);
    }
    return result;
}

void print_result(const RunResult& r, std::ostream& out) {
    const std::string name = std::filesystem::path(r.instance).filename().string();
    out << "ADBench BA " << name << ": " << r.cameras << " cameras, " << r.points << " points, "
        << r.observations << " observations; Jacobian " << r.rows << " x " << r.columns << ", " << r.nonzeros
        << " nonzeros\n";
    out << "jacobian:  " << r.evaluator << ", " << r.precision << "; objective: native-simd ("
        << r.objective_isa << "), " << r.threads << (r.threads == 1 ? " thread" : " threads")
        << "; median of " << r.repeats << " runs\n";
    if (r.passed()) {
        out << "objective  " << ms(r.objective.median) << "  (native-scalar " << ms(r.objective_scalar.median)
            << ")\n";
        out << "jacobian   " << ms(r.jacobian.median) << "  (inputs " << ms(r.jacobian_inputs) << ", blocks "
            << ms(r.jacobian_blocks) << ", csr structure " << ms(r.jacobian_structure) << ")\n";
        char ratio[96];
        std::snprintf(ratio, sizeof ratio, "ratio      %.2f  (to native-scalar %.2f)\n", r.ratio(),
                      r.ratio_to_scalar());
        out << ratio;
    }
    out << "check: csr structure " << (r.structure_error.empty() ? "exact" : "WRONG: " + r.structure_error)
        << '\n';
    out << "check: " << r.sample_points << " observations vs the reference VM: max error "
        << short_number(r.sample_max_error) << (r.sample_passed() ? " <= " : " > ")
        << short_number(r.sample_tolerance) << (r.sample_passed() ? "" : "  FAILED") << '\n';
    if (r.expected_path.empty()) {
        out << "check: ADBench expected outputs: none for this instance\n";
    } else {
        out << "check: ADBench expected outputs ("
            << std::filesystem::path(r.expected_path).filename().string() << "): max rho "
            << short_number(r.expected_max_rho) << (r.expected_passed() ? " <= " : " > ")
            << short_number(r.expected_tolerance) << " (at " << r.expected_worst << ")"
            << (r.expected_passed() ? "" : "  FAILED") << '\n';
    }
    out << (r.passed() ? "passed\n" : "FAILED: not timed\n");
}

void write_result_json(const RunResult& r, std::ostream& out) {
    // Keys in this order (ordered_json); a NaN or infinite number is written as null.
    nlohmann::ordered_json result = {
        {"problem", "ba"},
        {"instance", r.instance},
        {"cameras", r.cameras},
        {"points", r.points},
        {"observations", r.observations},
        {"rows", r.rows},
        {"columns", r.columns},
        {"nonzeros", r.nonzeros},
        {"backend", r.backend},
        {"evaluator", r.evaluator},
        {"precision", r.precision},
        {"threads", r.threads},
        {"repeats", r.repeats},
        {"objective_isa", r.objective_isa},
        {"device", r.device},
        {"objective_ms", 1e3 * r.objective.median},
        {"objective_runs_ms", milliseconds(r.objective.runs)},
        {"objective_scalar_ms", 1e3 * r.objective_scalar.median},
        {"objective_scalar_runs_ms", milliseconds(r.objective_scalar.runs)},
        {"jacobian_ms", 1e3 * r.jacobian.median},
        {"jacobian_runs_ms", milliseconds(r.jacobian.runs)},
        {"jacobian_inputs_ms", 1e3 * r.jacobian_inputs},
        {"jacobian_blocks_ms", 1e3 * r.jacobian_blocks},
        {"jacobian_structure_ms", 1e3 * r.jacobian_structure},
        {"ratio", r.ratio()},
        {"ratio_to_scalar", r.ratio_to_scalar()},
        {"passed", r.passed()},
        {"structure_exact", r.structure_error.empty()},
        {"structure_error", r.structure_error},
        {"sample_points", r.sample_points},
        {"sample_max_error", r.sample_max_error},
        {"sample_tolerance", r.sample_tolerance},
        {"expected_path", nullptr},
        {"expected_max_rho", r.expected_max_rho},
        {"expected_tolerance", r.expected_tolerance},
        {"expected_passed", nullptr},
    };
    if (!r.expected_path.empty()) {
        result["expected_path"] = r.expected_path;
        result["expected_passed"] = r.expected_passed();
    }
    // Bytes that are not UTF-8 (a path) become U+FFFD.
    out << result.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
}

}  // namespace tapevm::bench::adbench
