// The adapter every backend of `tapevm bench` implements, so that timing covers evaluation
// only: the driver builds a Runner for one (workload, mode, precision, threads) problem,
// calls prepare() once with the points (not timed), run() once as the checked warm-up, then
// run() `repeats` times under the clock. bench/README.md shows how to add a backend.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "config.hpp"
#include "workloads.hpp"

namespace tapevm::bench {

/// One record's problem, as the driver hands it to a backend.
struct Problem {
    const Workload* workload = nullptr;
    Mode mode = Mode::forward;
    Precision precision = Precision::f64;
    /// Worker threads, already resolved (>= 1).
    unsigned threads = 1;
};

/// How many values one point's result has in `mode` for `tape`:
/// forward n_outputs, gradient n_inputs, jacobian n_outputs * n_inputs.
std::size_t result_width(const Tape& tape, Mode mode);

class Runner {
public:
    virtual ~Runner() = default;

    /// Takes the points (double, row-major, as Workload::make_points gives them): converts
    /// them to the backend's precision and layout, uploads them, allocates the results.
    virtual void prepare(const Points& points) = 0;
    /// Evaluates every prepared point: the only thing the clock sees.
    virtual void run() = 0;
    /// The last run's results of point `point`, as double, in the layout of batch.hpp for
    /// the mode this runner evaluates (result_width(tape, mode) values).
    virtual std::vector<double> result(std::size_t point) const = 0;

    /// The mode this runner evaluates: the problem's, except native baselines (forward).
    virtual Mode mode() const = 0;
    /// The instruction set ("avx512", "scalar") and device ("AMD EPYC", "NVIDIA H100") it ran on.
    virtual std::string isa() const = 0;
    virtual std::string device() const;
    /// Threads it really used (the reference VM and ADOL-C use one whatever was asked).
    virtual unsigned threads() const = 0;
    /// Seconds the device itself spent in the last run() (GPU timestamps: the kernels and
    /// transfers, without the host's submission and waiting), when the backend knows; NaN else.
    virtual double device_seconds() const;
};

/// The CPU's model name (/proc/cpuinfo), or "cpu" when unknown.
std::string cpu_model_name();

/// Points rounded to float and back, so that checks of f32 backends compare with the
/// reference evaluated at exactly the points the backend saw.
Points rounded_to(const Points& points, Precision precision);

}  // namespace tapevm::bench
