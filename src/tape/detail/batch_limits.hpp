// The most points one evaluation may take (issue 24 item 5, limits): every buffer of a call
// holds points * (values per point) values, [points][n_outputs][n_inputs] the widest, and
// that count, in bytes, must fit in a ptrdiff_t. Beyond it the products that size the
// buffers would wrap around (2^63 points of 2 inputs "need" 0 values), so the batch checks
// (batch.cpp) and the GPU VM's device-resident calls refuse such counts first.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace tapevm {
class Tape;
}

namespace tapevm::detail {

/// The widest buffer of any call on `tape`, in values per point: max(1, n, m, p, n * m).
std::uint64_t widest_values_per_point(const Tape& tape);

/// The most points a call on `tape` in Real (of `real_size` bytes) may take.
std::size_t max_points(const Tape& tape, std::size_t real_size);

/// Throws Unsupported ("<where>: <points> points ... more than the <limit>-point limit")
/// when `points` exceeds max_points(tape, real_size).
void check_points(const Tape& tape, std::size_t points, std::size_t real_size, const std::string& where);

}  // namespace tapevm::detail
