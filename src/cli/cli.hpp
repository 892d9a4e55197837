// The tapevm command-line program, callable in-process (tests) and from main().
//
// Start reading at run() (cli.cpp), which dispatches to one command per file
// (command_*.cpp, described in commands.hpp). Helpers: arguments.hpp (options), csv.hpp
// (numbers in and out), files.hpp (reading files), backend.hpp (backend and precision names),
// demo_workload.hpp (the demo's batch and checks).
#pragma once

#include <ostream>
#include <span>
#include <string_view>

namespace tapevm::cli {

/// Runs `tapevm args...` (args without the program name), writing results to `out` and
/// warnings and errors to `err`. Returns the exit status: 0 on success, 1 when the demo's
/// check fails, 2 on bad input (unknown command or option, unreadable or malformed file,
/// ...) with exactly one line "error: ..." on `err`. Never throws.
int run(std::span<const std::string_view> args, std::ostream& out, std::ostream& err);

}  // namespace tapevm::cli
