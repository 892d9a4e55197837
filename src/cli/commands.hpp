// The tapevm commands. Each lives in its own command_<name>.cpp and is described by a
// Command: its name, a one-line summary for `tapevm help`, its full help text and the
// function that runs it. dispatch.cpp dispatches on the name and turns every tapevm::Error a
// command throws into "error: <message>" with exit status 2.
//
// Two programs: tapevm (cli.cpp) and the benchmark program tapevm-bench (bench_program.cpp,
// built with the meson feature bench), which alone links the benchmark harness (bench/) and
// its peers (ADOL-C). `tapevm bench` and `tapevm adbench` run tapevm-bench.
#pragma once

#include <ostream>
#include <span>
#include <string_view>

namespace tapevm::cli {

struct Command {
    std::string_view name;
    std::string_view summary;
    /// The help text: usage lines, then the options. Ends in a newline. Empty for a command
    /// that prints its own (`help NAME` then runs `NAME --help`).
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
Command bench_command();    // command_bench.cpp: tapevm-bench's bench (bench/'s driver)
Command adbench_command();  // command_adbench.cpp: tapevm-bench's adbench
/// command_bench_program.cpp: tapevm's bench and adbench, which run the same command of
/// tapevm-bench (the program of that name in tapevm's own folder) with the same arguments;
/// tapevm::Unsupported where it is not there (tapevm built without the feature bench).
/// `tapevm bench --nn ...` is `tapevm bench-nn ...`.
Command bench_program_command();
Command adbench_program_command();
// Without the nn layer (meson feature nn), commands_without_nn.cpp defines these three:
// each throws tapevm::Unsupported.
Command bench_nn_command();  // command_bench_nn.cpp: the nn kernels' performance mode
Command train_command();     // command_train.cpp: the MLP and char-gpt training examples
Command sample_command();    // command_sample.cpp: text from a char-gpt checkpoint

}  // namespace tapevm::cli
