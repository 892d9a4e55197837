// tapevm inspect: print a .tape file's counts and instructions.
#include "arguments.hpp"
#include "commands.hpp"
#include "files.hpp"

namespace tapevm::cli {
namespace {

constexpr std::string_view help = R"(usage: tapevm inspect FILE

Prints the counts of the .tape file FILE (inputs, parameters, outputs, instructions,
constants, guards) and its instructions, one per line, then its outputs and guards.
)";

constexpr OptionSpec options[] = {{"--help", false}};

int run(std::span<const std::string_view> args, std::ostream& out, std::ostream&) {
    const Arguments arguments = parse_arguments("inspect", args, options);
    if (arguments.answered_help(help, out)) return 0;
    arguments.expect_positional(1, 1, "a tape file: tapevm inspect FILE");
    const Tape tape = read_tape_file(arguments.positional().front());
    out << tape.dump();
    return 0;
}

}  // namespace

Command inspect_command() { return {"inspect", "print a .tape file's counts and instructions", help, run}; }

}  // namespace tapevm::cli
