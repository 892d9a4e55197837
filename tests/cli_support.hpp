// Runs the tapevm command line (or tapevm-bench's) in-process for the CLI test suites: the exit status and
// what it printed on each stream.
#pragma once

#include <initializer_list>
#include <ostream>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "cli.hpp"

namespace tapevm::test {

struct CliResult {
    int status = -1;
    std::string out;
    std::string err;
};

/// A program's in-process entry point: tapevm::cli::run (tapevm) or run_bench_program (tapevm-bench).
using CliProgram = int (*)(std::span<const std::string_view>, std::ostream&, std::ostream&);

inline CliResult run_cli_program(CliProgram program, std::initializer_list<std::string> args) {
    const std::vector<std::string> owned(args);
    const std::vector<std::string_view> views(owned.begin(), owned.end());
    std::ostringstream out;
    std::ostringstream err;
    CliResult result;
    result.status = program(views, out, err);
    result.out = out.str();
    result.err = err.str();
    return result;
}

/// `tapevm args...`, in-process.
inline CliResult run_cli(std::initializer_list<std::string> args) {
    return run_cli_program(tapevm::cli::run, args);
}

}  // namespace tapevm::test
