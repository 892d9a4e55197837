#include "dispatch.hpp"

#include <exception>
#include <new>
#include <string>

#include "arguments.hpp"
#include "tapevm/error.hpp"

#ifndef TAPEVM_VERSION
#error "TAPEVM_VERSION must be defined by the build (meson.project_version())"
#endif

namespace tapevm::cli {
namespace {

void print_help(const Program& program, std::ostream& out) {
    out << "usage: " << program.name << " COMMAND [ARGUMENTS]\n\n" << program.description << "\ncommands:\n";
    for (const Command& command : program.commands) {
        out << "  " << command.name << std::string(10 - command.name.size(), ' ') << command.summary << '\n';
    }
    out << "  help      this text; '" << program.name << " help COMMAND' for a command's options\n\n"
        << "options:\n"
           "  --help     this text\n"
           "  --version  the version\n";
}

const Command* find_command(const Program& program, std::string_view name) {
    for (const Command& command : program.commands) {
        if (command.name == name) return &command;
    }
    return nullptr;
}

[[noreturn]] void unknown_command(const Program& program, std::string_view name) {
    throw UsageError("unknown command '" + std::string(name) + "' (see '" + std::string(program.name) +
                     " help')");
}

int dispatch(const Program& program, std::span<const std::string_view> args, std::ostream& out,
             std::ostream& err) {
    const std::string see_help = " (see '" + std::string(program.name) + " help')";
    if (args.empty()) throw UsageError("no command given" + see_help);
    const std::string_view name = args.front();
    if (name == "help" || name == "--help" || name == "-h") {
        if (args.size() > 2) throw UsageError("help: unexpected argument '" + std::string(args[2]) + "'");
        if (args.size() == 1) {
            print_help(program, out);
        } else if (const Command* command = find_command(program, args[1])) {
            if (command->help.empty()) {
                const std::string_view help_option[] = {"--help"};
                return command->run(std::span<const std::string_view>(help_option), out, err);
            }
            out << command->help;
        } else {
            unknown_command(program, args[1]);
        }
        return 0;
    }
    if (name == "--version") {
        if (args.size() > 1)
            throw UsageError("--version: unexpected argument '" + std::string(args[1]) + "'");
        out << program.name << ' ' << TAPEVM_VERSION << '\n';
        return 0;
    }
    const Command* command = find_command(program, name);
    if (command == nullptr) {
        if (name.starts_with("-")) throw UsageError("unknown option '" + std::string(name) + "'" + see_help);
        unknown_command(program, name);
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

int run_program(const Program& program, std::span<const std::string_view> args, std::ostream& out,
                std::ostream& err) {
    try {
        return dispatch(program, args, out, err);
    } catch (const std::bad_alloc&) {
        report_error(err, "out of memory");
    } catch (const std::exception& error) {  // tapevm::Error and anything the standard library throws
        report_error(err, error.what());
    }
    return 2;
}

}  // namespace tapevm::cli
