// The demo's workload: a batch of ADBench bundle-adjustment observations near ADBench's test
// instance, and the checks of the tape's results against the native compiled function
// (examples::ba_residual<double>).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace tapevm::cli {

/// Observations for the ba-param tape: inputs [points][15] (camera, point, weight) and
/// features [points][2] (its parameters).
struct BaBatch {
    std::size_t points = 0;
    std::vector<double> inputs;
    std::vector<double> features;
};

/// `points` observations: ADBench's test inputs and feature, each value multiplied by
/// 1 + u with u uniform in [-spread, spread), drawn from a fixed generator seeded by `seed`
/// (the same numbers on every platform).
BaBatch make_ba_batch(std::size_t points, double spread, std::uint64_t seed);

/// The largest error of `outputs` ([points][2], from the tape) against the native function
/// over all points, each relative to max(1, |native value|).
double max_forward_error(const BaBatch& batch, std::span<const double> outputs);

/// The largest error of `jacobians` ([points][2][15], from the tape) against central finite
/// differences of the native function, over `sample` points spread evenly through the batch,
/// each entry's error relative to max(1, |jacobian entry|).
double max_jacobian_error(const BaBatch& batch, std::span<const double> jacobians, std::size_t sample);

}  // namespace tapevm::cli
