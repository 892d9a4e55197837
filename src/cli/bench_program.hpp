// tapevm-bench, the benchmark program (built with the meson feature bench), callable
// in-process (tests/bench) and from bench_main.cpp. Its commands, bench and adbench, are the
// ones `tapevm bench` and `tapevm adbench` run; it alone links the benchmark harness (bench/)
// and its peers (ADOL-C).
#pragma once

#include <ostream>
#include <span>
#include <string_view>

namespace tapevm::cli {

/// Runs `tapevm-bench args...` (args without the program name), as run() (cli.hpp) runs tapevm:
/// exit status 0 on success, 1 when a check fails, 2 on bad input with one line "error: ..."
/// on `err`. Never throws.
int run_bench_program(std::span<const std::string_view> args, std::ostream& out, std::ostream& err);

}  // namespace tapevm::cli
