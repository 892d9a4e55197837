// `tapevm bench`'s driver, the entry point of bench/: runs every combination of a Config,
// each checked against the reference VM before it is timed, and returns the records.
//
// Reading order: config.hpp (what a run measures), workloads.hpp (the functions and their
// points), runner.hpp (the adapter each backend implements) and backends.hpp (the list),
// check.hpp (the correctness gate), record.hpp (table and JSON), then this driver.
#pragma once

#include <ostream>
#include <vector>

#include "config.hpp"
#include "record.hpp"
#include "runner.hpp"
#include "tapevm/error.hpp"

namespace tapevm::bench {

/// A backend's results differ from the reference VM's beyond the tolerance: the record is not
/// timed and the run stops (`tapevm bench` exits with status 1).
class CheckFailed : public Error {
public:
    using Error::Error;
};

/// One record of `problem`: runner.prepare(points), one run checked against the reference VM
/// (CheckFailed when it fails: then nothing is timed), then config.repeats timed runs. The
/// record is named for `backend`; its ratio is left NaN.
Record measure(Runner& runner, std::string_view backend, const Problem& problem, const Points& points,
               const Config& config);

/// Runs `config`: for each workload, batch size, precision and thread count, first
/// native-simd's primal (the baseline of every ratio, measured even when not asked for), then
/// each backend in each mode. A backend that cannot serve a combination (ADOL-C in float,
/// gradient of a 2-output tape) is skipped with a line on `progress`; single-threaded
/// backends are measured once per thread list. Progress lines go to `progress`. Throws
/// CheckFailed on a failed check, tapevm::Error on other failures.
std::vector<Record> run_bench(const Config& config, std::ostream& progress);

}  // namespace tapevm::bench
