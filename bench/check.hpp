// The check every record passes before it is timed: the runner's results on a sample of the
// points against the reference VM in double at exactly those points (rounded to float first
// for f32 runners).
//
// Error of one value: |value - reference| / max(|reference|, 1e-3 * scale), scale the largest
// |reference| of the record's sample, so small entries of a large result are judged against
// the result's magnitude; a NaN where the reference has none (or the reverse) is an infinite
// error. Tolerances: 1e-9 in double; 1e-2 in float, where whole workloads lose digits to
// cancellation (BA's residual in float is 5e-4 off even on the f32 reference VM, and 1e-3 with
// xsimd's float sin/cos and FMA contraction): a wrong derivative is off by far more. The
// conformance suite, not this gate, holds each op to its ulp bounds.
#pragma once

#include <cstddef>
#include <vector>

#include "runner.hpp"

namespace tapevm::bench {

struct CheckResult {
    double max_error = 0;
    double tolerance = 0;
    std::size_t points = 0;  // how many points were compared

    bool passed() const { return max_error <= tolerance; }  // false for NaN
};

double tolerance(Precision precision);

/// `sample` points spread evenly over the batch (all of them when the batch is smaller).
std::vector<std::size_t> sample_points(std::size_t points, std::size_t sample);

/// Compares `runner`'s last results (in runner.mode()) at the sample points with the
/// reference VM evaluated at `points` (already rounded to the runner's precision).
CheckResult check_against_reference(const Workload& workload, Precision precision, const Points& points,
                                    const Runner& runner, std::size_t sample);

/// The error measure above over two equally long result lists.
double max_error(const std::vector<double>& values, const std::vector<double>& reference);

}  // namespace tapevm::bench
