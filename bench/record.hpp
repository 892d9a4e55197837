// One measured combination (workload, mode, backend, precision, threads, points), and its two
// outputs: a table for people and JSON for machines (bench/README.md lists the fields).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <ostream>
#include <span>
#include <string>
#include <vector>

namespace tapevm::bench {

struct Record {
    std::string workload, mode, backend, precision;
    unsigned threads = 1;
    std::size_t points = 0;
    /// Nanoseconds per point: the median of the timed runs, their minimum, and each run's.
    double ns_per_point = 0;
    double min_ns_per_point = 0;
    std::vector<double> runs_ns_per_point;
    /// The tape's instruction count and ns_per_point / instructions.
    std::uint32_t instructions = 0;
    double ns_per_instruction_lane = 0;
    std::string isa, device;
    /// The check against the reference VM (always passed: a failed check is never timed).
    bool checked = false;
    double max_error = 0, tolerance = 0;
    std::size_t checked_points = 0;
    /// ns_per_point / native-simd's primal of the same workload, precision, threads and
    /// points; NaN when that baseline is missing. Null in JSON.
    double ratio_to_native_simd = std::nan("");
    /// Seconds spent before the timed runs (taping, compiling, uploading), when a backend
    /// reports them (jax's compile time); NaN otherwise.
    double setup_seconds = std::nan("");
    /// The median of the timed runs' device time per point (Runner::device_seconds): what the
    /// GPU spent, the rest of ns_per_point being the host's cost of a call; NaN when unknown.
    double device_ns_per_point = std::nan("");
};

/// The aligned table: one line per record.
void print_table(std::span<const Record> records, std::ostream& out);

/// A JSON array of objects, one per record, ending in a newline.
void write_json(std::span<const Record> records, std::ostream& out);

}  // namespace tapevm::bench
