#include "adbench_expected.hpp"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tapevm/error.hpp"

namespace tapevm::bench::adbench {
namespace {

// The numbers of the array stored under `key`.
std::vector<double> number_array(const nlohmann::json& json, const std::string& key,
                                 const std::string& name) {
    const auto fail = [&](const std::string& what) -> void {
        throw Error(name + ": \"" + key + "\": " + what);
    };
    const auto found = json.find(key);
    if (found == json.end()) fail("missing");
    if (!found->is_array()) fail("expected an array of numbers");
    std::vector<double> values;
    for (const nlohmann::json& element : *found) {
        if (!element.is_number()) fail("element " + std::to_string(values.size()) + " is not a number");
        values.push_back(element.get<double>());
    }
    return values;
}

}  // namespace

BaExpected parse_ba_expected(std::string_view text, const std::string& name) {
    nlohmann::json json;
    try {
        json = nlohmann::json::parse(text);
    } catch (const nlohmann::json::parse_error& error) {
        throw Error(name + ": not JSON (" + error.what() + ")");
    }
    const auto ba = json.is_object() ? json.find("ba") : json.end();
    if (ba == json.end() || !ba->is_object())
        throw Error(name + ": \"ba\": missing (an object holding the expected values)");
    BaExpected expected;
    expected.reprojection_errors =
        number_array(*ba, "objective_calculation_correctness:expected_reproj_err", name);
    expected.weight_errors = number_array(*ba, "objective_calculation_correctness:expected_weight_err", name);
    expected.jacobian_values = number_array(*ba, "jacobian_calculation_correctness:expected_J_values", name);
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
