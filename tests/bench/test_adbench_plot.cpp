// bench/plot.py on a small `tapevm bench --json` file: the SVG has one chart per workload and
// one line per backend / precision / threads with a point per batch size, positioned
// log-log. Needs python3: without it the suite exits 77 (Meson: skipped).
#define DOCTEST_CONFIG_IMPLEMENT
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <doctest/doctest.h>

namespace {

namespace fs = std::filesystem;

const std::string python = TAPEVM_PYTHON3;
const std::string plot_script = TAPEVM_PLOT_SCRIPT;

fs::path temp_path(const std::string& name) {
    std::random_device entropy;
    return fs::temp_directory_path() / ("tapevm_test_plot_" + std::to_string(entropy()) + "_" + name);
}

std::string record(const std::string& workload, const std::string& backend, const std::string& precision,
                   int threads, long points, double ns) {
    std::ostringstream text;
    text << R"({"workload": ")" << workload << R"(", "mode": "jacobian", "backend": ")" << backend
         << R"(", "precision": ")" << precision << R"(", "threads": )" << threads << R"(, "points": )"
         << points << R"(, "ns_per_point": )" << ns << R"(, "ratio_to_native_simd": 2.5})";
    return text.str();
}

std::string read_text(const fs::path& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

// The circles' (cx, cy) of the series `label` of `workload`.
std::vector<std::pair<double, double>> series_points(const std::string& svg, const std::string& workload,
                                                     const std::string& label) {
    const std::string open =
        "<g class=\"series\" data-workload=\"" + workload + "\" data-series=\"" + label + "\">";
    const auto start = svg.find(open);
    if (start == std::string::npos) return {};
    const auto end = svg.find("</g>", start);
    const std::string group = svg.substr(start, end - start);
    std::vector<std::pair<double, double>> points;
    const std::regex circle(R"re(<circle cx="([-0-9.]+)" cy="([-0-9.]+)")re");
    for (auto it = std::sregex_iterator(group.begin(), group.end(), circle); it != std::sregex_iterator();
         ++it)
        points.emplace_back(std::stod((*it)[1]), std::stod((*it)[2]));
    return points;
}

}  // namespace

TEST_CASE("plot.py draws one line per backend/precision/threads, one chart per workload, log-log") {
    // GPU flat at 10 ns, CPU rising from 1 to 100 ns: they cross; rosenbrock16 has one line.
    const std::vector<std::string> records = {
        record("ba", "cpu", "f64", 1, 1000, 1),          record("ba", "cpu", "f64", 1, 100000, 100),
        record("ba", "cpu", "f64", 1, 10000, 10),        record("ba", "gpu", "f32", 1, 1000, 10),
        record("ba", "gpu", "f32", 1, 10000, 10),        record("ba", "gpu", "f32", 1, 100000, 10),
        record("rosenbrock16", "cpu", "f64", 2, 1000, 3)};
    std::string json = "[\n";
    for (std::size_t i = 0; i < records.size(); ++i) json += (i == 0 ? "" : ",\n") + records[i];
    json += "\n]\n";
    const fs::path input = temp_path("records.json"), output = temp_path("plot.svg");
    std::ofstream(input) << json;
    const std::string command = "\"" + python + "\" \"" + plot_script + "\" \"" + input.string() +
                                "\" -o \"" + output.string() + "\" > /dev/null";
    REQUIRE(std::system(command.c_str()) == 0);
    const std::string svg = read_text(output);
    fs::remove(input);
    fs::remove(output);

    CHECK(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
    CHECK(svg.find("<g class=\"chart\" data-workload=\"ba\">") != std::string::npos);
    CHECK(svg.find("<g class=\"chart\" data-workload=\"rosenbrock16\">") != std::string::npos);
    const auto cpu = series_points(svg, "ba", "cpu f64 1t");
    const auto gpu = series_points(svg, "ba", "gpu f32 1t");
    const auto rosenbrock = series_points(svg, "rosenbrock16", "cpu f64 2t");
    REQUIRE(cpu.size() == 3);
    REQUIRE(gpu.size() == 3);
    CHECK(rosenbrock.size() == 1);
    // Sorted by points; equal decades are equal steps on both axes (log-log); y grows down.
    CHECK(cpu[0].first < cpu[1].first);
    CHECK(cpu[1].first - cpu[0].first == doctest::Approx(cpu[2].first - cpu[1].first).epsilon(0.01));
    CHECK(cpu[0].second - cpu[1].second == doctest::Approx(cpu[1].second - cpu[2].second).epsilon(0.01));
    // The crossover: the CPU is below the GPU at 1000 points, equal at 10000, above at 100000.
    CHECK(cpu[0].second > gpu[0].second);
    CHECK(cpu[1].second == doctest::Approx(gpu[1].second));
    CHECK(cpu[2].second < gpu[2].second);
    CHECK(svg.find("<title>cpu f64 1t: 1000 points, 1 ns/point, 2.5x native-simd</title>") !=
          std::string::npos);
}

TEST_CASE("plot.py: a file that is not JSON is an error") {
    const fs::path input = temp_path("bad.json"), output = temp_path("bad.svg");
    std::ofstream(input) << "not json";
    const std::string command = "\"" + python + "\" \"" + plot_script + "\" \"" + input.string() +
                                "\" -o \"" + output.string() + "\" 2> /dev/null";
    CHECK(std::system(command.c_str()) != 0);
    fs::remove(input);
    CHECK_FALSE(fs::exists(output));
}

int main(int argc, char** argv) {
    if (python.empty()) return 77;  // no python3: skipped
    return doctest::Context(argc, argv).run();
}
