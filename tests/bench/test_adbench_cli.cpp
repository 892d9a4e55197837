// `tapevm adbench` run in-process: test.txt checked and timed with its JSON, a failed check
// giving exit status 1, bad arguments and files giving exit status 2 with one "error:" line.
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <string_view>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "../cli_support.hpp"
#include "bench_program.hpp"

namespace {

namespace fs = std::filesystem;

using tapevm::test::CliResult;

/// `tapevm-bench args...` in-process: the program `tapevm bench` and `tapevm adbench` run.
CliResult run_cli(std::initializer_list<std::string> args) {
    return tapevm::test::run_cli_program(tapevm::cli::run_bench_program, args);
}

const std::string data_folder = TAPEVM_ADBENCH_DATA;

fs::path temp_path(std::string_view name) {
    std::random_device entropy;
    return fs::temp_directory_path() /
           ("tapevm_test_adbench_cli_" + std::to_string(entropy()) + "_" + std::string(name));
}

std::string read_text(const fs::path& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

void check_error(const CliResult& result, std::string_view part) {
    INFO(result.err);
    CHECK(result.status == 2);
    CHECK(result.err.find("error: ") != std::string::npos);
    CHECK(result.err.find(part) != std::string::npos);
    CHECK(result.out.empty());
}

}  // namespace

TEST_CASE("tapevm adbench ba test.txt: times, ratio, checks and JSON") {
    const fs::path json = temp_path("result.json");
    const CliResult result = run_cli({"adbench", "ba", data_folder + "/test.txt", "--threads", "2",
                                      "--repeats", "2", "--json", json.string()});
    INFO(result.err);
    INFO(result.out);
    REQUIRE(result.status == 0);
    CHECK(result.out.starts_with(
        "ADBench BA test.txt: 2 cameras, 10 points, 10 observations; Jacobian 30 x 62, "
        "310 nonzeros\n"));
    CHECK(result.out.find("\nobjective  ") != std::string::npos);
    CHECK(result.out.find("\njacobian   ") != std::string::npos);
    CHECK(result.out.find("\nratio      ") != std::string::npos);
    CHECK(result.out.find("check: csr structure exact\n") != std::string::npos);
    CHECK(result.out.find("check: 10 observations vs the reference VM") != std::string::npos);
    CHECK(result.out.find("check: ADBench expected outputs (ba_expected_test_outputs.json): max rho") !=
          std::string::npos);
    CHECK(result.out.ends_with("passed\n"));
    // Not a terminal: one line per phase.
    CHECK(result.err.find("adbench: objective (native-simd): 2 runs\n") != std::string::npos);
    CHECK(result.err.find("adbench: jacobian (cpu): 2 runs\n") != std::string::npos);

    const std::string text = read_text(json);
    fs::remove(json);
    CHECK(text.starts_with("{\n \"problem\": \"ba\""));
    const nlohmann::json parsed = nlohmann::json::parse(text);
    CHECK(parsed.at("observations") == 10);
    CHECK(parsed.at("nonzeros") == 310);
    CHECK(parsed.at("backend") == "cpu");
    CHECK(parsed.at("threads") == 2);
    CHECK(parsed.at("passed") == true);
    CHECK(parsed.at("expected_passed") == true);
    CHECK(parsed.at("objective_ms").is_number());
    CHECK(parsed.at("jacobian_ms").is_number());
    CHECK(parsed.at("jacobian_runs_ms").size() == 2);
}

TEST_CASE("tapevm adbench: the reference backend in f32 and ba1 without expected values") {
    const CliResult f32 = run_cli({"adbench", "ba", data_folder + "/test.txt", "--backend", "reference",
                                   "--precision", "f32", "--repeats", "1"});
    INFO(f32.err);
    CHECK(f32.status == 0);
    CHECK(f32.out.find("jacobian:  reference, f32") != std::string::npos);

    const CliResult ba1 = run_cli(
        {"adbench", "ba", data_folder + "/ba1_n49_m7776_p31843.txt", "--repeats", "1", "--sample", "16"});
    INFO(ba1.err);
    CHECK(ba1.status == 0);
    CHECK(ba1.out.find("31843 observations; Jacobian 95529 x 55710, 987133 nonzeros") != std::string::npos);
    CHECK(ba1.out.find("check: 16 observations vs the reference VM") != std::string::npos);
    CHECK(ba1.out.find("check: ADBench expected outputs: none for this instance") != std::string::npos);
}

TEST_CASE("tapevm adbench: a failed check exits with status 1") {
    std::string json = read_text(data_folder + "/ba_expected_test_outputs.json");
    const std::string weight = "0.826092651516";
    REQUIRE(json.find(weight) != std::string::npos);
    json.replace(json.find(weight), weight.size(), "0.9");
    const fs::path wrong = temp_path("wrong.json");
    std::ofstream(wrong) << json;
    const CliResult result =
        run_cli({"adbench", "ba", data_folder + "/test.txt", "--repeats", "1", "--expected", wrong.string()});
    fs::remove(wrong);
    INFO(result.err);
    CHECK(result.status == 1);
    CHECK(result.out.find("(at weight error[0])  FAILED") != std::string::npos);
    CHECK(result.out.ends_with("FAILED: not timed\n"));
    CHECK(result.out.find("\nratio") == std::string::npos);
}

TEST_CASE("tapevm adbench: bad arguments and files are errors with exit status 2") {
    const std::string test = data_folder + "/test.txt";
    check_error(run_cli({"adbench"}), "adbench needs a problem (ba or gmm) and an instance");
    check_error(run_cli({"adbench", "lstm", test}), "unknown problem 'lstm' (known: ba, gmm)");
    check_error(run_cli({"adbench", "ba", test, "--backend", "fast"}), "unknown backend 'fast'");
    check_error(run_cli({"adbench", "ba", test, "--precision", "f16"}), "unknown precision 'f16'");
    check_error(run_cli({"adbench", "ba", test, "--threads", "x"}), "--threads");
    check_error(run_cli({"adbench", "ba", test, "--repeats", "0"}), "--repeats");
    check_error(run_cli({"adbench", "ba", test, "--backend", "adolc", "--precision", "f32"}), "double only");
    const fs::path missing = temp_path("missing.txt");
    check_error(run_cli({"adbench", "ba", missing.string()}), missing.string() + ": cannot read");
    const fs::path bad = temp_path("bad.txt");
    std::ofstream(bad) << "2 10 10\n1 2 3 four\n";
    const CliResult bad_file = run_cli({"adbench", "ba", bad.string()});
    fs::remove(bad);
    check_error(bad_file, bad.string() + ": line 2: camera[3]: expected a number, found 'four'");

    const CliResult help = run_cli({"help"});
    CHECK(help.out.find("  adbench   ") != std::string::npos);
    const CliResult adbench_help = run_cli({"adbench", "--help"});
    CHECK(adbench_help.status == 0);
    CHECK(adbench_help.out.starts_with("usage: tapevm adbench ba FILE"));
}

TEST_CASE("tapevm adbench gmm D,K,N: times, ratios, the gradients checked, JSON; bad arguments") {
    const fs::path json = temp_path("gmm.json");
    const CliResult result =
        run_cli({"adbench", "gmm", "3,4,200", "--threads", "2", "--repeats", "2", "--json", json.string()});
    INFO(result.err);
    INFO(result.out);
    REQUIRE(result.status == 0);
    CHECK(result.out.starts_with("GMM d=3 K=4 n=200: 40 parameters, point tape "));
    CHECK(result.out.find("tapevm (ReducedTape)") != std::string::npos);
    CHECK(result.out.find("hand-written f64") != std::string::npos);
    const nlohmann::json record = nlohmann::json::parse(read_text(json));
    fs::remove(json);
    CHECK(record["problem"] == "gmm");
    CHECK(record["parameters"] == 40);  // K + K d + K d (d + 1) / 2
    CHECK(record["passed"] == true);
    CHECK(record["tapevm"]["largest_difference"].get<double>() <= 1e-9);
    CHECK(record["tapevm"]["gradient_s"].get<double>() > 0);
    CHECK(record["hand_written"]["ratio"].get<double>() > 0);
#if TAPEVM_BENCH_ADOLC
    CHECK(record["adolc"]["largest_difference"].get<double>() <= 1e-9);
#else
    CHECK(record["adolc"]["note"] == "not built into this tapevm-bench");
#endif
    check_error(run_cli({"adbench", "gmm", "3,4"}), "expected 3");
    check_error(run_cli({"adbench", "gmm", "0,4,10"}), "not a whole number from 1");
    check_error(run_cli({"adbench", "gmm", "3,4,10", "--backend", "gpu"}), "--backend is an option of ba");
    check_error(run_cli({"adbench", "lstm", "3,4,10"}), "unknown problem 'lstm'");
}
