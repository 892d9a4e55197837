#include "cli.hpp"

#include <array>

#include "commands.hpp"
#include "dispatch.hpp"

namespace tapevm::cli {

int run(std::span<const std::string_view> args, std::ostream& out, std::ostream& err) {
    // bench and adbench run the benchmark program tapevm-bench (command_bench_program.cpp);
    // bench-nn, train and sample need the nn layer (commands_without_nn.cpp without it).
    static const std::array<Command, 10> commands = {example_command(),
                                                     inspect_command(),
                                                     eval_command(),
                                                     demo_command(),
                                                     devices_command(),
                                                     bench_program_command(),
                                                     adbench_program_command(),
                                                     bench_nn_command(),
                                                     train_command(),
                                                     sample_command()};
    static constexpr std::string_view description =
        "Records functions into bytecode tapes and evaluates their values and derivatives\n"
        "for batches of points.\n";
    return run_program({"tapevm", description, commands}, args, out, err);
}

}  // namespace tapevm::cli
