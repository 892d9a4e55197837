// What the tapevm programs share (tapevm, and tapevm-bench when built): dispatch on the
// command's name, `help`, `--version`, and error reporting.
#pragma once

#include <ostream>
#include <span>
#include <string_view>

#include "commands.hpp"

namespace tapevm::cli {

/// A program: its name ("tapevm"), a paragraph for its help text (lines ending in '\n') and
/// its commands.
struct Program {
    std::string_view name;
    std::string_view description;
    std::span<const Command> commands;
};

/// Runs `program args...` (args without the program name) as cli.hpp's run() describes:
/// `help [COMMAND]`, `--help`, `-h`, `--version`, or a command of `program`. Every exception
/// becomes one line "error: ..." on `err` and exit status 2. A command whose help text is
/// empty answers `help COMMAND` itself, as `COMMAND --help`. Never throws.
int run_program(const Program& program, std::span<const std::string_view> args, std::ostream& out,
                std::ostream& err);

}  // namespace tapevm::cli
