// The timing loop of the programs (the benchmark, tapevm adbench, the demo): a steady clock,
// an untimed warm-up, and the seconds of each timed run.
#pragma once

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

namespace tapevm::support {

using Clock = std::chrono::steady_clock;

/// "12.345 ms": seconds as milliseconds with three decimals (the benchmarks' tables).
inline std::string milliseconds(double seconds) {
    char text[48];
    std::snprintf(text, sizeof text, "%.3f ms", seconds * 1e3);
    return text;
}

/// Seconds from `start` to now.
inline double seconds_since(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
}

/// Calls `run` until at least `seconds` have passed, and at least once: untimed runs before the
/// timed ones (a GPU that idled raises its clocks, caches and page tables fill).
template <class Run> void warm_up(double seconds, Run&& run) {
    const auto start = Clock::now();
    do {
        run();
    } while (seconds_since(start) < seconds);
}

/// The seconds of each of `repeats` calls of `run`; `after_each` is called after each call,
/// outside the timed interval (progress, the device's own timers).
template <class Run, class After>
std::vector<double> timed_runs(unsigned repeats, Run&& run, After&& after_each) {
    std::vector<double> seconds;
    seconds.reserve(repeats);
    for (unsigned r = 0; r < repeats; ++r) {
        const auto start = Clock::now();
        run();
        seconds.push_back(seconds_since(start));
        after_each();
    }
    return seconds;
}

template <class Run> std::vector<double> timed_runs(unsigned repeats, Run&& run) {
    return timed_runs(repeats, run, [] {});
}

}  // namespace tapevm::support
