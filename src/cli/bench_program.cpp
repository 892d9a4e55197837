#include "bench_program.hpp"

#include <array>

#include "commands.hpp"
#include "dispatch.hpp"

namespace tapevm::cli {

int run_bench_program(std::span<const std::string_view> args, std::ostream& out, std::ostream& err) {
    static const std::array<Command, 2> commands = {bench_command(), adbench_command()};
    static constexpr std::string_view description =
        "The benchmark program of tapevm: fixed workloads timed on every backend against native\n"
        "code and the peers in this build, every result checked against the reference VM first.\n"
        "'tapevm bench' and 'tapevm adbench' run it.\n";
    return run_program({"tapevm-bench", description, commands}, args, out, err);
}

}  // namespace tapevm::cli
