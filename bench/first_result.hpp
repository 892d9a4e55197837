// Time to first result (`tapevm bench --first-result`): how long a new tape takes from its
// gpu::Vm (Engine::compiled) to its first results on the host, with the compiled kernel built
// in the background (CompileWait::background: the first call runs on the interpreter), and
// how long until the compiled kernel is in use. Issue 21 item 4; the target is 50 ms.
#pragma once

#include <cstddef>
#include <ostream>
#include <string>
#include <vector>

#include "config.hpp"

namespace tapevm::bench {

struct FirstResultRecord {
    std::string workload;
    Mode mode = Mode::forward;
    Precision precision = Precision::f32;
    std::size_t points = 0;
    double first_result_s = 0;    // Vm construction to the first call's results on the host
    bool first_compiled = false;  // the first call ran the compiled kernel (else the interpreter)
    double compiled_s =
        0;                // Vm construction to the end of the first call on the compiled kernel (NaN: never)
    double build_s = 0;   // the kernel's build on its compile thread (CompilePlan::total_s)
    double queued_s = 0;  // its wait for a compile thread
    bool spirv_from_cache = false;  // the build found the SPIR-V (or pipeline) in a cache
    std::string reason;             // why the compiled kernel is not used (empty when it is)
    double max_error = 0;           // the first results against the reference VM (check.hpp)
};

/// Measures every workload x mode x precision x points of `config` (backends, threads and
/// repeats ignored) on a new Vm each, in order; the device is opened first (its time in
/// `device_open_s`), so no record pays for it. Each first result is checked against the
/// reference VM (CheckFailed when it is off). `cold`: the kernels are built from nothing (the
/// caller points TAPEVM_CACHE_DIR at an empty folder); it is printed only.
std::vector<FirstResultRecord> measure_first_results(const Config& config, double& device_open_s,
                                                     std::string& device_name, std::ostream& progress);

void print_first_results(const std::vector<FirstResultRecord>& records, double device_open_s,
                         const std::string& device_name, bool cold, std::ostream& out);

}  // namespace tapevm::bench
