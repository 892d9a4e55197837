#include "tapevm/batch.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>

#include "detail/batch_limits.hpp"
#include "tapevm/error.hpp"
#include "tapevm/tape.hpp"

namespace tapevm {

namespace detail {

std::uint64_t widest_values_per_point(const Tape& tape) {
    const std::uint64_t n = tape.input_count(), m = tape.output_count(), p = tape.param_count();
    return std::max({std::uint64_t{1}, n, m, p, n * m});
}

std::size_t max_points(const Tape& tape, std::size_t real_size) {
    const auto bytes = static_cast<std::uint64_t>(std::numeric_limits<std::ptrdiff_t>::max());
    return static_cast<std::size_t>(bytes / real_size / widest_values_per_point(tape));
}

void check_points(const Tape& tape, std::size_t points, std::size_t real_size, const std::string& where) {
    const std::size_t limit = max_points(tape, real_size);
    if (points > limit) {
        throw Unsupported(
            where + ": " + std::to_string(points) + " points, more than the " + std::to_string(limit) +
            "-point limit for this tape (" + std::to_string(widest_values_per_point(tape)) +
            " values per point in its widest buffer; every buffer's size in bytes must fit in a ptrdiff_t)");
    }
}

}  // namespace detail

void check_size(const std::string& where, const std::string& argument, std::size_t expected,
                std::size_t buffer_size) {
    if (buffer_size != expected) throw ShapeError(where, argument, expected, buffer_size);
}

template <class Real> void check_batch(const Tape& tape, const Batch<Real>& batch, const std::string& where) {
    detail::check_points(tape, batch.points, sizeof(Real), where);  // so that no product below wraps
    check_size(where, "inputs", batch.points * tape.input_count(), batch.inputs.size());
    const std::size_t shared = tape.param_count();
    if (batch.params.size() != shared && batch.params.size() != batch.points * shared) {
        throw ShapeError(where,
                         "params (expected " + std::to_string(shared) + " shared or " +
                             std::to_string(batch.points * shared) + " per point)",
                         shared, batch.params.size());
    }
}

template void check_batch(const Tape&, const Batch<double>&, const std::string&);
template void check_batch(const Tape&, const Batch<float>&, const std::string&);

}  // namespace tapevm
