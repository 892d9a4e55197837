// tapevm example: write a built-in example tape to a file, or list the examples.
#include <string>

#include "arguments.hpp"
#include "commands.hpp"
#include "tapevm/examples.hpp"
#include "tapevm/tape_file.hpp"

namespace tapevm::cli {
namespace {

constexpr std::string_view help = R"(usage: tapevm example NAME --out FILE
       tapevm example [--list]

Records the built-in example NAME, optimises it and writes it to FILE as a .tape file.
Without NAME, or with --list, lists the examples.

options:
  --out FILE    the .tape file to write
  --list        list the examples with a description each
)";

constexpr OptionSpec options[] = {{"--out", true}, {"--list", false}, {"--help", false}};

void list_examples(std::ostream& out) {
    std::size_t width = 0;
    for (const auto& example : examples::example_list()) width = std::max(width, example.name.size());
    for (const auto& example : examples::example_list()) {
        out << "  " << example.name << std::string(width - example.name.size() + 2, ' ')
            << example.description << '\n';
    }
}

int run(std::span<const std::string_view> args, std::ostream& out, std::ostream&) {
    const Arguments arguments = parse_arguments("example", args, options);
    if (arguments.answered_help(help, out)) return 0;
    arguments.expect_positional(0, 1, "an example name");
    if (arguments.has("--list") || arguments.positional().empty()) {
        if (arguments.has("--out")) throw UsageError("example: --out needs an example name");
        out << "examples:\n";
        list_examples(out);
        return 0;
    }
    const std::string_view name = arguments.positional().front();
    const std::string_view path = arguments.required("--out", "FILE (the .tape file to write)");
    const Tape tape = examples::example_tape(name);
    save_file(tape, std::string(path));
    out << "wrote " << name << " to " << path << ": " << tape.input_count() << " inputs, "
        << tape.param_count() << " parameters, " << tape.output_count() << " outputs, "
        << tape.instruction_count() << " instructions\n";
    return 0;
}

}  // namespace

Command example_command() {
    return {"example", "write a built-in example tape to a file, or list the examples", help, run};
}

}  // namespace tapevm::cli
