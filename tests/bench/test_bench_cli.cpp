// `tapevm bench` run in-process: the table and the JSON file of a small checked run, --list,
// and bad options giving exit status 2 with one "error:" line.
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <iterator>
#include <random>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "../cli_support.hpp"
#include "bench_program.hpp"
#include "backends.hpp"
#include "cli.hpp"
#include "inputs_file.hpp"
#include "mlp.hpp"
#include "tapevm/error.hpp"
#include "tapevm/examples.hpp"
#include "tapevm/reference.hpp"
#include "tapevm/tape_file.hpp"
#include "workloads.hpp"

namespace {

namespace fs = std::filesystem;

using tapevm::test::CliResult;

/// `tapevm-bench args...` in-process: the program `tapevm bench` and `tapevm adbench` run.
CliResult run_cli(std::initializer_list<std::string> args) {
    return tapevm::test::run_cli_program(tapevm::cli::run_bench_program, args);
}

fs::path temp_path(std::string_view name) {
    std::random_device entropy;
    return fs::temp_directory_path() /
           ("tapevm_test_bench_" + std::to_string(entropy()) + "_" + std::string(name));
}

void check_error(const CliResult& result, std::string_view part) {
    INFO(result.err);
    CHECK(result.status == 2);
    CHECK(result.err.starts_with("error: "));
    CHECK(result.err.find(part) != std::string::npos);
    CHECK(result.out.empty());
}

}  // namespace

TEST_CASE("tapevm bench prints a table and writes JSON of checked records") {
    const fs::path json = temp_path("records.json");
    const CliResult result =
        run_cli({"bench", "--workload", "rosenbrock16,ba", "--backend", "reference,native-scalar", "--points",
                 "20", "--repeats", "1", "--precision", "all", "--json", json.string()});
    INFO(result.err);
    REQUIRE(result.status == 0);
    // Header and one line per record: per workload and precision native-simd (the baseline),
    // reference and native-scalar.
    std::istringstream table(result.out);
    std::string line;
    std::vector<std::string> lines;
    while (std::getline(table, line)) lines.push_back(line);
    REQUIRE(lines.size() == 1 + 2 * 2 * 3);
    CHECK(lines[0].starts_with("workload      mode      backend"));
    CHECK(lines[0].find("ns/point") != std::string::npos);
    CHECK(lines[0].find("ns/instr/lane") != std::string::npos);
    CHECK(lines[1].starts_with("rosenbrock16  forward   native-simd"));
    CHECK(result.err.find("[1] rosenbrock16 forward native-simd f64") != std::string::npos);

    std::ifstream file(json);
    std::stringstream contents;
    contents << file.rdbuf();
    const std::string text = contents.str();
    CHECK(text.starts_with("[\n  {\"workload\":\"rosenbrock16\""));
    const nlohmann::json records = nlohmann::json::parse(text);
    REQUIRE(records.is_array());
    CHECK(records.size() == 12);
    bool reference_jacobian = false;
    for (const nlohmann::json& record : records) {
        CHECK(record.at("checked") == true);
        reference_jacobian |= record.at("mode") == "jacobian" && record.at("backend") == "reference";
    }
    CHECK(reference_jacobian);
    fs::remove(json);
}

TEST_CASE("tapevm bench --list names the workloads and every backend") {
    const CliResult result = run_cli({"bench", "--list"});
    CHECK(result.status == 0);
    for (const std::string_view name : {"ba", "rosenbrock16", "trig16", "mlp", "mlp16"})
        CHECK(result.out.find(name) != std::string::npos);
    for (const tapevm::bench::BackendInfo& info : tapevm::bench::backends())
        CHECK(result.out.find("  " + std::string(info.name) + " ") != std::string::npos);
    CHECK(run_cli({"help", "bench"}).out.find("--workload W") != std::string::npos);
}

TEST_CASE("tapevm bench --write-inputs mlp16: the header, the network's constants, the points") {
    using namespace tapevm::bench;
    const fs::path path = temp_path("mlp16.bin");
    const CliResult result = run_cli({"bench", "--workload", "mlp16", "--points", "100", "--mode", "forward",
                                      "--write-inputs", path.string()});
    INFO(result.err);
    REQUIRE(result.status == 0);
    std::ifstream in(path, std::ios::binary);
    const auto read = [&in]<class T>(T value) {
        in.read(reinterpret_cast<char*>(&value), sizeof value);
        return value;
    };
    char head[24] = {};
    in.read(head, sizeof head);
    CHECK(std::string(head, 8) == "TVBENCH1");
    CHECK(std::string(head + 8) == "mlp16");
    const Workload& mlp16 = workload("mlp16");
    CHECK(read(std::uint32_t{}) == 0);  // forward
    CHECK(read(std::uint32_t{}) == 16);
    CHECK(read(std::uint32_t{}) == 0);
    CHECK(read(std::uint32_t{}) == 1);
    CHECK(read(std::uint32_t{}) == mlp16.tape.instruction_count());
    CHECK(read(std::uint64_t{}) == 100);
    // hidden^2 + (inputs + 3) hidden + 1 constants, jax_bench.py's way to the width.
    REQUIRE(read(std::uint64_t{}) == 16 * 16 + 19 * 16 + 1);
    const MlpModel& model = mlp_model(16);
    std::vector<double> expected;
    for (const auto* part :
         {&model.weights1, &model.biases1, &model.weights2, &model.biases2, &model.weights3})
        expected.insert(expected.end(), part->begin(), part->end());
    expected.push_back(model.bias3);
    std::vector<double> constants(expected.size());
    in.read(reinterpret_cast<char*>(constants.data()), static_cast<std::streamsize>(constants.size() * 8));
    CHECK(constants == expected);
    std::vector<double> inputs(100 * 16);
    in.read(reinterpret_cast<char*>(inputs.data()), static_cast<std::streamsize>(inputs.size() * 8));
    CHECK(inputs == mlp16.make_points(100).inputs);
    CHECK(read(std::uint64_t{}) == 64);  // sample points
    in.close();
    fs::remove(path);
}

TEST_CASE("parse_inputs_file reads back what --write-inputs writes and names the field of each defect") {
    using namespace tapevm::bench;
    const fs::path path = temp_path("rosenbrock16.bin");
    const CliResult result = run_cli({"bench", "--workload", "rosenbrock16", "--points", "5", "--mode",
                                      "gradient", "--write-inputs", path.string()});
    INFO(result.err);
    REQUIRE(result.status == 0);
    std::ifstream in(path, std::ios::binary);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    in.close();
    fs::remove(path);
    const auto bytes_of = [](const std::string& s) { return std::as_bytes(std::span(s.data(), s.size())); };

    const InputsFile file = parse_inputs_file(bytes_of(text));
    const Workload& rosenbrock = workload("rosenbrock16");
    CHECK(file.workload == "rosenbrock16");
    CHECK(file.mode == Mode::gradient);
    CHECK(file.n_inputs == 16);
    CHECK(file.n_params == 0);
    CHECK(file.n_outputs == 1);
    CHECK(file.instructions == rosenbrock.tape.instruction_count());
    CHECK(file.points == 5);
    CHECK(file.constants.empty());
    CHECK(file.inputs == rosenbrock.make_points(5).inputs);
    CHECK(file.params.empty());
    CHECK(file.sample == std::vector<std::uint64_t>{0, 1, 2, 3, 4});  // 64 sample points, at most all 5
    CHECK(file.width == 16);
    const tapevm::reference::Vm vm(rosenbrock.tape);
    CHECK(file.reference == vm.gradient(tapevm::Batch<double>{5, file.inputs, file.params}).values);

    for (std::size_t size = 0; size < text.size(); ++size)
        CHECK_THROWS_AS(parse_inputs_file(bytes_of(text.substr(0, size))), tapevm::Error);
    CHECK_THROWS_WITH_AS(parse_inputs_file(bytes_of(text + '\0')), doctest::Contains("trailing data"),
                         tapevm::Error);
    std::string bad_mode = text;
    bad_mode[24] = 3;
    CHECK_THROWS_WITH_AS(parse_inputs_file(bytes_of(bad_mode)),
                         doctest::Contains("byte 24: mode: unknown mode 3"), tapevm::Error);
    std::string bad_sample = text;
    const std::size_t sample_offset = 60 + 5 * 16 * 8 + 8;  // header, n_constants, inputs, sample count
    bad_sample[sample_offset] = 5;
    const std::string sample_error = "byte " + std::to_string(sample_offset) + ": sample[0]";
    CHECK_THROWS_WITH_AS(parse_inputs_file(bytes_of(bad_sample)), doctest::Contains(sample_error.c_str()),
                         tapevm::Error);
}

TEST_CASE("tapevm bench: bad options are errors with exit status 2") {
    check_error(run_cli({"bench", "--workload", "nope"}), "unknown workload 'nope'");
    check_error(run_cli({"bench", "--backend", "fast"}), "unknown backend 'fast'");
    check_error(run_cli({"bench", "--points", "0"}), "--points: '0'");
    check_error(run_cli({"bench", "--repeats", "many"}), "--repeats: 'many'");
    check_error(run_cli({"bench", "--frobnicate"}), "--frobnicate");
    check_error(run_cli({"bench", "extra"}), "unexpected argument 'extra'");
    const fs::path missing = temp_path("no_such_dir") / "out.json";
    check_error(run_cli({"bench", "--workload", "rosenbrock16", "--backend", "reference", "--points", "3",
                         "--json", missing.string()}),
                "cannot write");
}

TEST_CASE("tapevm bench --write-tape writes the workload's tape") {
    const fs::path path = temp_path("trig16.tape");
    const CliResult result = run_cli({"bench", "--workload", "trig16", "--write-tape", path.string()});
    INFO(result.err);
    CHECK(result.status == 0);
    CHECK(result.out.find("176 instructions") != std::string::npos);
    CHECK(tapevm::load_file(path.string()).dump() == tapevm::examples::example_tape("trig16").dump());
    fs::remove(path);
    check_error(run_cli({"bench", "--workload", "ba,trig16", "--write-tape", path.string()}),
                "--write-tape needs one --workload");
}
