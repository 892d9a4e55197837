// main() of tapevm-bench (bench_program.hpp).
#include <iostream>
#include <string_view>
#include <vector>

#include "bench_program.hpp"

int main(int argc, char** argv) {
    const std::vector<std::string_view> args(argv + 1, argv + argc);
    return tapevm::cli::run_bench_program(args, std::cout, std::cerr);
}
