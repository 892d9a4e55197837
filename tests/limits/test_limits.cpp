// Limits (issue 24 item 5) of the reference VM, the CPU VM (every instruction set the machine
// has) and the command line: batches of 0 and 1 points, counts past int32 and past the size_t
// limit (limits_support.hpp). The GPU VM: test_limits_gpu.cpp.
#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

#include <doctest/doctest.h>

#include "cli_support.hpp"
#include "limits_support.hpp"
#include "tapevm/cpu.hpp"
#include "tapevm/reference.hpp"
#include "tapevm/tape_file.hpp"

namespace tapevm::test {
namespace {

TEST_CASE("limits: the reference VM") {
    const reference::Vm vector_vm(limits_tape());
    const reference::Vm scalar_vm(limits_scalar_tape());
    check_limits<double>(vector_vm, scalar_vm);
    check_limits<float>(vector_vm, scalar_vm);
}

TEST_CASE("limits: the CPU VM, every instruction set") {
    for (const cpu::Isa isa : cpu::supported_isas()) {
        cpu::Options options;
        options.isa = isa;
        const cpu::Vm vector_vm(limits_tape(), options);
        const cpu::Vm scalar_vm(limits_scalar_tape(), options);
        INFO(vector_vm.name());
        check_limits<double>(vector_vm, scalar_vm);
        check_limits<float>(vector_vm, scalar_vm);
    }
}

TEST_CASE("limits: the command line refuses 0 points and counts past its limits, naming them") {
    const auto dir = std::filesystem::temp_directory_path() / ("tapevm-limits-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    const std::string tape_path = (dir / "f.tape").string();
    save_file(limits_tape(), tape_path);
    const std::string empty_path = (dir / "empty.csv").string();
    const std::string one_path = (dir / "one.csv").string();
    std::ofstream(empty_path).flush();
    std::ofstream(one_path) << "0.75,-1.5\n";

    const CliResult empty = run_cli({"eval", tape_path, "--inputs", empty_path, "--mode", "forward"});
    CHECK(empty.status != 0);
    CHECK(empty.err.find("no input points") != std::string::npos);

    const CliResult one = run_cli({"eval", tape_path, "--inputs", one_path, "--mode", "forward"});
    REQUIRE(one.status == 0);
    CHECK(std::stod(one.out) == doctest::Approx(0.75 * -1.5 + std::sin(0.75)));

    // 2^31 + 1 points: past the demo's limit, refused before allocating, naming it.
    const CliResult demo = run_cli({"demo", "--points", "2147483649"});
    CHECK(demo.status != 0);
    CHECK(demo.err.find("--points") != std::string::npos);
    CHECK(demo.err.find("10000000") != std::string::npos);
    std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tapevm::test
