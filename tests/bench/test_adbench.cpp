// ADBench BA end to end through the library: the CSR of a tiny hand-made instance (structure
// written out by hand, values against the reference VM and the native template), every
// backend of this build in both precisions, test.txt against ADBench's expected values, and
// the checks rejecting wrong results.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "adbench.hpp"
#include "adbench_expected.hpp"
#include "adbench_run.hpp"
#include "check.hpp"
#include "tapevm/error.hpp"
#include "tapevm/examples.hpp"
#include "tapevm/reference.hpp"

namespace {

using namespace tapevm::bench;
using namespace tapevm::bench::adbench;

const std::string data_folder = TAPEVM_ADBENCH_DATA;

// 2 cameras, 3 points, 4 observations that do not follow the k mod n pattern, every camera
// and point a little different (ADBench's test values scaled).
BaProblem tiny_problem() {
    BaProblem problem;
    problem.cameras = 2;
    problem.points = 3;
    problem.observations = 4;
    for (std::size_t c = 0; c < 2; ++c)
        for (std::size_t i = 0; i < 11; ++i)
            problem.camera_values.push_back(tapevm::examples::ba_test_inputs[i] *
                                            (1.0 + 0.01 * double(c + i)));
    for (std::size_t j = 0; j < 3; ++j)
        for (std::size_t i = 0; i < 3; ++i)
            problem.point_values.push_back(tapevm::examples::ba_test_inputs[11 + i] *
                                           (1.0 - 0.02 * double(j + i)));
    problem.weights = {0.4, 0.5, 0.6, 0.7};
    problem.features = {-525.0, 161.0, -520.0, 160.0, -530.0, 162.0, -515.0, 158.0};
    problem.observation_camera = {1, 0, 1, 0};
    problem.observation_point = {2, 2, 0, 1};
    validate(problem);
    return problem;
}

template <class Real>
JacobianWork<Real> jacobian_of(const BaProblem& problem, std::string_view backend, Precision precision,
                               unsigned threads) {
    const auto blocks = make_block_jacobians(backend, precision, threads);
    WorkerPool pool(threads);
    JacobianWork<Real> work = prepare_jacobian<Real>(problem);
    compute_jacobian(problem, *blocks, pool, work);
    return work;
}

template <class Real> Objective<Real> objective_of(const BaProblem& problem, unsigned threads) {
    WorkerPool pool(threads);
    Objective<Real> objective = prepare_objective<Real>(problem);
    const NativeSimdKernels kernels = native_simd_kernels();
    if constexpr (std::is_same_v<Real, double>) {
        compute_objective(problem, kernels.f64, pool, objective);
    } else {
        compute_objective(problem, kernels.f32, pool, objective);
    }
    return objective;
}

std::vector<std::string> backends_here() {
    std::vector<std::string> names = {"reference", "cpu"};
#if TAPEVM_BENCH_ADOLC
    names.push_back("adolc");
#endif
    return names;
}

// Observation k's 15 inputs (its camera, its point, its weight), assembled by hand.
std::vector<double> observation_inputs_of(const BaProblem& problem, std::size_t k) {
    const auto c = static_cast<std::size_t>(problem.observation_camera[k]);
    const auto j = static_cast<std::size_t>(problem.observation_point[k]);
    std::vector<double> x(15);
    for (std::size_t i = 0; i < 11; ++i) x[i] = problem.camera_values[11 * c + i];
    for (std::size_t i = 0; i < 3; ++i) x[11 + i] = problem.point_values[3 * j + i];
    x[14] = problem.weights[k];
    return x;
}

}  // namespace

TEST_CASE("the CSR of a tiny instance: shape and structure as written out by hand") {
    const BaProblem problem = tiny_problem();
    const JacobianWork<double> work = jacobian_of<double>(problem, "reference", Precision::f64, 1);
    const SparseJacobian<double>& jacobian = work.jacobian;
    CHECK(jacobian.rows == 12);
    CHECK(jacobian.columns == 11 * 2 + 3 * 3 + 4);
    const std::vector<std::int32_t> row_starts = {0, 15, 30, 45, 60, 75, 90, 105, 120, 121, 122, 123, 124};
    CHECK(jacobian.row_starts == row_starts);
    REQUIRE(jacobian.column_indices.size() == 124);
    // Observation 0: camera 1 (columns 11..21), point 2 (22 + 6 = 28..30), weight column 31 + 0.
    const std::vector<std::int32_t> observation0 = {11, 12, 13, 14, 15, 16, 17, 18,
                                                    19, 20, 21, 28, 29, 30, 31};
    // Observation 3: camera 0 (0..10), point 1 (25..27), weight column 34.
    const std::vector<std::int32_t> observation3 = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 25, 26, 27, 34};
    const auto row = [&](std::size_t r) {
        return std::vector<std::int32_t>(jacobian.column_indices.begin() + jacobian.row_starts[r],
                                         jacobian.column_indices.begin() + jacobian.row_starts[r + 1]);
    };
    CHECK(row(0) == observation0);
    CHECK(row(1) == observation0);
    CHECK(row(6) == observation3);
    CHECK(row(7) == observation3);
    for (std::size_t k = 0; k < 4; ++k)
        CHECK(row(8 + k) == std::vector<std::int32_t>{static_cast<std::int32_t>(31 + k)});
    CHECK(check_structure(problem, jacobian).empty());

    // The structure check finds a wrong column and a wrong row start.
    SparseJacobian<double> wrong = jacobian;
    wrong.column_indices[20] = 12;
    CHECK(check_structure(problem, wrong) == "row 1: column_indices[20] = 12, expected 16");
    wrong = jacobian;
    wrong.row_starts[9] = 122;
    CHECK(check_structure(problem, wrong) == "row_starts[9] = 122, expected 121");
}

TEST_CASE("the CSR structure written in pieces of any size, from any observation, is exact") {
    BaFile file = read_ba_file(data_folder + "/test.txt");
    file.observations = 1001;
    file.points = 37;
    file.cameras = 5;
    const BaProblem problem = replicate(file);
    for (const std::size_t piece :
         {std::size_t{1}, std::size_t{3}, std::size_t{64}, std::size_t{333}, std::size_t{1001}}) {
        CAPTURE(piece);
        JacobianWork<double> work = prepare_jacobian<double>(problem);
        // Pieces written last to first, the odd ones starting at odd observations.
        std::vector<std::size_t> starts;
        for (std::size_t first = 0; first < problem.observations; first += piece) starts.push_back(first);
        for (auto first = starts.rbegin(); first != starts.rend(); ++first)
            write_structure(problem, *first, std::min(*first + piece, problem.observations), work.jacobian);
        CHECK(check_structure(problem, work.jacobian) == "");
    }
}

TEST_CASE("an observation off the recorded branch (a zero rotation) is an error that names it") {
    BaFile file = read_ba_file(data_folder + "/test.txt");
    file.observations = 1001;
    file.cameras = 2;
    BaProblem problem = replicate(file);
    for (std::size_t i = 0; i < 3; ++i) problem.camera_values[11 + i] = 0;  // camera 1: no rotation
    for (std::size_t k = 0; k < problem.observations; ++k) problem.observation_camera[k] = 0;
    problem.observation_camera[700] = 1;
    problem.observation_camera[900] = 1;
    for (const std::string backend : {"cpu", "reference"}) {
        CAPTURE(backend);
        CHECK_THROWS_WITH_AS(jacobian_of<double>(problem, backend, Precision::f64, 2),
                             doctest::Contains("observation 700 (and 1 more) leaves the branch"),
                             tapevm::Error);
    }
}

TEST_CASE("the CSR values: the reference VM's blocks per observation, -2w in the weight rows") {
    const BaProblem problem = tiny_problem();
    const JacobianWork<double> work = jacobian_of<double>(problem, "cpu", Precision::f64, 2);
    const tapevm::reference::Vm vm(reprojection_tape());
    for (std::size_t k = 0; k < 4; ++k) {
        const std::vector<double> x = observation_inputs_of(problem, k);
        const std::vector<double> feature(problem.features.begin() + long(2 * k),
                                          problem.features.begin() + long(2 * k + 2));
        const std::vector<double> block = vm.jacobian(tapevm::Batch<double>{1, x, feature}).values;
        for (std::size_t i = 0; i < 30; ++i)
            CHECK(work.jacobian.values[30 * k + i] == doctest::Approx(block[i]).epsilon(1e-12));
        // d(w (proj - feature))/dw = proj - feature = residual / w: against the native template.
        const auto residual = tapevm::examples::ba_residual<double, double>(x, feature.data());
        CHECK(work.jacobian.values[30 * k + 14] ==
              doctest::Approx(residual[0] / problem.weights[k]).epsilon(1e-12));
        CHECK(work.jacobian.values[120 + k] == doctest::Approx(-2 * problem.weights[k]).epsilon(1e-15));
    }
}

TEST_CASE("the objective: the native template's residuals and 1 - w^2") {
    const BaProblem problem = tiny_problem();
    for (unsigned threads : {1u, 2u}) {
        const Objective<double> objective = objective_of<double>(problem, threads);
        for (std::size_t k = 0; k < 4; ++k) {
            const std::vector<double> x = observation_inputs_of(problem, k);
            const auto residual =
                tapevm::examples::ba_residual<double, double>(x, problem.features.data() + 2 * k);
            CHECK(objective.reprojection_errors[2 * k] == doctest::Approx(residual[0]).epsilon(1e-13));
            CHECK(objective.reprojection_errors[2 * k + 1] == doctest::Approx(residual[1]).epsilon(1e-13));
            CHECK(objective.weight_errors[k] == doctest::Approx(1 - problem.weights[k] * problem.weights[k]));
        }
    }
}

TEST_CASE("every backend of this build, both precisions, passes the sample check; a wrong value fails it") {
    // An instance with more observations than a SIMD block and not a multiple of one.
    BaFile file = read_ba_file(data_folder + "/test.txt");
    file.observations = 1001;
    file.points = 37;
    const BaProblem problem = replicate(file);
    const std::vector<std::size_t> sample = sample_points(problem.observations, 64);
    std::vector<std::string> backends = backends_here();
    backends.push_back("gpu");
    for (const std::string& backend : backends) {
        for (const Precision precision : {Precision::f64, Precision::f32}) {
            if (backend == "adolc" && precision == Precision::f32) continue;
            CAPTURE(backend);
            CAPTURE(precision_name(precision));
            try {
                if (precision == Precision::f64) {
                    JacobianWork<double> work = jacobian_of<double>(problem, backend, precision, 2);
                    Objective<double> objective = objective_of<double>(problem, 2);
                    CHECK(check_structure(problem, work.jacobian).empty());
                    CHECK(sample_error(problem, work.jacobian, objective, sample) <= tolerance(precision));
                    work.jacobian.values[30 * 1000 + 3] *= 1.001;  // observation 1000 is in the sample
                    CHECK(sample_error(problem, work.jacobian, objective, sample) > tolerance(precision));
                } else {
                    JacobianWork<float> work = jacobian_of<float>(problem, backend, precision, 2);
                    Objective<float> objective = objective_of<float>(problem, 2);
                    CHECK(check_structure(problem, work.jacobian).empty());
                    CHECK(sample_error(problem, work.jacobian, objective, sample) <= tolerance(precision));
                    objective.weight_errors[0] += 0.5f;
                    CHECK(sample_error(problem, work.jacobian, objective, sample) > tolerance(precision));
                }
            } catch (const tapevm::DeviceUnavailable& unavailable) {
                REQUIRE(backend == "gpu");
                MESSAGE("gpu skipped: ", unavailable.what());
            } catch (const tapevm::Unsupported& unsupported) {
                REQUIRE(backend == "gpu");  // a device without float64
                MESSAGE("gpu ", precision_name(precision), " skipped: ", unsupported.what());
            }
        }
    }
}

TEST_CASE("test.txt against ADBench's expected values through the library (rho <= 1e-8)") {
    const BaProblem problem = replicate(read_ba_file(data_folder + "/test.txt"));
    const BaExpected expected = read_ba_expected(data_folder + "/ba_expected_test_outputs.json");
    for (const std::string& backend : backends_here()) {
        CAPTURE(backend);
        const JacobianWork<double> work = jacobian_of<double>(problem, backend, Precision::f64, 2);
        const Objective<double> objective = objective_of<double>(problem, 2);
        CHECK(max_rho(work.jacobian.values, expected.jacobian_values).max_rho <= 1e-8);
        CHECK(max_rho(objective.reprojection_errors, expected.reprojection_errors).max_rho <= 1e-8);
        CHECK(max_rho(objective.weight_errors, expected.weight_errors).max_rho <= 1e-8);
    }
}

TEST_CASE("run_adbench: test.txt checked against its expected values, then timed") {
    std::ostringstream progress_text;
    Progress progress(progress_text, false);
    RunOptions options;
    options.threads = 2;
    options.repeats = 3;
    const RunResult result = run_adbench(data_folder + "/test.txt", options, progress);
    CHECK(result.passed());
    CHECK(result.expected_path == data_folder + "/ba_expected_test_outputs.json");
    CHECK(result.expected_max_rho <= 1e-8);
    CHECK(result.sample_points == 10);
    CHECK(result.nonzeros == 310);
    CHECK(result.columns == 11 * 2 + 3 * 10 + 10);
    CHECK(result.jacobian.runs.size() == 3);
    CHECK(result.objective.runs.size() == 3);
    CHECK(result.jacobian.median > 0);
    CHECK(result.ratio() == doctest::Approx(result.jacobian.median / result.objective.median));
    CHECK(progress_text.str().find("adbench: jacobian (cpu): 3 runs\n") != std::string::npos);

    // f32 against the same expected values with its own tolerance.
    options.precision = Precision::f32;
    const RunResult in_float = run_adbench(data_folder + "/test.txt", options, progress);
    CHECK(in_float.passed());
    CHECK(in_float.expected_max_rho <= expected_tolerance(Precision::f32));
}

TEST_CASE("run_adbench: wrong expected values fail the check and nothing is timed") {
    std::ifstream in(data_folder + "/ba_expected_test_outputs.json");
    std::stringstream text;
    text << in.rdbuf();
    std::string json = text.str();
    const std::string first = "228.87720220824676";
    REQUIRE(json.find(first) != std::string::npos);
    json.replace(json.find(first), first.size(), "228.88");
    std::random_device entropy;
    const auto path = std::filesystem::temp_directory_path() /
                      ("tapevm_test_adbench_" + std::to_string(entropy()) + ".json");
    std::ofstream(path) << json;
    std::ostringstream progress_text;
    Progress progress(progress_text, false);
    RunOptions options;
    options.expected_path = path.string();
    const RunResult result = run_adbench(data_folder + "/test.txt", options, progress);
    std::filesystem::remove(path);
    CHECK_FALSE(result.passed());
    CHECK(result.expected_max_rho > 1e-8);
    CHECK(result.expected_worst == "Jacobian value[0]");
    CHECK(result.jacobian.runs.empty());
    CHECK(std::isnan(result.jacobian.median));
}

TEST_CASE("run_adbench: bad options and backends are errors") {
    std::ostringstream progress_text;
    Progress progress(progress_text, false);
    RunOptions options;
    options.backend = "fast";
    CHECK_THROWS_WITH_AS(run_adbench(data_folder + "/test.txt", options, progress),
                         doctest::Contains("unknown backend 'fast'"), tapevm::Error);
    options.backend = "adolc";
    options.precision = Precision::f32;
    CHECK_THROWS_AS(run_adbench(data_folder + "/test.txt", options, progress), tapevm::Unsupported);
    CHECK(bytes_needed(1000, 8) > 1000 * 31 * 8);
}
