// What evaluates the Jacobian blocks of an ADBench BA problem: the two per-observation tapes
// (the reprojection residual R^15 -> R^2 with the feature as 2 per-observation parameters,
// the `ba-param` example tape, and the weight error R -> R) each differentiated for every
// observation in one batched call.
//
// Backends: "reference", "cpu" and "gpu" are tapevm::Evaluators (the GPU from host spans,
// transfers included); "adolc" (when the build has ADOL-C) tapes the same templates once and
// calls jacobian() per observation, as its users would.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "config.hpp"
#include "tapevm/batch.hpp"
#include "tapevm/tape.hpp"

namespace tapevm::bench::adbench {

/// The weight-error tape: w -> 1 - w^2 (examples::ba_weight_error), recorded and optimised.
const Tape& weight_error_tape();
/// The reprojection tape: examples::example_tape("ba-param"), recorded and optimised once.
const Tape& reprojection_tape();

class BlockJacobians {
public:
    virtual ~BlockJacobians() = default;

    /// reprojection: inputs [points][15] (camera, point, weight), params [points][2] (feature)
    /// -> jacobians [points][2][15]. weight: inputs [points][1] -> derivatives [points].
    /// Throw tapevm::Error when an observation leaves the recorded branch (a zero rotation).
    virtual void reprojection(const Batch<double>& batch, std::span<double> jacobians) const = 0;
    virtual void reprojection(const Batch<float>& batch, std::span<float> jacobians) const = 0;
    virtual void weight(const Batch<double>& batch, std::span<double> derivatives) const = 0;
    virtual void weight(const Batch<float>& batch, std::span<float> derivatives) const = 0;

    /// True when weight() may be called from several threads at once, each on its part of
    /// the observations and evaluating on the thread that calls it (cpu, reference): the
    /// caller's threads then take the weight rows along with their other work instead of
    /// waking the backend's threads once more. False: one call for all (gpu, adolc).
    virtual bool weight_in_parts() const = 0;

    /// What evaluates: "cpu (avx2, 2 threads)", "adolc (scalar, 1 thread)".
    virtual std::string name() const = 0;
};

/// The backend names the command accepts, for its help and errors.
inline constexpr std::string_view backend_names = "cpu, reference, gpu, adolc, ceres";

/// Lanes per block of the cpu backend's reprojection Vm in f64 (cpu::Options::block_lanes).
/// The Vm's own sizing (half of L2 for a block's values and adjoints: about 96 lanes with the
/// 1 MiB L2 of the 2-core development VM) gave 3-5% slower blocks than 128 there, measured
/// in one process alternating two Vms (ba1: 1.66-1.69 against 1.57-1.61 ms; ba10: 31.1 against
/// 29.9 ms); 160 was as fast, 192 between, 256 and 512 slower.
inline constexpr std::size_t cpu_reprojection_block_lanes = 128;

/// The named backend with `threads` worker threads (cpu only; the others use what they use;
/// cpu's weight tape runs on the caller's threads, weight_in_parts()).
/// Throws tapevm::Error for an unknown name, Unsupported for adolc or ceres in f32 or in a
/// build without them, DeviceUnavailable for gpu without a device. ceres uses `threads` too.
std::unique_ptr<BlockJacobians> make_block_jacobians(std::string_view backend, Precision precision,
                                                     unsigned threads);

/// ADOL-C's backend (adbench_adolc.cpp, built only with ADOL-C).
std::unique_ptr<BlockJacobians> make_adolc_block_jacobians();
/// Ceres's AutoDiffCostFunction on `threads` threads (adbench_ceres.cpp, built only with the
/// ceres feature).
std::unique_ptr<BlockJacobians> make_ceres_block_jacobians(unsigned threads);

}  // namespace tapevm::bench::adbench
