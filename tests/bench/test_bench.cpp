// The benchmark driver in correctness mode: every workload on every backend of this build,
// in every mode and precision, on batches that are not multiples of any SIMD width, with
// the check against the reference VM that gates every timed record; the check itself (it
// must reject wrong results, and a rejected record is never timed); the options' errors;
// the JSON.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <memory>
#include <mutex>
#include <set>
#include <span>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "backends.hpp"
#include "bench.hpp"
#include "check.hpp"
#include "mlp.hpp"
#include "record.hpp"
#include "runner.hpp"
#include "tapevm/error.hpp"
#include "tapevm/reference.hpp"
#include "worker_pool.hpp"
#include "workloads.hpp"

namespace {

using namespace tapevm::bench;

Config tiny_config(std::string_view workloads, std::string_view backends, std::string_view modes = "all") {
    ConfigText text;
    text.workload = workloads;
    text.backend = backends;
    text.mode = modes;
    text.precision = "all";
    text.threads = "1,2";
    text.points = "37";
    text.repeats = "2";
    Config config = parse_config(text);
    config.warmup_seconds = 0;  // correctness, not timing: one warm-up run
    return config;
}

std::vector<std::string> available_backends() {
    std::vector<std::string> names;
    for (const BackendInfo& info : backends())
        if (info.available()) names.emplace_back(info.name);
    return names;
}

}  // namespace

// The backends the next test runs: every available one, less the GPU's where
// TAPEVM_TEST_BENCH_CPU_ONLY=1 (dev.sh's sanitizer run: on lavapipe under ASan they took 185 of
// this test's 190 s, and their host code runs under ASan in the GPU suites).
std::vector<std::string> checked_backends() {
    std::vector<std::string> names = available_backends();
    const char* cpu_only = std::getenv("TAPEVM_TEST_BENCH_CPU_ONLY");
    if (cpu_only != nullptr && std::string_view(cpu_only) == "1")
        std::erase_if(names, [](const std::string& name) { return name.starts_with("gpu"); });
    return names;
}

TEST_CASE("every workload on every backend of this build passes the reference check") {
    // One run per backend, so that one backend's failed check does not hide the others'.
    std::vector<Record> records;
    std::ostringstream progress;
    const std::vector<std::string> tested = checked_backends();
    MESSAGE("backends: " << tested.size() << " of " << available_backends().size());
    for (const std::string& name : tested) {
        try {
            const std::vector<Record> some = run_bench(tiny_config("all", name), progress);
            for (const Record& r : some)
                if (r.backend == name || name == "native-simd") records.push_back(r);
        } catch (const CheckFailed& failed) {
            FAIL_CHECK(std::string(failed.what()));
        }
    }
    INFO(progress.str());

    std::set<std::tuple<std::string, std::string, std::string, std::string>> seen;
    for (const Record& r : records) {
        INFO(r.workload << " " << r.mode << " " << r.backend << " " << r.precision << " " << r.threads);
        CHECK(r.checked);
        CHECK(r.checked_points == 37);  // fewer points than the sample: all of them
        CHECK(r.max_error <= r.tolerance);
        CHECK(r.tolerance == tolerance(r.precision == "f64" ? Precision::f64 : Precision::f32));
        CHECK(r.points == 37);
        CHECK(r.runs_ns_per_point.size() == 2);
        CHECK(r.ns_per_point > 0);
        CHECK(r.min_ns_per_point <= r.ns_per_point);
        CHECK(r.instructions == workload(r.workload).tape.instruction_count());
        CHECK(r.ns_per_instruction_lane == doctest::Approx(r.ns_per_point / r.instructions));
        CHECK(std::isfinite(r.ratio_to_native_simd));
        if (r.backend.starts_with("native-")) CHECK(r.mode == "forward");
        if (r.backend == "reference" || r.backend == "adolc") CHECK(r.threads == 1);
        seen.emplace(r.workload, r.mode, r.backend, r.precision);
    }
    // Every combination that applies is there, once per thread count it can use.
    for (const std::string_view w : workload_names()) {
        const Workload& workload_ = workload(w);
        for (const std::string& b : tested) {
            for (const std::string precision : {"f64", "f32"}) {
                if (b == "adolc" && precision == "f32") continue;
                for (const std::string mode : {"forward", "gradient", "jacobian"}) {
                    if (b.starts_with("native-") && mode != "forward") continue;
                    if (mode == "gradient" && workload_.tape.output_count() != 1) continue;
                    INFO(w << " " << mode << " " << b << " " << precision);
                    CHECK(seen.count({std::string(w), mode, b, precision}) == 1);
                }
            }
        }
    }
    const auto count = [&](std::string_view backend, unsigned threads) {
        return std::count_if(records.begin(), records.end(),
                             [&](const Record& r) { return r.backend == backend && r.threads == threads; });
    };
    CHECK(count("native-simd", 1) == 10);  // 5 workloads x 2 precisions
    CHECK(count("native-simd", 2) == 10);
    CHECK(count("reference", 2) == 0);
    CHECK(progress.str().find("skipped: ba has no gradient mode") != std::string::npos);
    // A record's ratio is against native-simd's primal of the same run.
    for (const Record& r : records) {
        if (r.backend != "native-simd") continue;
        CHECK(r.ratio_to_native_simd == 1.0);
    }
}

TEST_CASE("the native-simd baseline is measured even when not asked for") {
    const std::vector<Record> records = [] {
        ConfigText text;
        text.workload = "rosenbrock16";
        text.backend = "reference";
        text.points = "9";
        text.repeats = "1";
        std::ostringstream progress;
        return run_bench(parse_config(text), progress);
    }();
    REQUIRE(records.size() == 2);
    CHECK(records[0].backend == "native-simd");
    CHECK(records[1].backend == "reference");
    CHECK(records[1].mode == "gradient");  // rosenbrock16's own mode
    CHECK(records[1].ratio_to_native_simd ==
          doctest::Approx(records[1].ns_per_point / records[0].ns_per_point));
}

namespace {

// A runner whose results are the reference's plus `offset` in one place: the check must see it.
class WrongRunner final : public Runner {
public:
    WrongRunner(const Workload& workload, double offset) : workload_(workload), offset_(offset) {}
    void prepare(const Points& points) override { points_ = points; }
    void run() override { ++runs; }
    std::vector<double> result(std::size_t point) const override {
        const tapevm::Tape& tape = workload_.tape;
        const tapevm::Batch<double> batch{
            1,
            std::span<const double>(points_.inputs).subspan(point * tape.input_count(), tape.input_count()),
            std::span<const double>(points_.params).subspan(point * tape.param_count(), tape.param_count())};
        std::vector<double> values = reference_vm().forward(batch).values;
        if (point == points_.count - 1) values.back() += offset_;
        return values;
    }
    Mode mode() const override { return Mode::forward; }
    std::string isa() const override { return "test"; }
    unsigned threads() const override { return 1; }

    int runs = 0;

private:
    const tapevm::reference::Vm& reference_vm() const {
        if (!vm_) vm_ = std::make_unique<tapevm::reference::Vm>(workload_.tape);
        return *vm_;
    }
    const Workload& workload_;
    double offset_;
    Points points_;
    mutable std::unique_ptr<tapevm::reference::Vm> vm_;
};

}  // namespace

TEST_CASE("a record whose results differ from the reference fails its check and is never timed") {
    const Workload& ba = workload("ba");
    const Points points = ba.make_points(100);  // 64 sampled, the last point among them
    Config config;
    config.repeats = 3;
    config.warmup_seconds = 0;  // one warm-up run
    const Problem problem{&ba, Mode::forward, Precision::f64, 1};

    WrongRunner right(ba, 0.0);
    const Record record = measure(right, "right", problem, points, config);
    CHECK(record.max_error == 0);
    CHECK(right.runs == 1 + 1 + 3);  // checked, warm-up, timed

    WrongRunner wrong(ba, 1e-6 * std::fabs(right.result(99).back()) + 1e-6);
    CHECK_THROWS_AS(measure(wrong, "wrong", problem, points, config), CheckFailed);
    CHECK(wrong.runs == 1);  // the checked warm-up only
    try {
        measure(wrong, "wrong", problem, points, config);
    } catch (const CheckFailed& failed) {
        CHECK(std::string(failed.what())
                  .find("check failed: ba forward wrong f64, 1 thread, 100 points: max error") !=
              std::string::npos);
    }
}

TEST_CASE("the error measure") {
    const double nan = std::nan("");
    const double inf = std::numeric_limits<double>::infinity();
    CHECK(max_error({1.0, 2.0}, {1.0, 2.0}) == 0);
    CHECK(max_error({1.0, 2.2}, {1.0, 2.0}) == doctest::Approx(0.1));
    // Small entries are judged against 1e-3 of the largest.
    CHECK(max_error({1000.0, 1e-9}, {1000.0, 0.0}) == doctest::Approx(1e-9));
    CHECK(max_error({1000.0, 0.5}, {1000.0, 0.0}) == doctest::Approx(0.5));
    CHECK(max_error({nan, 1.0}, {nan, 1.0}) == 0);
    CHECK(max_error({nan}, {1.0}) == inf);
    CHECK(max_error({1.0}, {nan}) == inf);
    CHECK(max_error({inf}, {inf}) == 0);
    CHECK(max_error({-inf}, {inf}) == inf);
    CHECK(max_error({1.0}, {1.0, 2.0}) == inf);
    CheckResult result{nan, 1e-9, 1};
    CHECK_FALSE(result.passed());
}

TEST_CASE("sample points spread over the batch, first and last included") {
    CHECK(sample_points(5, 64) == std::vector<std::size_t>{0, 1, 2, 3, 4});
    CHECK(sample_points(1, 64) == std::vector<std::size_t>{0});
    const auto chosen = sample_points(1000, 4);
    CHECK(chosen == std::vector<std::size_t>{0, 333, 666, 999});
}

TEST_CASE("workload points are fixed, and a smaller batch is the start of a larger one") {
    for (const std::string_view name : workload_names()) {
        const Workload& w = workload(name);
        const Points small = w.make_points(7);
        const Points large = w.make_points(50);
        CHECK(small.inputs.size() == 7 * w.tape.input_count());
        CHECK(small.params.size() == 7 * w.tape.param_count());
        CHECK(std::equal(small.inputs.begin(), small.inputs.end(), large.inputs.begin()));
        CHECK(std::equal(small.params.begin(), small.params.end(), large.params.begin()));
        CHECK(w.make_points(7).inputs == small.inputs);
    }
    CHECK(workload("mlp").tape.instruction_count() >= 10000);
    CHECK(workload("ba").tape.input_count() == 15);
    CHECK(workload("ba").tape.param_count() == 2);
    CHECK(workload("ba").default_mode == Mode::jacobian);
}

TEST_CASE("mlp and mlp16: one network at widths 64 and 16, each with its own weights and points") {
    const MlpModel& wide = mlp_model(64);
    const MlpModel& narrow = mlp_model(16);
    CHECK(&mlp_model(64) == &wide);  // drawn once
    // mlp's weights as they have always been drawn (seed 7): the first and the last.
    CHECK(wide.weights1.front() == -0x1.86cce260c7916p-4);
    CHECK(wide.bias3 == -0x1.8c139f04ffe07p-5);
    for (const MlpModel* model : {&wide, &narrow}) {
        const std::size_t h = model->hidden;
        CHECK(model->weights1.size() == h * mlp_inputs);
        CHECK(model->biases1.size() == h);
        CHECK(model->weights2.size() == h * h);
        CHECK(model->biases2.size() == h);
        CHECK(model->weights3.size() == h);
    }
    CHECK(narrow.hidden == 16);
    // Its own seed: not the start of mlp's draw.
    CHECK(narrow.weights1.front() != wide.weights1.front());
    CHECK(narrow.weights1.front() == -0x1.aaee199b66a79p-6);
    CHECK_THROWS_WITH_AS(mlp_model(32), "no MLP of hidden width 32 (known: 64, 16)", tapevm::Error);

    CHECK(workload("mlp").mlp == &wide);
    CHECK(workload("mlp16").mlp == &narrow);
    CHECK(workload("ba").mlp == nullptr);
    const tapevm::Tape& tape = workload("mlp16").tape;
    CHECK(tape.input_count() == mlp_inputs);
    CHECK(tape.output_count() == 1);
    CHECK(workload("mlp16").default_mode == Mode::gradient);
    // 16 inputs, a constant per weight and bias (561) and 1,088 operations (two layers of 16 x
    // (16 products, 16 sums, a tanh), then 16 products and 16 sums): 1,665 instructions today.
    CHECK(tape.constant_count() == 16 * 16 + 16 + 16 * 16 + 16 + 16 + 1);
    CHECK(tape.instruction_count() >= 1000);
    CHECK(tape.instruction_count() <= 2000);

    // Points uniform in [-1, 1), not mlp's; the tape is the template's network at them.
    const Points points = workload("mlp16").make_points(20);
    CHECK(points.inputs != workload("mlp").make_points(20).inputs);
    CHECK(std::all_of(points.inputs.begin(), points.inputs.end(), [](double x) { return x >= -1 && x < 1; }));
    const std::vector<double> values =
        tapevm::reference::Vm(tape).forward(tapevm::Batch<double>{points.count, points.inputs, {}}).values;
    for (std::size_t point = 0; point < points.count; ++point) {
        const std::span<const double> x(points.inputs.data() + point * mlp_inputs, mlp_inputs);
        CHECK(values[point] == doctest::Approx(mlp<double>(x, narrow)).epsilon(1e-12));
    }
}

TEST_CASE("rounded_to gives the float points an f32 backend sees") {
    const Points points = workload("trig16").make_points(3);
    const Points rounded = rounded_to(points, Precision::f32);
    for (std::size_t i = 0; i < points.inputs.size(); ++i)
        CHECK(rounded.inputs[i] == static_cast<double>(static_cast<float>(points.inputs[i])));
    CHECK(rounded_to(points, Precision::f64).inputs == points.inputs);
}

TEST_CASE("the worker pool covers every point exactly once, in shares of its granularity") {
    for (const unsigned threads : {1u, 2u, 3u}) {
        WorkerPool pool(threads);
        CHECK(pool.threads() == threads);
        for (const std::size_t count : {std::size_t{0}, std::size_t{1}, std::size_t{63}, std::size_t{1000}}) {
            std::vector<int> hits(count, 0);
            std::mutex mutex;
            std::vector<std::pair<std::size_t, std::size_t>> shares;
            pool.run(count, 64, [&](std::size_t begin, std::size_t end) {
                for (std::size_t i = begin; i < end; ++i) ++hits[i];
                const std::lock_guard lock(mutex);
                shares.emplace_back(begin, end);
            });
            CHECK(std::all_of(hits.begin(), hits.end(), [](int h) { return h == 1; }));
            for (const auto& [begin, end] : shares) CHECK((begin % 64 == 0));
        }
    }
}

TEST_CASE("bad options are errors that name the option and the value") {
    const auto error_of = [](ConfigText text) -> std::string {
        try {
            parse_config(text);
        } catch (const tapevm::Error& error) {
            return error.what();
        }
        return "no error";
    };
    const auto contains = [](const std::string& text, std::string_view part) {
        INFO(text);
        CHECK(text.find(part) != std::string::npos);
    };
    ConfigText text;
    text.workload = "ba,nope";
    contains(error_of(text), "unknown workload 'nope'");
    text = {};
    text.backend = "fast";
    contains(error_of(text), "unknown backend 'fast' (known: native-simd");
    text = {};
    text.mode = "hessian";
    contains(error_of(text), "--mode: unknown mode 'hessian'");
    text = {};
    text.precision = "f16";
    contains(error_of(text), "--precision: unknown precision 'f16'");
    text = {};
    text.points = "0";
    contains(error_of(text), "--points: '0' is not a whole number from 1");
    text = {};
    text.points = "12x";
    contains(error_of(text), "--points: '12x'");
    text = {};
    text.points = "10,,20";
    contains(error_of(text), "--points: empty item");
    text = {};
    text.threads = "-1";
    contains(error_of(text), "--threads: '-1'");
    text = {};
    text.repeats = "0";
    contains(error_of(text), "--repeats: '0'");
    for (const BackendInfo& info : backends()) {
        if (info.available()) continue;
        text = {};
        text.backend = info.name;
        contains(error_of(text), "not in this build");
    }
}

TEST_CASE("lists and all expand, duplicates dropped, threads 0 is every hardware thread") {
    ConfigText text;
    text.workload = "all,ba";
    text.mode = "auto";
    text.precision = "f32,all";
    text.threads = "0,1,1";
    text.points = "5,7";
    const Config config = parse_config(text);
    CHECK(config.workloads == std::vector<std::string>{"ba", "rosenbrock16", "trig16", "mlp", "mlp16"});
    CHECK(config.modes.empty());
    CHECK(config.precisions == std::vector<Precision>{Precision::f32, Precision::f64});
    CHECK(config.threads.size() >= 1);
    CHECK(config.points == std::vector<std::size_t>{5, 7});
    CHECK(config.backends == available_backends());
}

TEST_CASE("JSON: one object per record with every field; NaN becomes null") {
    Record r;
    r.workload = "ba";
    r.mode = "jacobian";
    r.backend = "cpu";
    r.precision = "f64";
    r.threads = 2;
    r.points = 65536;
    r.ns_per_point = 27.5;
    r.min_ns_per_point = 26.25;
    r.runs_ns_per_point = {27.5, 26.25, 28};
    r.instructions = 100;
    r.ns_per_instruction_lane = 0.275;
    r.isa = "avx512";
    r.device = "CPU \"quoted\"\\";
    r.checked = true;
    r.max_error = 1e-15;
    r.tolerance = 1e-9;
    r.checked_points = 64;
    std::ostringstream json;
    write_json(std::vector<Record>{r, r}, json);
    const std::string text = json.str();
    INFO(text);
    CHECK(text.front() == '[');
    CHECK(text.substr(text.size() - 2) == "]\n");
    CHECK(std::count(text.begin(), text.end(), '\n') == 4);  // one record per line
    const nlohmann::json parsed = nlohmann::json::parse(text);
    REQUIRE(parsed.is_array());
    REQUIRE(parsed.size() == 2);
    const nlohmann::json& record = parsed[1];
    CHECK(record.size() == 21);
    CHECK(record.at("workload") == "ba");
    CHECK(record.at("mode") == "jacobian");
    CHECK(record.at("backend") == "cpu");
    CHECK(record.at("precision") == "f64");
    CHECK(record.at("threads") == 2);
    CHECK(record.at("points") == 65536);
    CHECK(record.at("ns_per_point") == 27.5);
    CHECK(record.at("median_ns_per_point") == 27.5);
    CHECK(record.at("min_ns_per_point") == 26.25);
    CHECK(record.at("runs") == nlohmann::json::array({27.5, 26.25, 28.0}));
    CHECK(record.at("instructions") == 100);
    CHECK(record.at("ns_per_instruction_lane") == 0.275);
    CHECK(record.at("isa") == "avx512");
    CHECK(record.at("device") == "CPU \"quoted\"\\");
    CHECK(record.at("checked") == true);
    CHECK(record.at("max_error").get<double>() == 1e-15);  // full precision
    CHECK(record.at("tolerance").get<double>() == 1e-9);
    CHECK(record.at("checked_points") == 64);
    CHECK(record.at("ratio_to_native_simd").is_null());  // NaN
    CHECK(record.at("setup_seconds").is_null());
    CHECK(record.at("device_ns_per_point").is_null());
    CHECK(text.find("\"workload\":\"ba\",\"mode\":\"jacobian\"") != std::string::npos);  // in this order
    std::ostringstream empty;
    write_json({}, empty);
    CHECK(empty.str() == "[]\n");
}
