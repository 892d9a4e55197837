// The tapevm commands. Each lives in its own command_<name>.cpp and is described by a
// Command: its name, a one-line summary for `tapevm help`, its full help text and the
// function that runs it. cli.cpp dispatches on the name and turns every tapevm::Error a
// command throws into "error: <message>" with exit status 2.
#pragma once

#include <ostream>
#include <span>
#include <string_view>

namespace tapevm::cli {

struct Command {
    std::string_view name;
    std::string_view summary;
    /// The help text: usage lines, then the options. Ends in a newline.
    std::string_view help;
    /// Runs the command on `args` (the arguments after its name); returns the exit status.
    /// Throws tapevm::Error on bad input.
    int (*run)(std::span<const std::string_view> args, std::ostream& out, std::ostream& err);
};

Command example_command();
Command inspect_command();
Command eval_command();
Command demo_command();
Command devices_command();
Command bench_command();
Command adbench_command();
Command bench_nn_command();  // command_bench_nn.cpp: the nn kernels' performance mode
Command train_command();     // command_train.cpp: the MLP and char-gpt training examples
Command sample_command();    // command_sample.cpp: text from a char-gpt checkpoint

}  // namespace tapevm::cli
