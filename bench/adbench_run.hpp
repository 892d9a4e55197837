// The measurement behind `tapevm adbench ba FILE`: one ADBench BA instance read, replicated,
// checked and timed, as ADBench reports it (objective time, Jacobian time, their ratio).
//
//   objective time  the native C++ template (examples::ba_residual through native-simd's
//                   kernel; native-scalar's is timed too) over every observation, plus the
//                   weight errors, on `threads` threads
//   Jacobian time   input assembly + one batched Jacobian call per tape + CSR structure, on
//                   the same threads (adbench.hpp)
// Each is the median of `repeats` runs, right after untimed warm-up runs of its own (at least
// one and 0.2 s). A first run of each is checked before anything is timed: the CSR structure
// exactly, a sample of observations against the reference VM, and for test.txt every value
// against ADBench's expected outputs.
#pragma once

#include <cmath>
#include <cstddef>
#include <ostream>
#include <string>
#include <vector>

#include "adbench_progress.hpp"
#include "config.hpp"

namespace tapevm::bench::adbench {

struct RunOptions {
    std::string backend = "cpu";  // adbench_backend.hpp's names
    Precision precision = Precision::f64;
    unsigned threads = 1;  // >= 1
    unsigned repeats = 5;  // >= 1
    /// Observations compared with the reference VM, spread over the instance.
    std::size_t sample = 64;
    /// ADBench's expected outputs to compare with; "" = find_expected_for(the instance).
    std::string expected_path;
};

/// A timed quantity: its median and every run, in seconds; NaN and empty when not timed.
struct Timing {
    double median = std::nan("");
    std::vector<double> runs;
};

struct RunResult {
    std::string instance;
    std::size_t cameras = 0, points = 0, observations = 0;
    std::size_t rows = 0, columns = 0, nonzeros = 0;
    std::string backend, evaluator, precision, objective_isa, device;
    unsigned threads = 1, repeats = 0;

    Timing objective, objective_scalar, jacobian;
    /// The Jacobian's parts (the medians of each part over the runs).
    double jacobian_inputs = std::nan(""), jacobian_blocks = std::nan(""), jacobian_structure = std::nan("");
    double ratio() const { return jacobian.median / objective.median; }
    double ratio_to_scalar() const { return jacobian.median / objective_scalar.median; }

    /// "" when the CSR's structure is exact, else the first difference.
    std::string structure_error;
    std::size_t sample_points = 0;
    double sample_max_error = std::nan(""), sample_tolerance = 0;
    /// The expected-outputs file compared with ("" when none), the largest rho over the
    /// reprojection errors, weight errors and Jacobian values, and which value it was.
    std::string expected_path;
    double expected_max_rho = std::nan(""), expected_tolerance = 0;
    std::string expected_worst;

    bool sample_passed() const { return sample_max_error <= sample_tolerance; }
    bool expected_passed() const { return expected_path.empty() || expected_max_rho <= expected_tolerance; }
    bool passed() const { return structure_error.empty() && sample_passed() && expected_passed(); }
};

/// Reads the instance at `path` and measures it. Throws tapevm::Error on a bad file, a bad
/// option or an instance too large for this machine's memory; a failed check is not thrown
/// but returned (passed() false, nothing timed).
RunResult run_adbench(const std::string& path, const RunOptions& options, Progress& progress);

/// Tolerance of the comparison with ADBench's expected outputs: rho <= 1e-8 in double (as
/// ADBench), 1e-3 in float (the inputs rounded to float move the residual's cancelling
/// difference proj - feature, about 525 - 525, by some 1e-4).
double expected_tolerance(Precision precision);

/// The result for people: times in ms, the ratio, the checks.
void print_result(const RunResult& result, std::ostream& out);
/// The result as one JSON object (bench/README.md lists the fields), ending in a newline.
void write_result_json(const RunResult& result, std::ostream& out);

}  // namespace tapevm::bench::adbench
