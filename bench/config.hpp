// What one `tapevm bench` run measures: the workloads, modes, backends, precisions, thread
// counts and batch sizes (every combination is one record), and how it times them.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "precision.hpp"

namespace tapevm::bench {

/// What a record evaluates. Native baselines always evaluate the primal (forward).
enum class Mode { forward, gradient, jacobian };
// The one precision enum of the programs (src/support/precision.hpp).
using Precision = support::Precision;
using support::precision_name;

std::string_view mode_name(Mode mode);

struct Config {
    /// Workload names (workloads.hpp); "all" is expanded by parse_config.
    std::vector<std::string> workloads;
    /// Empty: each workload's own mode (ba: jacobian, the others: gradient).
    std::vector<Mode> modes;
    /// Backend names (backends.hpp), in the order they run.
    std::vector<std::string> backends;
    std::vector<Precision> precisions;
    /// Thread counts; 0 is resolved to the hardware's thread count.
    std::vector<unsigned> threads;
    std::vector<std::size_t> points;
    /// Timed runs per record (after one checked run and warmup_seconds of warm-up runs); the
    /// record keeps their median.
    unsigned repeats = 5;
    /// Untimed runs before the timed ones, for at least this long (GPU clocks ramp up).
    double warmup_seconds = 0.5;
    /// Points of each record compared with the reference VM before it is timed.
    std::size_t checked_points = 64;
};

/// The command line's option values, as text: comma-separated lists, "all" where allowed.
struct ConfigText {
    std::string_view workload = "all";
    std::string_view mode = "auto";
    std::string_view backend = "all";
    std::string_view precision = "f64";
    std::string_view threads = "1";
    std::string_view points = "65536";
    std::string_view repeats = "5";
};

/// Parses and checks every value; throws tapevm::Error naming the option and the value
/// ("--backend: unknown backend 'fast' (known: ...)"). Backends named explicitly must be in
/// this build; "all" expands to those that are.
Config parse_config(const ConfigText& text);

}  // namespace tapevm::bench
