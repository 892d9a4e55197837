#include "adbench_expected.hpp"

#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "tapevm/error.hpp"

namespace tapevm::bench::adbench {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// The numbers of the array stored under "key": `"key" : [n, n, ...]`.
std::vector<double> number_array(std::string_view json, const std::string& key, const std::string& name) {
    const std::string quoted = "\"" + key + "\"";
    const auto fail = [&](const std::string& what) -> void {
        throw Error(name + ": " + quoted + ": " + what);
    };
    std::size_t at = json.find(quoted);
    if (at == std::string_view::npos) fail("missing");
    at += quoted.size();
    const auto skip = [&] {
        while (at < json.size() && is_space(json[at])) ++at;
    };
    skip();
    if (at >= json.size() || json[at] != ':') fail("expected ':' after the name");
    ++at;
    skip();
    if (at >= json.size() || json[at] != '[') fail("expected an array of numbers");
    ++at;
    std::vector<double> values;
    skip();
    if (at < json.size() && json[at] == ']') return values;
    for (;;) {
        skip();
        double value = 0;
        const auto [end, error] = std::from_chars(json.data() + at, json.data() + json.size(), value);
        if (error != std::errc{}) fail("element " + std::to_string(values.size()) + " is not a number");
        values.push_back(value);
        at = static_cast<std::size_t>(end - json.data());
        skip();
        if (at < json.size() && json[at] == ',') {
            ++at;
            continue;
        }
        if (at < json.size() && json[at] == ']') return values;
        fail("expected ',' or ']' after element " + std::to_string(values.size() - 1));
    }
}

}  // namespace

BaExpected parse_ba_expected(std::string_view json, const std::string& name) {
    BaExpected expected;
    expected.reprojection_errors =
        number_array(json, "objective_calculation_correctness:expected_reproj_err", name);
    expected.weight_errors =
        number_array(json, "objective_calculation_correctness:expected_weight_err", name);
    expected.jacobian_values = number_array(json, "jacobian_calculation_correctness:expected_J_values", name);
    return expected;
}

BaExpected read_ba_expected(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error(path + ": cannot read");
    std::stringstream text;
    text << in.rdbuf();
    return parse_ba_expected(text.str(), path);
}

std::string find_expected_for(const std::string& instance_path) {
    namespace fs = std::filesystem;
    const fs::path instance(instance_path);
    if (instance.filename() != "test.txt") return "";
    const fs::path folder = instance.parent_path();
    for (const fs::path& candidate :
         {folder / "ba_expected_test_outputs.json", folder.parent_path() / "ba_expected_test_outputs.json"}) {
        std::error_code error;
        if (fs::is_regular_file(candidate, error)) return candidate.string();
    }
    return "";
}

double rho(double a, double b) {
    const double r = std::fabs(a - b) / std::fmax(1.0, std::fabs(a) + std::fabs(b));
    return std::isnan(r) ? std::numeric_limits<double>::infinity() : r;
}

RhoResult max_rho(std::span<const double> values, std::span<const double> expected) {
    if (values.size() != expected.size()) return {std::numeric_limits<double>::infinity(), 0};
    RhoResult result;
    for (std::size_t i = 0; i < values.size(); ++i) {
        const double r = rho(values[i], expected[i]);
        if (r > result.max_rho) result = {r, i};
    }
    return result;
}

}  // namespace tapevm::bench::adbench
