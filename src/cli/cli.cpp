#include "cli.hpp"

#include <array>
#include <exception>
#include <new>
#include <string>

#include "arguments.hpp"
#include "commands.hpp"
#include "tapevm/error.hpp"

#ifndef TAPEVM_VERSION
#error "TAPEVM_VERSION must be defined by the build (meson.project_version())"
#endif

namespace tapevm::cli {
namespace {

std::array<Command, 10> all_commands() {
    return {example_command(), inspect_command(), eval_command(), demo_command(), devices_command(),
            bench_command(), adbench_command(), bench_nn_command(), train_command(), sample_command()};
}

void print_help(std::ostream& out) {
    out << "usage: tapevm COMMAND [ARGUMENTS]\n\n"
           "Records functions into bytecode tapes and evaluates their values and derivatives\n"
           "for batches of points.\n\ncommands:\n";
    for (const Command& command : all_commands()) {
        out << "  " << command.name << std::string(10 - command.name.size(), ' ') << command.summary << '\n';
    }
    out << "  help      this text; 'tapevm help COMMAND' for a command's options\n\n"
           "options:\n"
           "  --help     this text\n"
           "  --version  the version\n";
}

const Command* find_command(std::string_view name) {
    static const std::array<Command, 10> commands = all_commands();
    for (const Command& command : commands) {
        if (command.name == name) return &command;
    }
    return nullptr;
}

[[noreturn]] void unknown_command(std::string_view name) {
    throw UsageError("unknown command '" + std::string(name) + "' (see 'tapevm help')");
}

int dispatch(std::span<const std::string_view> args, std::ostream& out, std::ostream& err) {
    if (args.empty()) throw UsageError("no command given (see 'tapevm help')");
    const std::string_view name = args.front();
    if (name == "help" || name == "--help" || name == "-h") {
        if (args.size() > 2) throw UsageError("help: unexpected argument '" + std::string(args[2]) + "'");
        if (args.size() == 1) {
            print_help(out);
        } else if (const Command* command = find_command(args[1])) {
            out << command->help;
        } else {
            unknown_command(args[1]);
        }
        return 0;
    }
    if (name == "--version") {
        if (args.size() > 1)
            throw UsageError("--version: unexpected argument '" + std::string(args[1]) + "'");
        out << "tapevm " << TAPEVM_VERSION << '\n';
        return 0;
    }
    const Command* command = find_command(name);
    if (command == nullptr) {
        if (name.starts_with("-"))
            throw UsageError("unknown option '" + std::string(name) + "' (see 'tapevm help')");
        unknown_command(name);
    }
    return command->run(args.subspan(1), out, err);
}

// Error messages are one line: newlines inside a message become spaces.
void report_error(std::ostream& err, std::string_view message) {
    std::string line(message);
    for (char& c : line) {
        if (c == '\n' || c == '\r') c = ' ';
    }
    err << "error: " << line << '\n';
}

}  // namespace

int run(std::span<const std::string_view> args, std::ostream& out, std::ostream& err) {
    try {
        return dispatch(args, out, err);
    } catch (const std::bad_alloc&) {
        report_error(err, "out of memory");
    } catch (const std::exception& error) {  // tapevm::Error and anything the standard library throws
        report_error(err, error.what());
    }
    return 2;
}

}  // namespace tapevm::cli
