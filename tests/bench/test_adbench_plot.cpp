// bench/plot.py on a small `tapevm bench --json` file: the SVG (matplotlib's) has one chart per
// workload and one line per backend / precision / threads with a marker per batch size,
// positioned log-log. plot.py names them with matplotlib gids, which the SVG writes as group ids:
// <g id="chart:WORKLOAD"> and <g id="series:WORKLOAD:LABEL">. Needs a python3 with matplotlib
// (tests/bench/meson.build finds one): without it the suite exits 77 (Meson: skipped).
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
const std::string gmm_plot_script = TAPEVM_GMM_PLOT_SCRIPT;

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

// plot.py on `input` writing `output`, its output and messages dropped; its exit status.
int run_plot(const fs::path& input, const fs::path& output) {
    const std::string command = "\"" + python + "\" \"" + plot_script + "\" \"" + input.string() +
                                "\" -o \"" + output.string() + "\" > /dev/null 2>&1";
    return std::system(command.c_str());
}

std::string read_text(const fs::path& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

// The element `<g id="ID">` and everything to its matching </g> (groups nest: the markers sit
// in a clip group of their own); empty when there is none.
std::string group_with_id(const std::string& svg, const std::string& id) {
    const auto start = svg.find("<g id=\"" + id + "\"");
    if (start == std::string::npos) return {};
    int depth = 0;
    for (auto at = start; at < svg.size();) {
        const auto open = svg.find("<g", at), close = svg.find("</g>", at);
        if (close == std::string::npos) return {};
        if (open < close && (svg[open + 2] == ' ' || svg[open + 2] == '>')) {
            ++depth;
            at = open + 2;
        } else if (open < close) {
            at = open + 2;  // another element starting with g (none today)
        } else {
            if (--depth == 0) return svg.substr(start, close + 4 - start);
            at = close + 4;
        }
    }
    return {};
}

std::size_t count(const std::string& text, const std::string& what) {
    std::size_t n = 0;
    for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
    return n;
}

// The markers' (x, y) of the series `label` of `workload`.
std::vector<std::pair<double, double>> series_points(const std::string& svg, const std::string& workload,
                                                     const std::string& label) {
    const std::string group = group_with_id(svg, "series:" + workload + ":" + label);
    std::vector<std::pair<double, double>> points;
    const std::regex marker(R"re(<use [^>]*x="([-0-9.e]+)" y="([-0-9.e]+)")re");
    for (auto it = std::sregex_iterator(group.begin(), group.end(), marker); it != std::sregex_iterator();
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
    REQUIRE(run_plot(input, output) == 0);
    const std::string svg = read_text(output);
    fs::remove(input);
    fs::remove(output);

    CHECK(svg.find("<svg ") != std::string::npos);
    // One chart per workload, holding its own lines only (and a legend entry per line).
    const std::string ba = group_with_id(svg, "chart:ba"),
                      rosenbrock16 = group_with_id(svg, "chart:rosenbrock16");
    REQUIRE_FALSE(ba.empty());
    REQUIRE_FALSE(rosenbrock16.empty());
    CHECK(count(svg, "<g id=\"chart:") == 2);
    CHECK(count(ba, "<g id=\"series:") == 2);
    CHECK(count(ba, "<g id=\"series:ba:") == 2);
    CHECK(count(rosenbrock16, "<g id=\"series:") == 1);
    CHECK(count(rosenbrock16, "<g id=\"series:rosenbrock16:cpu f64 2t\"") == 1);
    CHECK(ba.find(">cpu f64 1t</text>") != std::string::npos);
    CHECK(ba.find(">gpu f32 1t</text>") != std::string::npos);
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
}

TEST_CASE("plot.py writes a PNG when the output ends in .png") {
    const fs::path input = temp_path("one.json"), output = temp_path("plot.png");
    std::ofstream(input) << "[" << record("ba", "cpu", "f64", 1, 1000, 1) << "]";
    REQUIRE(run_plot(input, output) == 0);
    const std::string png = read_text(output);
    fs::remove(input);
    fs::remove(output);
    CHECK(png.starts_with("\x89PNG\r\n\x1a\n"));
}

TEST_CASE("plot.py: a file that is not JSON is an error") {
    const fs::path input = temp_path("bad.json"), output = temp_path("bad.svg");
    std::ofstream(input) << "not json";
    CHECK(run_plot(input, output) != 0);
    fs::remove(input);
    CHECK_FALSE(fs::exists(output));
}

TEST_CASE("plot_gmm.py: one marker per instance and series, ADOL-C left out where it did not run") {
    const fs::path small = temp_path("gmm_small.json"), large = temp_path("gmm_large.json"),
                   output = temp_path("gmm.svg");
    const auto result = [](int d, double tapevm_ratio, bool adolc) {
        std::ostringstream text;
        text << R"({"problem": "gmm", "d": )" << d
             << R"(, "k": 5, "n": 1000, "threads": 1, "tapevm": {"ratio": )" << tapevm_ratio
             << R"(}, "hand_written": {"ratio": 2.0}, "adolc": )"
             << (adolc ? R"({"ratio": 2.5})" : R"({"note": "not run"})") << "}";
        return text.str();
    };
    std::ofstream(small) << result(2, 1.5, true);
    std::ofstream(large) << result(64, 6.0, false);
    const std::string command = "\"" + python + "\" \"" + gmm_plot_script + "\" \"" + small.string() +
                                "\" \"" + large.string() + "\" -o \"" + output.string() +
                                "\" > /dev/null 2>&1";
    REQUIRE(std::system(command.c_str()) == 0);
    const std::string svg = read_text(output);
    for (const fs::path& path : {small, large, output}) fs::remove(path);
    const auto markers = [&](const std::string& id) {
        const std::string group = group_with_id(svg, id);
        std::size_t count = 0;
        for (auto at = group.find("<use"); at != std::string::npos; at = group.find("<use", at + 1)) ++count;
        return count;
    };
    CHECK(markers("series:tapevm (ReducedTape)") == 2);
    CHECK(markers("series:hand-written f64") == 2);
    CHECK(markers("series:ADOL-C") == 1);
    // Not a gmm result: an error.
    const fs::path other = temp_path("other.json");
    std::ofstream(other) << "[" << record("ba", "cpu", "f64", 1, 1000, 1) << "]";
    const std::string bad = "\"" + python + "\" \"" + gmm_plot_script + "\" \"" + other.string() +
                            "\" -o \"" + output.string() + "\" > /dev/null 2>&1";
    CHECK(std::system(bad.c_str()) != 0);
    fs::remove(other);
}

int main(int argc, char** argv) {
    if (python.empty()) return 77;  // no python3: skipped
    return doctest::Context(argc, argv).run();
}
