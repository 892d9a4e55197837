// The points of a workload in a binary file, for peers outside this process (jax_bench.py):
// the same inputs every backend here sees, the constants they cannot rebuild (the MLP's
// weights), and the reference VM's results at a sample of the points so the peer checks
// itself exactly as every record here is checked.
//
// Layout (little-endian, no padding):
//   char[8]   magic "TVBENCH1"
//   char[16]  workload name, NUL-padded
//   u32       mode (0 forward, 1 gradient, 2 jacobian)
//   u32       n_inputs, n_params, n_outputs, instructions (of the recorded tape)
//   u64       points
//   u64       n_constants; f64[n_constants] (mlp, mlp16: weights1, biases1, weights2,
//             biases2, weights3, bias3 of mlp.hpp's model, so n_constants = hidden^2 +
//             (n_inputs + 3) hidden + 1 gives the hidden width; empty otherwise)
//   f64       inputs [points][n_inputs], then params [points][n_params]
//   u64       sample; u64[sample] point indices (spread over the first min(points, 65536),
//             so every batch of 2^16 points or more contains them)
//   u64       width (values per point's result in mode); f64 reference [sample][width]
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "config.hpp"
#include "workloads.hpp"

namespace tapevm::bench {

/// Writes `points` points of `workload` and the reference VM's results in `mode` at 64
/// sample points to `path`. Throws tapevm::Error when the file cannot be written or the
/// workload has no such mode.
void write_inputs_file(const std::string& path, const Workload& workload, Mode mode, std::size_t points);

/// An inputs file read back: every field of the layout above.
struct InputsFile {
    std::string workload;
    Mode mode = Mode::forward;
    std::uint32_t n_inputs = 0, n_params = 0, n_outputs = 0, instructions = 0;
    std::uint64_t points = 0;
    std::vector<double> constants;
    std::vector<double> inputs;  // [points][n_inputs]
    std::vector<double> params;  // [points][n_params]
    std::vector<std::uint64_t> sample;
    std::uint64_t width = 0;
    std::vector<double> reference;  // [sample][width]
};

/// Parses a whole inputs file image (inputs_file_reader.cpp, apart from the writer so that
/// fuzz/ links it alone). Checks the magic, a NUL-padded workload name, a known mode, every
/// section against the bytes that remain before allocating it (64-bit arithmetic, no
/// overflow), sample indices below min(points, 65536), the width of the mode (forward
/// n_outputs, gradient n_inputs, jacobian n_outputs x n_inputs) and no trailing bytes. Each
/// failure throws tapevm::Error naming the byte offset and the field.
InputsFile parse_inputs_file(std::span<const std::byte> bytes);

}  // namespace tapevm::bench
