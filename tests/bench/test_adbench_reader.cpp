// ADBench BA instance files: every defect is a tapevm::Error naming the file, the line and the
// field (never a crash or an allocation from a bad count); replication as ADBench's README
// gives it; validate() on problems built by hand; the expected-outputs JSON reader.
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <string_view>

#include <doctest/doctest.h>

#include "adbench_expected.hpp"
#include "adbench_reader.hpp"
#include "tapevm/error.hpp"

namespace {

using namespace tapevm::bench::adbench;
namespace fs = std::filesystem;

const std::string data_folder = TAPEVM_ADBENCH_DATA;

// A valid instance: 2 cameras, 3 points, 7 observations, all values distinct.
constexpr std::string_view valid =
    "2 3 7\n"
    "0.1 0.2 0.3 4 5 6 200 -0.25 0.5 0.01 0.02\n"
    "1.5 2.5 3.5\n"
    "0.75\n"
    "-12.5 33.25\n";

// The message of the tapevm::Error that parsing `text` throws ("" when none is thrown).
std::string parse_error(std::string_view text) {
    try {
        parse_ba_file(text, "bad.txt");
    } catch (const tapevm::Error& error) {
        return error.what();
    }
    return "";
}

void check_error(std::string_view text, std::string_view line_and_field, std::string_view what) {
    const std::string message = parse_error(text);
    INFO("text: ", text, "\nmessage: ", message);
    CHECK(message.starts_with("bad.txt: "));
    CHECK(message.find(line_and_field) != std::string::npos);
    CHECK(message.find(what) != std::string::npos);
}

fs::path temp_path(std::string_view name) {
    std::random_device entropy;
    return fs::temp_directory_path() /
           ("tapevm_test_adbench_" + std::to_string(entropy()) + "_" + std::string(name));
}

}  // namespace

TEST_CASE("an ADBench BA file: counts and values in order") {
    const BaFile file = parse_ba_file(valid, "valid.txt");
    CHECK(file.cameras == 2);
    CHECK(file.points == 3);
    CHECK(file.observations == 7);
    CHECK(file.camera[0] == 0.1);
    CHECK(file.camera[6] == 200);
    CHECK(file.camera[10] == 0.02);
    CHECK(file.point[2] == 3.5);
    CHECK(file.weight == 0.75);
    CHECK(file.feature[0] == -12.5);
    CHECK(file.feature[1] == 33.25);
    // Line breaks do not matter, as for ADBench's fscanf reader; exponents are numbers.
    const BaFile one_line =
        parse_ba_file("2 3 7 0.1 0.2 0.3 4 5 6 2e2 -0.25 0.5 0.01 0.02 1.5 2.5 3.5 0.75 -12.5 33.25", "x");
    CHECK(one_line.camera[6] == 200);
    CHECK(one_line.feature[1] == 33.25);
}

TEST_CASE("the instance files shipped in bench/data/adbench read") {
    const BaFile test = read_ba_file(data_folder + "/test.txt");
    CHECK(test.cameras == 2);
    CHECK(test.points == 10);
    CHECK(test.observations == 10);
    CHECK(test.camera[6] == 211.628116);
    CHECK(test.feature[0] == -525.672849);
    const BaFile ba1 = read_ba_file(data_folder + "/ba1_n49_m7776_p31843.txt");
    CHECK(ba1.cameras == 49);
    CHECK(ba1.points == 7776);
    CHECK(ba1.observations == 31843);
}

TEST_CASE("every defect of a BA file names the file, the line and the field") {
    check_error("", "line 1: n (cameras)", "missing");
    check_error("   \n\n", "line 3: n (cameras)", "missing");
    check_error("x 3 7", "line 1: n (cameras)", "expected a whole number, found 'x'");
    check_error("2 -3 7", "line 1: m (points)", "expected a whole number, found '-3'");
    check_error("2 3 7.5", "line 1: p (observations)", "expected a whole number, found '7.5'");
    check_error("2 3 0", "line 1: p (observations)", "must be at least 1");
    check_error("0 3 7", "line 1: n (cameras)", "must be at least 1");
    // Absurd counts are refused before anything is allocated from them.
    check_error("2 3 67108865", "line 1: p (observations)", "exceeds the limit of 67108864");
    check_error("2 3 99999999999999999999999999", "line 1: p (observations)", "exceeds the limit");
    check_error("9 3 7", "line 1: n (cameras)", "9 cameras but only 7 observations");
    check_error("2 8 7", "line 1: m (points)", "8 points but only 7 observations");
    // Values.
    check_error("2 3 7\n0.1 0.2 0.3 abc", "line 2: camera[3]", "expected a number, found 'abc'");
    check_error("2 3 7\n0.1 0.2 0.3 4 5 6 nan", "line 2: camera[6]", "must be finite");
    check_error("2 3 7\n0.1 0.2 0.3 4 5 6 inf", "line 2: camera[6]", "must be finite");
    check_error("2 3 7\n0.1 0.2 0.3 4 5 6 1e999", "line 2: camera[6]", "out of range");
    check_error("2 3 7\n0.1 0.2 0.3 4 5 6 200 -0.25 0.5 0.01 0.02\n1.5 2.5,3.5", "line 3: point[1]",
                "found '2.5,3.5'");
    // Truncated at each part: the line is where the file ends.
    check_error("2 3 7\n0.1 0.2 0.3 4 5 6 200 -0.25 0.5 0.01\n", "line 3: camera[10]", "missing");
    check_error("2 3 7\n0.1 0.2 0.3 4 5 6 200 -0.25 0.5 0.01 0.02\n1.5 2.5 3.5\n", "line 4: weight",
                "missing");
    check_error(std::string(valid.substr(0, valid.size() - 7)), "line 5: feature[1]", "missing");
    // Trailing data.
    check_error(std::string(valid) + "\n7", "line 7: end of file", "unexpected '7' after the feature");
    // Binary garbage is shown safely.
    check_error(std::string("2 3 7\n\x01\x02", 8), "line 2: camera[0]",
                "found '?"
                "?'");
}

TEST_CASE("read_ba_file: unreadable, a folder, too large") {
    const auto error_of = [](const std::string& path) {
        try {
            read_ba_file(path);
        } catch (const tapevm::Error& error) {
            return std::string(error.what());
        }
        return std::string();
    };
    const fs::path missing = temp_path("missing.txt");
    CHECK(error_of(missing.string()).starts_with(missing.string() + ": cannot read"));
    CHECK(error_of(fs::temp_directory_path().string()).find("is a directory") != std::string::npos);
    const fs::path large = temp_path("large.txt");
    {
        std::ofstream out(large);
        out << valid << std::string(max_file_bytes, ' ');
    }
    const std::string message = error_of(large.string());
    fs::remove(large);
    CHECK(message.starts_with(large.string() + ": larger than"));
}

TEST_CASE("replicate: observation k sees camera k mod n and point k mod m") {
    const BaFile file = parse_ba_file(valid, "valid.txt");
    const BaProblem problem = replicate(file);
    CHECK_NOTHROW(validate(problem));
    REQUIRE(problem.observations == 7);
    CHECK(problem.jacobian_columns() == 11 * 2 + 3 * 3 + 7);
    REQUIRE(problem.camera_values.size() == 22);
    REQUIRE(problem.point_values.size() == 9);
    for (std::size_t c = 0; c < 2; ++c)
        for (std::size_t i = 0; i < 11; ++i) CHECK(problem.camera_values[c * 11 + i] == file.camera[i]);
    for (std::size_t j = 0; j < 3; ++j)
        for (std::size_t i = 0; i < 3; ++i) CHECK(problem.point_values[j * 3 + i] == file.point[i]);
    const int cameras[] = {0, 1, 0, 1, 0, 1, 0};
    const int points[] = {0, 1, 2, 0, 1, 2, 0};
    for (std::size_t k = 0; k < 7; ++k) {
        CHECK(problem.observation_camera[k] == cameras[k]);
        CHECK(problem.observation_point[k] == points[k]);
        CHECK(problem.weights[k] == 0.75);
        CHECK(problem.features[2 * k] == -12.5);
        CHECK(problem.features[2 * k + 1] == 33.25);
    }
}

TEST_CASE("validate: problems built by hand") {
    BaProblem problem = replicate(parse_ba_file(valid, "valid.txt"));
    problem.observation_point[4] = 3;
    CHECK_THROWS_WITH_AS(validate(problem), doctest::Contains("observation 4 sees camera 0 and point 3"),
                         tapevm::Error);
    problem.observation_point[4] = 1;
    problem.features.pop_back();
    CHECK_THROWS_WITH_AS(validate(problem), doctest::Contains("features has 13 values, expected 14"),
                         tapevm::Error);
}

TEST_CASE("ADBench's expected outputs: read, rho, and where they live") {
    const BaExpected expected = read_ba_expected(data_folder + "/ba_expected_test_outputs.json");
    CHECK(expected.reprojection_errors.size() == 20);
    CHECK(expected.weight_errors.size() == 10);
    REQUIRE(expected.jacobian_values.size() == 310);
    CHECK(expected.jacobian_values[0] == 228.87720220824676);
    CHECK(expected.weight_errors[0] == 0.826092651516);

    CHECK_THROWS_WITH_AS(
        parse_ba_expected(R"({"ba": {}})", "e.json"),
        doctest::Contains("e.json: \"objective_calculation_correctness:expected_reproj_err\": missing"),
        tapevm::Error);
    CHECK_THROWS_WITH_AS(parse_ba_expected("{}", "e.json"), doctest::Contains("e.json: \"ba\": missing"),
                         tapevm::Error);
    CHECK_THROWS_WITH_AS(parse_ba_expected("[1]", "e.json"), doctest::Contains("e.json: \"ba\": missing"),
                         tapevm::Error);
    const std::string bad =
        R"({"ba": {"objective_calculation_correctness:expected_reproj_err": [1, 2, "x"]}})";
    CHECK_THROWS_WITH_AS(parse_ba_expected(bad, "e.json"), doctest::Contains("element 2 is not a number"),
                         tapevm::Error);
    const std::string not_array = R"({"ba": {"objective_calculation_correctness:expected_reproj_err": 1}})";
    CHECK_THROWS_WITH_AS(parse_ba_expected(not_array, "e.json"),
                         doctest::Contains("expected an array of numbers"), tapevm::Error);
    CHECK_THROWS_WITH_AS(parse_ba_expected(R"({"ba": [1, 2, x]})", "e.json"),
                         doctest::Contains("e.json: not JSON"), tapevm::Error);

    CHECK(rho(1.0, 1.0) == 0);
    CHECK(rho(0.0, 0.5) == 0.5);
    CHECK(rho(100.0, 101.0) == doctest::Approx(1.0 / 201.0));
    CHECK(std::isinf(rho(std::nan(""), 1.0)));
    const double values[] = {1, 2, 3}, close[] = {1, 2.5, 3};
    const RhoResult worst = max_rho(values, close);
    CHECK(worst.worst_index == 1);
    CHECK(worst.max_rho == doctest::Approx(0.5 / 4.5));

    CHECK(find_expected_for(data_folder + "/test.txt") == data_folder + "/ba_expected_test_outputs.json");
    CHECK(find_expected_for(data_folder + "/ba1_n49_m7776_p31843.txt").empty());
}
