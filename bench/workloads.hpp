// The fixed workloads of `tapevm bench`: each a recorded tape, the mode it is measured in by
// default and a generator of its points (random with a fixed seed, near meaningful values).
//   ba            ADBench bundle adjustment (examples::ba_residual, the "ba-param" tape):
//                 15 inputs, the feature as 2 per-point parameters, 2 outputs; jacobian
//   rosenbrock16  examples::rosenbrock16, 16 inputs in [-2, 2); gradient
//   trig16        examples::trig16, 16 inputs in [-3, 3); gradient
//   mlp           mlp.hpp's 16 -> 64 -> 64 -> 1 tanh network, 15,825 instructions; gradient
//   mlp16         the same network at width 16 (16 -> 16 -> 16 -> 1), its own weights and
//                 points, 1,665 instructions (compile times of a small tape, ours and JAX's); gradient
// The native baselines (backend_native_*.cpp) evaluate the same templates compiled.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "config.hpp"
#include "mlp.hpp"
#include "tapevm/tape.hpp"

namespace tapevm::bench {

enum class WorkloadKind { ba, rosenbrock16, trig16, mlp, mlp16 };

/// Points of a workload in double, row-major: inputs [points][n_inputs], params
/// [points][n_params] (per point) or empty.
struct Points {
    std::size_t count = 0;
    std::vector<double> inputs;
    std::vector<double> params;
};

struct Workload {
    WorkloadKind kind;
    std::string_view name;
    std::string_view description;
    Tape tape;
    /// The mode measured when --mode is auto.
    Mode default_mode;
    /// The network's weights for mlp and mlp16 (mlp_model()); null for the others.
    const MlpModel* mlp = nullptr;

    /// `points` points from the workload's fixed seed: the same numbers on every platform and
    /// run; the first k points of a larger batch are the k points of a smaller one.
    Points make_points(std::size_t points) const;
    /// Whether `mode` applies: gradient needs one output.
    bool supports(Mode mode) const { return mode != Mode::gradient || tape.output_count() == 1; }
};

/// The workload names, in the order "all" runs them.
std::span<const std::string_view> workload_names();

/// The named workload, recorded and optimised once per process (thread-safe). Throws
/// tapevm::Error naming the known workloads for an unknown name.
const Workload& workload(std::string_view name);

}  // namespace tapevm::bench
