// Runs the tapevm command line in-process for the CLI test suites: the exit status and what
// it printed on each stream.
#pragma once

#include <initializer_list>
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

inline CliResult run_cli(std::initializer_list<std::string> args) {
    const std::vector<std::string> owned(args);
    const std::vector<std::string_view> views(owned.begin(), owned.end());
    std::ostringstream out;
    std::ostringstream err;
    CliResult result;
    result.status = tapevm::cli::run(views, out, err);
    result.out = out.str();
    result.err = err.str();
    return result;
}

}  // namespace tapevm::test
