// The tapevm command-line program, run in-process through tapevm::cli::run: every command's
// output against the library computing the same thing directly (printed numbers parsed back
// and compared exactly, since %.17g and %.9g round-trip), every kind of bad input giving
// exit status 2 and exactly one "error:" line that names the problem, the guard warning, and
// the demo with its check.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <doctest/doctest.h>

#include "cli.hpp"
#include "cli_support.hpp"
#include "demo_workload.hpp"
#include "tapevm/examples.hpp"
#include "tapevm/hessian.hpp"
#include "tapevm/sparse.hpp"
#include "tapevm/sparse_hessian.hpp"
#include "tapevm/reduced.hpp"
#include "tapevm/reference.hpp"
#include "tapevm/tape_file.hpp"
#include "tapevm/var.hpp"

namespace {

using tapevm::Batch;
using tapevm::Tape;
namespace fs = std::filesystem;

using tapevm::test::CliResult;
using tapevm::test::run_cli;

// A fresh directory under the system's temporary directory, removed with its contents.
class TempDir {
public:
    TempDir() {
        std::random_device entropy;
        path_ = fs::temp_directory_path() /
                ("tapevm_test_cli_" + std::to_string(entropy()) + "_" + std::to_string(entropy()));
        fs::create_directories(path_);
    }
    ~TempDir() {
        std::error_code ignored;
        fs::remove_all(path_, ignored);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;

    /// The path of `name` inside the directory, as a string for the command line.
    std::string file(std::string_view name) const { return (path_ / name).string(); }

    /// Writes `contents` to `name` and returns its path.
    std::string write(std::string_view name, std::string_view contents) const {
        std::ofstream out(file(name), std::ios::binary);
        out << contents;
        return file(name);
    }

private:
    fs::path path_;
};

std::vector<std::string> split(std::string_view text, char separator) {
    std::vector<std::string> parts;
    std::size_t start = 0;
    while (true) {
        const std::size_t end = text.find(separator, start);
        parts.emplace_back(text.substr(start, end - start));
        if (end == std::string_view::npos) break;
        start = end + 1;
    }
    return parts;
}

// The numbers printed on each line of `text` (which must end in a newline).
template <class Real> std::vector<std::vector<Real>> parse_output(const std::string& text) {
    REQUIRE((!text.empty() && text.back() == '\n'));
    std::vector<std::vector<Real>> rows;
    for (const std::string& line : split(std::string_view(text).substr(0, text.size() - 1), '\n')) {
        std::vector<Real> row;
        for (const std::string& field : split(line, ',')) {
            Real value = 0;
            const auto [end, status] = std::from_chars(field.data(), field.data() + field.size(), value);
            INFO("field '" << field << "'");
            REQUIRE(status == std::errc());
            REQUIRE(end == field.data() + field.size());
            row.push_back(value);
        }
        rows.push_back(row);
    }
    return rows;
}

// Exact comparison (NaN equal to NaN) of printed rows against [rows][width] values.
template <class Real>
void check_rows(const std::string& out, const std::vector<Real>& expected, std::size_t width) {
    const auto rows = parse_output<Real>(out);
    REQUIRE(rows.size() * width == expected.size());
    for (std::size_t row = 0; row < rows.size(); ++row) {
        REQUIRE(rows[row].size() == width);
        for (std::size_t k = 0; k < width; ++k) {
            const Real want = expected[row * width + k];
            INFO("row " << row << " value " << k);
            if (std::isnan(want)) {
                CHECK(std::isnan(rows[row][k]));
            } else {
                CHECK(rows[row][k] == want);
            }
        }
    }
}

// Writes values [rows][columns] as CSV text with %.17g, so the program reads the same doubles.
std::string to_csv(const std::vector<double>& values, std::size_t columns) {
    std::string text;
    for (std::size_t k = 0; k < values.size(); ++k) {
        char buffer[64];
        const auto end = std::to_chars(buffer, buffer + sizeof buffer, values[k]).ptr;
        text.append(buffer, end);
        text += (k + 1) % columns == 0 ? '\n' : ',';
    }
    return text;
}

// `rows` points near the example's recording point, deterministic.
std::vector<double> random_points(std::size_t rows, std::size_t columns, unsigned seed) {
    std::mt19937 generator(seed);
    std::vector<double> values(rows * columns);
    for (double& value : values) value = static_cast<double>(generator() % 20001) / 10000.0 - 1.0;
    return values;
}

std::vector<double> ba_points(std::size_t rows) {
    std::vector<double> values;
    for (std::size_t row = 0; row < rows; ++row) {
        for (std::size_t i = 0; i < tapevm::examples::ba_inputs; ++i) {
            values.push_back(tapevm::examples::ba_test_inputs[i] *
                             (1.0 + 0.01 * static_cast<double>(row + i % 3)));
        }
    }
    return values;
}

// Status 2, nothing on stdout, exactly one line on stderr, starting "error: " and holding
// every piece of `needles`.
void check_error(const CliResult& result, std::initializer_list<std::string_view> needles) {
    INFO("stderr: " << result.err);
    CHECK(result.status == 2);
    CHECK(result.out.empty());
    CHECK(result.err.starts_with("error: "));
    CHECK(result.err.ends_with("\n"));
    CHECK(std::count(result.err.begin(), result.err.end(), '\n') == 1);
    for (std::string_view needle : needles) {
        INFO("expected in the message: " << needle);
        CHECK(result.err.find(needle) != std::string::npos);
    }
}

std::string write_example(const TempDir& directory, const std::string& name) {
    const std::string path = directory.file(name + ".tape");
    const CliResult result = run_cli({"example", name, "--out", path});
    REQUIRE(result.status == 0);
    REQUIRE(result.err.empty());
    return path;
}

}  // namespace

TEST_CASE("help and version") {
    const CliResult version = run_cli({"--version"});
    CHECK(version.status == 0);
    CHECK(version.out.starts_with("tapevm "));
    CHECK(version.out.find_first_of("0123456789") != std::string::npos);

    for (const std::string spelling : {"help", "--help", "-h"}) {
        const CliResult help = run_cli({spelling});
        CHECK(help.status == 0);
        for (const char* command : {"example", "inspect", "eval", "demo", "help"}) {
            CHECK(help.out.find(std::string("  ") + command) != std::string::npos);
        }
    }
    const CliResult eval_help = run_cli({"help", "eval"});
    CHECK(eval_help.status == 0);
    CHECK(eval_help.out.find("--inputs") != std::string::npos);
    CHECK(run_cli({"eval", "--help"}).out == eval_help.out);
    check_error(run_cli({"help", "frobnicate"}), {"unknown command 'frobnicate'"});
}

TEST_CASE("example lists the examples and writes a tape that inspect and load_file read") {
    for (const auto& arguments : {std::initializer_list<std::string>{"example"}, {"example", "--list"}}) {
        const CliResult list = run_cli(arguments);
        CHECK(list.status == 0);
        for (const auto& example : tapevm::examples::example_list()) {
            CHECK(list.out.find(std::string(example.name) + " ") != std::string::npos);
            CHECK(list.out.find(std::string(example.description)) != std::string::npos);
        }
    }

    const TempDir directory;
    for (const auto& example : tapevm::examples::example_list()) {
        const std::string name(example.name);
        const std::string path = write_example(directory, name);
        const Tape expected = tapevm::examples::example_tape(name);
        CHECK(tapevm::load_file(path) == expected);

        const CliResult inspect = run_cli({"inspect", path});
        CHECK(inspect.status == 0);
        CHECK(inspect.err.empty());
        CHECK(inspect.out == expected.dump());
        CHECK(inspect.out.find(std::to_string(expected.instruction_count()) + " instructions") !=
              std::string::npos);
    }
}

TEST_CASE("eval rosenbrock16: forward, gradient and jacobian equal the reference VM's results") {
    const TempDir directory;
    const std::string tape_path = write_example(directory, "rosenbrock16");
    const tapevm::reference::Vm vm(tapevm::examples::example_tape("rosenbrock16"));
    constexpr std::size_t points = 7;
    const std::vector<double> inputs = random_points(points, 16, 1);
    const std::string inputs_path = directory.write("x.csv", to_csv(inputs, 16));
    const Batch<double> batch{points, inputs, {}};

    std::vector<double> values(points);
    vm.forward(batch, std::span<double>(values));
    const CliResult forward = run_cli({"eval", tape_path, "--inputs", inputs_path, "--mode", "forward"});
    CHECK(forward.status == 0);
    CHECK(forward.err.empty());
    check_rows(forward.out, values, 1);

    std::vector<double> gradients(points * 16);
    vm.gradient(batch, std::span<double>(gradients));
    const CliResult gradient = run_cli({"eval", tape_path, "--inputs=" + inputs_path, "--mode=gradient"});
    CHECK(gradient.status == 0);
    check_rows(gradient.out, gradients, 16);

    // A Jacobian of one output is the gradient, printed the same way.
    const CliResult jacobian = run_cli({"eval", tape_path, "--mode", "jacobian", "--inputs", inputs_path,
                                        "--backend", "reference", "--precision", "f64"});
    CHECK(jacobian.status == 0);
    CHECK(jacobian.out == gradient.out);

    // The 16x16 Hessian per point, row-major: the library's dense Hessian on the reference VM.
    const tapevm::Evaluation<double> hessians = tapevm::hessian(vm, batch);
    const CliResult hessian = run_cli({"eval", tape_path, "--inputs", inputs_path, "--mode", "hessian"});
    CHECK(hessian.status == 0);
    check_rows(hessian.out, hessians.values, 256);
}

TEST_CASE("eval --mode hessian needs one output") {
    const TempDir directory;
    const std::string tape_path = write_example(directory, "ba");
    const std::string inputs_path = directory.write("x.csv", to_csv(random_points(2, 15, 3), 15));
    const CliResult hessian = run_cli({"eval", tape_path, "--inputs", inputs_path, "--mode", "hessian"});
    CHECK(hessian.status != 0);
    CHECK(hessian.err.find("mode hessian needs a tape with 1 output") != std::string::npos);
}

#if TAPEVM_HAVE_COLPACK
TEST_CASE("eval --mode sparse_jacobian prints the nonzeros in CSR order; inspect --sparsity the pattern") {
    const TempDir directory;
    const std::string tape_path = write_example(directory, "ba");
    const Tape tape = tapevm::examples::example_tape("ba");
    const tapevm::reference::Vm vm(tape);
    constexpr std::size_t points = 3;
    const std::vector<double> inputs = ba_points(points);
    const std::string inputs_path = directory.write("x.csv", to_csv(inputs, 15));
    const tapevm::SparseJacobianPlan plan = tapevm::plan_sparse_jacobian(tape);
    const auto want = tapevm::sparse_jacobian(vm, Batch<double>{points, inputs, {}}, plan);
    const CliResult sparse =
        run_cli({"eval", tape_path, "--inputs", inputs_path, "--mode", "sparse_jacobian"});
    CHECK(sparse.status == 0);
    check_rows(sparse.out, want.values, plan.pattern.nonzeros());
    CHECK(sparse.err.find("sparse Jacobian: 2 x 15, " + std::to_string(plan.pattern.nonzeros()) +
                          " structural nonzeros, " + std::to_string(plan.colouring.colours) + " colours") !=
          std::string::npos);
    const CliResult pattern = run_cli({"inspect", tape_path, "--sparsity"});
    CHECK(pattern.status == 0);
    CHECK(pattern.out.find("output 0:") == 0);
    CHECK(pattern.out.find("\noutput 1:") != std::string::npos);
    CHECK(pattern.out.find("\nsparse Hessian: 15 x 15, ") != std::string::npos);
    CHECK(run_cli({"inspect", tape_path, "--sparsity", "--plan"}).status != 0);
    // ba has two outputs: sparse_hessian, like hessian, needs one.
    const CliResult two = run_cli({"eval", tape_path, "--inputs", inputs_path, "--mode", "sparse_hessian"});
    CHECK(two.status != 0);
    CHECK(two.err.find("mode sparse_hessian needs a tape with 1 output") != std::string::npos);
}

TEST_CASE("eval --mode sparse_hessian prints the Hessian's nonzeros in CSR order") {
    const TempDir directory;
    const std::string tape_path = write_example(directory, "rosenbrock16");
    const Tape tape = tapevm::examples::example_tape("rosenbrock16");
    constexpr std::size_t points = 4;
    const std::vector<double> inputs = random_points(points, 16, 5);
    const std::string inputs_path = directory.write("x.csv", to_csv(inputs, 16));
    const tapevm::SparseHessianPlan plan = tapevm::plan_sparse_hessian(tape);
    const auto want =
        tapevm::sparse_hessian(tapevm::reference::Vm(tape), Batch<double>{points, inputs, {}}, plan);
    const CliResult sparse =
        run_cli({"eval", tape_path, "--inputs", inputs_path, "--mode", "sparse_hessian"});
    CHECK(sparse.status == 0);
    check_rows(sparse.out, want.values, plan.pattern.nonzeros());
    CHECK(sparse.err.find("sparse Hessian: 16 x 16, 46 structural nonzeros, 3 colours") != std::string::npos);
}
#endif

TEST_CASE("eval --mode reduced_gradient prints the sum and its gradient in the shared parameters") {
    const TempDir directory;
    // f(x; a, b, c) = (a x0 + b - x1)^2 + c: a least-squares line fit.
    const std::vector<double> x0 = {0.5, 1.0}, p0 = {1.0, 0.0, 0.0};
    const Tape tape = tapevm::record(std::span<const double>(x0), std::span<const double>(p0),
                                     [](std::span<const tapevm::Var> x, std::span<const tapevm::Var> p) {
                                         const tapevm::Var r = p[0] * x[0] + p[1] - x[1];
                                         return std::vector<tapevm::Var>{r * r + p[2]};
                                     });
    const std::string tape_path = directory.file("fit.tape");
    tapevm::save_file(tape, tape_path);
    const std::vector<double> inputs = {0.0, 1.0, 1.0, 2.5, 2.0, 4.5, 3.0, 7.0};
    const std::vector<double> params = {1.5, 0.5, 0.25}, weights = {1.0, 2.0, 0.5, 1.0};
    const std::string inputs_path = directory.write("x.csv", to_csv(inputs, 2));
    const std::string params_path = directory.write("p.csv", to_csv(params, 3));
    const std::string weights_path = directory.write("w.csv", to_csv(weights, 1));
    const tapevm::ReducedTape reduced(tape, {1, 0});
    const tapevm::reference::Vm vm(reduced.tape());
    const auto want =
        reduced.gradient(vm, Batch<double>{4, inputs, params}, std::span<const double>(weights));
    const CliResult result =
        run_cli({"eval", tape_path, "--inputs", inputs_path, "--params", params_path, "--mode",
                 "reduced_gradient", "--differentiate", "1,0", "--weights", weights_path});
    CHECK(result.status == 0);
    check_rows(result.out, std::vector<double>{want.value, want.gradient[0], want.gradient[1]}, 3);
    CHECK(result.err.find("reduced gradient: 4 points, 2 of 3 parameters differentiated") !=
          std::string::npos);
    // By hand: r = (-0.5, -0.5, -1, -2), F = sum w (r^2 + c), dF/db = sum 2 w r, dF/da = sum 2 w r x0.
    CHECK(want.value == doctest::Approx(6.375));
    CHECK(want.gradient[0] == doctest::Approx(-8.0));
    CHECK(want.gradient[1] == doctest::Approx(-16.0));
    // The Hessian in (b, a): d2F/db2 = sum 2 w, d2F/dadb = sum 2 w x0, d2F/da2 = sum 2 w x0^2.
    const CliResult hessian =
        run_cli({"eval", tape_path, "--inputs", inputs_path, "--params", params_path, "--mode",
                 "reduced_hessian", "--differentiate", "1,0", "--weights", weights_path});
    CHECK(hessian.status == 0);
    std::vector<double> want_hessian(4);
    reduced.hessian(vm, Batch<double>{4, inputs, params}, std::span<double>(want_hessian),
                    std::span<const double>(weights));
    check_rows(hessian.out, want_hessian, 2);
    CHECK(want_hessian[0] == doctest::Approx(2 * (1 + 2 + 0.5 + 1)));
    CHECK(want_hessian[1] == doctest::Approx(2 * (0 + 2 * 1 + 0.5 * 2 + 1 * 3)));
    CHECK(want_hessian[3] == doctest::Approx(2 * (0 + 2 * 1 + 0.5 * 4 + 1 * 9)));
    CHECK(hessian.err.find("reduced Hessian: 4 points, 2 of 3 parameters differentiated") !=
          std::string::npos);
    // Every parameter by default, in f32 too.
    const CliResult all = run_cli({"eval", tape_path, "--inputs", inputs_path, "--params", params_path,
                                   "--mode", "reduced_gradient", "--precision", "f32"});
    CHECK(all.status == 0);
    CHECK(parse_output<float>(all.out).at(0).size() == 4);
    // Bad input: weights of the wrong count, a parameter out of range or twice, parameters per point,
    // the options without the mode.
    const auto reduced_with = [&](const std::string& option, const std::string& value) {
        return run_cli({"eval", tape_path, "--inputs", inputs_path, "--params", params_path, "--mode",
                        "reduced_gradient", option, value});
    };
    check_error(reduced_with("--weights", directory.write("w3.csv", "1\n2\n3\n")),
                {"w3.csv", "3 weights", "expected 4"});
    check_error(reduced_with("--differentiate", "3"), {"--differentiate"});
    check_error(reduced_with("--differentiate", "1,1"), {"parameter 1 twice"});
    check_error(run_cli({"eval", tape_path, "--inputs", inputs_path, "--params",
                         directory.write("pp.csv", to_csv(std::vector<double>(12, 1.0), 3)), "--mode",
                         "reduced_gradient"}),
                {"one line of parameters shared by every point"});
    check_error(run_cli({"eval", tape_path, "--inputs", inputs_path, "--params", params_path, "--mode",
                         "forward", "--weights", weights_path}),
                {"options of --mode reduced_gradient and reduced_hessian"});
}

TEST_CASE("eval ba: forward and the 2x15 jacobian equal the reference VM's results, row-major") {
    const TempDir directory;
    const std::string tape_path = write_example(directory, "ba");
    const tapevm::reference::Vm vm(tapevm::examples::example_tape("ba"));
    constexpr std::size_t points = 5;
    const std::vector<double> inputs = ba_points(points);
    const std::string inputs_path = directory.write("x.csv", to_csv(inputs, 15));
    const Batch<double> batch{points, inputs, {}};

    std::vector<double> values(points * 2);
    vm.forward(batch, std::span<double>(values));
    const CliResult forward = run_cli({"eval", tape_path, "--inputs", inputs_path, "--mode", "forward"});
    CHECK(forward.status == 0);
    check_rows(forward.out, values, 2);

    std::vector<double> jacobians(points * 30);
    vm.jacobian(batch, std::span<double>(jacobians));
    const CliResult jacobian = run_cli({"eval", tape_path, "--inputs", inputs_path, "--mode", "jacobian"});
    CHECK(jacobian.status == 0);
    CHECK(jacobian.err.empty());
    check_rows(jacobian.out, jacobians, 30);
    // Row-major: the second value of a line is d output 0 / d input 1, not d output 1 / d input 0.
    CHECK(jacobians[1] != jacobians[15]);
}

TEST_CASE("eval reads a byte-order mark, spaces, blank lines, CRLF, no final newline, nan and inf") {
    const TempDir directory;
    const std::string tape_path = write_example(directory, "rosenbrock16");
    const tapevm::reference::Vm vm(tapevm::examples::example_tape("rosenbrock16"));
    std::vector<double> inputs = random_points(3, 16, 2);
    std::string text = "\xEF\xBB\xBF\n  \t\n";
    for (std::size_t row = 0; row < 3; ++row) {
        for (std::size_t i = 0; i < 16; ++i) {
            char buffer[64];
            text.append(buffer, std::to_chars(buffer, buffer + sizeof buffer, inputs[row * 16 + i]).ptr);
            text += i == 15 ? (row == 2 ? "" : " \r\n\n") : (i % 2 == 0 ? " , " : ",\t");
        }
    }
    std::vector<double> expected(3);
    vm.forward(Batch<double>{3, inputs, {}}, std::span<double>(expected));
    const CliResult spaced =
        run_cli({"eval", tape_path, "--inputs", directory.write("x.csv", text), "--mode", "forward"});
    CHECK(spaced.status == 0);
    check_rows(spaced.out, expected, 1);

    // nan, inf and -inf are values, and a leading '+' is accepted.
    std::string special = "nan";
    for (int i = 1; i < 16; ++i) special += ",+0.25";
    special += "\ninf";
    for (int i = 1; i < 16; ++i) special += ",0.25";
    special += "\n-inf";
    for (int i = 1; i < 16; ++i) special += ",0.25";
    const CliResult propagated =
        run_cli({"eval", tape_path, "--inputs", directory.write("s.csv", special), "--mode", "forward"});
    CHECK(propagated.status == 0);
    CHECK(propagated.out == "nan\ninf\ninf\n");
}

TEST_CASE("eval --precision f32 equals the reference VM in float, printed with 9 digits") {
    const TempDir directory;
    const std::string tape_path = write_example(directory, "ba");
    const tapevm::reference::Vm vm(tapevm::examples::example_tape("ba"));
    constexpr std::size_t points = 4;
    const std::vector<double> inputs = ba_points(points);
    const std::string inputs_path = directory.write("x.csv", to_csv(inputs, 15));
    // The program parses the decimal text as float directly, as from_chars<float> does here.
    const auto float_inputs = parse_output<float>(to_csv(inputs, 15));
    std::vector<float> flat;
    for (const auto& row : float_inputs) flat.insert(flat.end(), row.begin(), row.end());
    const Batch<float> batch{points, flat, {}};

    std::vector<float> jacobians(points * 30);
    vm.jacobian(batch, std::span<float>(jacobians));
    const CliResult jacobian =
        run_cli({"eval", tape_path, "--inputs", inputs_path, "--mode", "jacobian", "--precision", "f32"});
    CHECK(jacobian.status == 0);
    check_rows(jacobian.out, jacobians, 30);
    // 9 significant digits at most: no double-precision digits leak into f32 output.
    for (const std::string& field : split(split(jacobian.out, '\n')[0], ',')) {
        const std::string mantissa = field.substr(0, field.find('e'));
        const std::string significant =
            mantissa.substr(std::min(mantissa.find_first_of("123456789"), mantissa.size()));
        INFO(field);
        CHECK(std::count_if(significant.begin(), significant.end(),
                            [](char c) { return c >= '0' && c <= '9'; }) <= 9);
    }

    std::vector<double> double_jacobians(points * 30);
    vm.jacobian(Batch<double>{points, inputs, {}}, std::span<double>(double_jacobians));
    const CliResult f64 = run_cli({"eval", tape_path, "--inputs", inputs_path, "--mode", "jacobian"});
    CHECK(f64.out != jacobian.out);
}

TEST_CASE("eval ba-param: parameters per point and shared") {
    const TempDir directory;
    const std::string tape_path = write_example(directory, "ba-param");
    const tapevm::reference::Vm vm(tapevm::examples::example_tape("ba-param"));
    constexpr std::size_t points = 3;
    const std::vector<double> inputs = ba_points(points);
    const std::string inputs_path = directory.write("x.csv", to_csv(inputs, 15));
    const std::vector<double> features = {-525.5, 161.25, -300.0, 100.0, 12.5, -7.75};
    const std::vector<double> shared(tapevm::examples::ba_test_feature.begin(),
                                     tapevm::examples::ba_test_feature.end());

    std::vector<double> per_point_jacobians(points * 30);
    vm.jacobian(Batch<double>{points, inputs, features}, std::span<double>(per_point_jacobians));
    const CliResult per_point = run_cli({"eval", tape_path, "--inputs", inputs_path, "--mode", "jacobian",
                                         "--params", directory.write("p.csv", to_csv(features, 2))});
    CHECK(per_point.status == 0);
    check_rows(per_point.out, per_point_jacobians, 30);

    std::vector<double> shared_values(points * 2);
    vm.forward(Batch<double>{points, inputs, shared}, std::span<double>(shared_values));
    const CliResult shared_run = run_cli({"eval", tape_path, "--inputs", inputs_path, "--mode", "forward",
                                          "--params", directory.write("q.csv", to_csv(shared, 2))});
    CHECK(shared_run.status == 0);
    check_rows(shared_run.out, shared_values, 2);

    // The shared feature is ADBench's, which the ba tape holds as constants.
    std::vector<double> constant_values(points * 2);
    tapevm::reference::Vm(tapevm::examples::example_tape("ba"))
        .forward(Batch<double>{points, inputs, {}}, std::span<double>(constant_values));
    CHECK(constant_values == shared_values);
}

TEST_CASE("eval warns on stderr about points that take another branch, and still succeeds") {
    const TempDir directory;
    const Tape tape = tapevm::record(std::vector<double>{1.0}, [](std::span<const tapevm::Var> x) {
        if (x[0] > 0.0) return x[0] * x[0];
        return -x[0];
    });
    REQUIRE(tape.guard_count() == 1);
    const std::string tape_path = directory.file("branch.tape");
    tapevm::save_file(tape, tape_path);
    // Points 2 and 5 (input lines 3 and 7, after a blank line) take the other branch.
    const std::string inputs_path = directory.write("x.csv", "2\n3\n-1\n4\n\n0.5\n-3\n");

    const CliResult result = run_cli({"eval", tape_path, "--inputs", inputs_path, "--mode", "gradient"});
    INFO("stderr: " << result.err);
    CHECK(result.status == 0);
    // Results follow the recorded branch x^2: gradient 2x everywhere.
    check_rows(result.out, std::vector<double>{4, 6, -2, 8, 1, -6}, 1);
    CHECK(result.err.starts_with("warning: 2 of 6 points take another branch than recorded"));
    CHECK(result.err.find("input lines 3, 7") != std::string::npos);
    CHECK(std::count(result.err.begin(), result.err.end(), '\n') == 1);

    const CliResult none =
        run_cli({"eval", tape_path, "--inputs", directory.write("y.csv", "1\n2\n"), "--mode", "forward"});
    CHECK(none.status == 0);
    CHECK(none.err.empty());
    check_rows(none.out, std::vector<double>{1, 4}, 1);
}

TEST_CASE("bad command lines: exit 2 and one error line naming the problem") {
    const TempDir directory;
    const std::string tape = write_example(directory, "rosenbrock16");
    const std::string inputs = directory.write("x.csv", to_csv(random_points(2, 16, 3), 16));

    check_error(run_cli({}), {"no command"});
    check_error(run_cli({"frobnicate"}), {"unknown command 'frobnicate'"});
    check_error(run_cli({"--frobnicate"}), {"unknown option '--frobnicate'"});
    check_error(run_cli({"eval", tape, "--inputs", inputs, "--mode", "forward", "--fast"}),
                {"unknown option '--fast'", "eval"});
    check_error(run_cli({"eval", tape, "--inputs", inputs, "--mode"}), {"--mode", "needs a value"});
    check_error(run_cli({"eval", tape, "--inputs", "--mode", "forward"}), {"--inputs", "needs a value"});
    check_error(run_cli({"eval", tape, "--mode", "forward"}), {"needs --inputs"});
    check_error(run_cli({"eval", tape, "--inputs", inputs}), {"needs --mode"});
    check_error(run_cli({"eval", "--inputs", inputs, "--mode", "forward"}), {"needs a tape file"});
    check_error(run_cli({"eval", tape, tape, "--inputs", inputs, "--mode", "forward"}),
                {"unexpected argument"});
    check_error(run_cli({"eval", tape, "--inputs", inputs, "--mode", "hvp"}), {"unknown mode 'hvp'"});
    check_error(run_cli({"eval", tape, "--inputs", inputs, "--mode", "forward", "--mode", "gradient"}),
                {"--mode given twice"});
    check_error(run_cli({"eval", tape, "--inputs", inputs, "--mode", "forward", "--precision", "f16"}),
                {"unknown precision 'f16'"});
    check_error(run_cli({"eval", tape, "--inputs", inputs, "--mode", "forward", "--backend", "tpu"}),
                {"unknown backend 'tpu'"});
    check_error(run_cli({"inspect"}), {"needs a tape file"});
    check_error(run_cli({"example", "nonesuch", "--out", directory.file("n.tape")}),
                {"unknown example 'nonesuch'"});
    check_error(run_cli({"example", "ba"}), {"needs --out"});
    check_error(run_cli({"example", "--out", directory.file("n.tape")}), {"--out needs an example name"});
    check_error(run_cli({"demo", "--points", "0"}), {"--points", "'0'"});
    check_error(run_cli({"demo", "--points", "many"}), {"--points", "'many'"});
    check_error(run_cli({"demo", "extra"}), {"unexpected argument 'extra'"});
    check_error(run_cli({"--version", "extra"}), {"unexpected argument 'extra'"});
}

TEST_CASE("eval --backend cpu prints the reference VM's results for rosenbrock16 (exact: +, -, * only)") {
    const TempDir directory;
    const std::string tape = write_example(directory, "rosenbrock16");
    const std::string inputs = directory.write("x.csv", to_csv(random_points(37, 16, 4), 16));
    for (const std::string mode : {"forward", "gradient", "jacobian"}) {
        for (const std::string precision : {"f64", "f32"}) {
            CAPTURE(mode);
            CAPTURE(precision);
            const CliResult reference =
                run_cli({"eval", tape, "--inputs", inputs, "--mode", mode, "--precision", precision});
            const CliResult cpu = run_cli({"eval", tape, "--inputs", inputs, "--mode", mode, "--precision",
                                           precision, "--backend", "cpu", "--threads", "2"});
            CHECK(reference.status == 0);
            CHECK(cpu.status == 0);
            CHECK(cpu.err.empty());
            CHECK(!cpu.out.empty());
            CHECK(cpu.out == reference.out);
        }
    }
    check_error(run_cli({"eval", tape, "--inputs", inputs, "--mode", "forward", "--backend", "cpu",
                         "--threads", "many"}),
                {"--threads", "'many'"});
}

TEST_CASE("bad files: missing, unreadable, corrupt tapes") {
    const TempDir directory;
    const std::string tape = write_example(directory, "rosenbrock16");
    const std::string inputs = directory.write("x.csv", to_csv(random_points(2, 16, 3), 16));
    const std::string missing = directory.file("missing.tape");

    check_error(run_cli({"inspect", missing}), {"cannot read", "missing.tape", "no such file"});
    check_error(run_cli({"eval", missing, "--inputs", inputs, "--mode", "forward"}), {"missing.tape"});
    check_error(run_cli({"eval", tape, "--inputs", directory.file("none.csv"), "--mode", "forward"}),
                {"cannot read", "none.csv"});
    check_error(run_cli({"inspect", directory.file("")}), {"cannot read", "directory"});
    check_error(run_cli({"example", "ba", "--out", directory.file("no/such/dir/ba.tape")}), {"ba.tape"});

    std::ifstream in(tape, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    REQUIRE(bytes.size() > 100);
    const std::string truncated = directory.write("truncated.tape", bytes.substr(0, 100));
    check_error(run_cli({"inspect", truncated}), {"truncated.tape", "tape file: byte", "n_instructions"});
    check_error(run_cli({"eval", truncated, "--inputs", inputs, "--mode", "forward"}), {"tape file: byte"});
    std::string flipped = bytes;
    flipped[200] = static_cast<char>(flipped[200] ^ 0x10);
    check_error(run_cli({"inspect", directory.write("flipped.tape", flipped)}), {"flipped.tape", "checksum"});
    check_error(run_cli({"inspect", directory.write("text.tape", "hello\n")}), {"text.tape", "tape file"});
    check_error(run_cli({"inspect", inputs}), {"x.csv", "tape file"});
}

TEST_CASE("bad CSV data: line numbers, expected and given counts") {
    const TempDir directory;
    const std::string tape = write_example(directory, "rosenbrock16");
    const std::string ba = write_example(directory, "ba");
    const std::string ba_param = write_example(directory, "ba-param");
    const std::string good_line = to_csv(random_points(1, 16, 4), 16);
    const auto eval = [&](const std::string& tape_path, const std::string& text,
                          const std::string& mode = "forward") {
        return run_cli({"eval", tape_path, "--inputs", directory.write("bad.csv", text), "--mode", mode});
    };

    std::string bad_value = good_line;
    bad_value.replace(0, bad_value.find(','), "abc");
    check_error(eval(tape, good_line + "\n" + bad_value),
                {"bad.csv", "line 3", "value 1", "'abc' is not a number"});
    check_error(eval(tape, good_line + "1,2,3,4,5,6,7,8,9,10,11,12,13,14,15\n"),
                {"bad.csv", "line 2", "expected 16 values, got 15"});
    check_error(eval(tape, good_line + good_line.substr(0, good_line.size() - 1) + ",1\n"),
                {"line 2", "expected 16 values, got 17"});
    check_error(eval(tape, "1,,3,4,5,6,7,8,9,10,11,12,13,14,15,16\n"), {"line 1", "value 2", "empty value"});
    check_error(eval(tape, "1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,1e999\n"),
                {"line 1", "value 16", "out of range"});
    check_error(eval(tape, "1 2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17\n"), {"'1 2' is not a number"});
    check_error(eval(tape, ""), {"bad.csv", "no input points"});
    check_error(eval(tape, "\n \n\r\n"), {"no input points"});
    check_error(eval(ba, to_csv(ba_points(1), 15), "gradient"), {"gradient", "1 output", "has 2"});

    // f32 has its own range.
    std::string large = "1e39";
    for (int i = 1; i < 16; ++i) large += ",1";
    check_error(run_cli({"eval", tape, "--inputs", directory.write("large.csv", large), "--mode", "forward",
                         "--precision", "f32"}),
                {"out of range for f32"});

    // Parameters: required, the right width, one line or one per point.
    const std::string points = directory.write("points.csv", to_csv(ba_points(3), 15));
    const auto eval_params = [&](const std::string& text) {
        return run_cli({"eval", ba_param, "--inputs", points, "--mode", "forward", "--params",
                        directory.write("params.csv", text)});
    };
    check_error(run_cli({"eval", ba_param, "--inputs", points, "--mode", "forward"}),
                {"2 parameters", "--params"});
    check_error(eval_params("1,2\n3,4\n"), {"params.csv", "2 lines", "expected 1", "or 3"});
    check_error(eval_params("1,2\n3,4\n5,6\n7,8\n"), {"4 lines", "expected 1", "or 3"});
    check_error(eval_params("1,2,3\n"), {"params.csv", "line 1", "expected 2 values, got 3"});
    check_error(eval_params(""), {"0 lines"});
    check_error(run_cli({"eval", ba, "--inputs", points, "--mode", "forward", "--params",
                         directory.write("params.csv", "1,2\n")}),
                {"--params", "no parameters"});
}

TEST_CASE("demo: prints the tape, timings and a passing check") {
    const CliResult demo = run_cli({"demo", "--points", "3000"});
    INFO(demo.out << demo.err);
    CHECK(demo.status == 0);
    CHECK(demo.err.empty());
    const Tape tape = tapevm::examples::example_tape("ba-param");
    CHECK(demo.out.find(std::to_string(tape.instruction_count()) + " instructions") != std::string::npos);
    CHECK(demo.out.find("points: 3000 ") != std::string::npos);
    CHECK(demo.out.find("ns/point") != std::string::npos);
    CHECK(demo.out.find("jacobian / forward") != std::string::npos);
    CHECK(demo.out.find("1000 points: max relative error") != std::string::npos);
    CHECK(demo.out.ends_with("PASS\n"));
}

TEST_CASE("demo's check finds a wrong value or a wrong Jacobian entry") {
    const tapevm::cli::BaBatch batch = tapevm::cli::make_ba_batch(50, 0.03, 7);
    // Same seed, same batch; another seed, another batch; all within 3%.
    CHECK(tapevm::cli::make_ba_batch(50, 0.03, 7).inputs == batch.inputs);
    CHECK(tapevm::cli::make_ba_batch(50, 0.03, 8).inputs != batch.inputs);
    for (std::size_t k = 0; k < batch.inputs.size(); ++k) {
        const double original = tapevm::examples::ba_test_inputs[k % 15];
        CHECK(std::fabs(batch.inputs[k] / original - 1.0) <= 0.03);
    }

    const tapevm::reference::Vm vm(tapevm::examples::example_tape("ba-param"));
    const Batch<double> vm_batch{batch.points, batch.inputs, batch.features};
    std::vector<double> values(batch.points * 2);
    std::vector<double> jacobians(batch.points * 30);
    vm.forward(vm_batch, std::span<double>(values));
    vm.jacobian(vm_batch, std::span<double>(jacobians));
    CHECK(tapevm::cli::max_forward_error(batch, values) <= 1e-12);
    CHECK(tapevm::cli::max_jacobian_error(batch, jacobians, 50) <= 1e-7);

    values[37] += 1e-9 * std::fmax(1.0, std::fabs(values[37]));
    CHECK(tapevm::cli::max_forward_error(batch, values) > 1e-12);
    // Point 25 is among the 10 sampled: 0, 5, ..., 45.
    jacobians[30 * 25 + 7] += 1e-4 * std::fmax(1.0, std::fabs(jacobians[30 * 25 + 7]));
    CHECK(tapevm::cli::max_jacobian_error(batch, jacobians, 10) > 1e-5);
    jacobians[30 * 25 + 7] = std::numeric_limits<double>::quiet_NaN();
    CHECK(std::isnan(tapevm::cli::max_jacobian_error(batch, jacobians, 10)));
}
