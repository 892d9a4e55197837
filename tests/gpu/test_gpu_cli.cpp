// The command line on the GPU: `tapevm devices` and `tapevm eval --backend gpu`.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <doctest/doctest.h>
#include <unistd.h>

#include "cli.hpp"
#include "gpu_support.hpp"
#include "tapevm/examples.hpp"
#include "tapevm/tape_file.hpp"

namespace tapevm::test {
namespace {

struct Run {
    int status;
    std::string out, err;
};

Run run_cli(std::vector<std::string> args) {
    std::vector<std::string_view> views(args.begin(), args.end());
    std::ostringstream out, err;
    const int status = cli::run(views, out, err);
    return {status, out.str(), err.str()};
}

TEST_CASE("tapevm devices lists the devices and the one the GPU backend uses") {
    const Run run = run_cli({"devices"});
    INFO(run.out << run.err);
    CHECK(run.status == 0);
    const auto devices = gpu::devices();
    for (const auto& device : devices) CHECK(run.out.find(device.name) != std::string::npos);
    const std::string subnormals = std::string("subnormals kept (DenormPreserve): float ") +
                                   (devices[0].subnormals_float ? "yes" : "no, may flush");
    CHECK(run.out.find(subnormals) != std::string::npos);
    CHECK(run.out.find("0: ") == 0);
    CHECK(run.out.find("float64") != std::string::npos);
    CHECK(run.out.find("max storage buffer") != std::string::npos);
    CHECK(run.out.find("the GPU backend uses device") != std::string::npos);
    CHECK(run_cli({"devices", "extra"}).status == 2);
}

TEST_CASE("tapevm inspect --plan says per mode what the compiled engine runs, --glsl prints it") {
    const auto directory =
        std::filesystem::temp_directory_path() / ("tapevm_gpu_cli_plan_" + std::to_string(getpid()));
    std::filesystem::create_directories(directory);
    const std::string tape_path = (directory / "t.tape").string();
    save_file(examples::example_tape("trig16"), tape_path);
    const Run plan = run_cli({"inspect", tape_path, "--plan"});
    INFO(plan.out << plan.err);
    CHECK(plan.status == 0);
    CHECK(plan.out.find("default 20000") != std::string::npos);
    // trig16's forward kernel: 64 math-library calls (sin and cos in 16 tv_sincos, exp, tanh).
    CHECK(plan.out.find("\nforward: compiled, ") != std::string::npos);
    CHECK(plan.out.find("statements, 64 math-library calls\n") != std::string::npos);
    for (const char* mode : {"gradient", "jacobian", "jvp", "vjp", "hvp", "value_and_gradient"})
        CHECK(plan.out.find(std::string("\n") + mode + ": compiled, ") != std::string::npos);
    const Run one = run_cli({"inspect", tape_path, "--plan", "--mode", "hvp"});
    INFO(one.err);
    CHECK(one.status == 0);
    CHECK(one.out.find("\nhvp: compiled, ") != std::string::npos);
    CHECK(one.out.find("forward:") == std::string::npos);
    CHECK(one.out.find("gradient:") == std::string::npos);
    CHECK(run_cli({"inspect", tape_path, "--plan", "--mode", "sideways"}).status == 2);
    CHECK(run_cli({"inspect", tape_path, "--mode", "hvp"}).status == 2);
    // --compile builds the kernel on the device and says what each step took.
    const std::string small_path = (directory / "r.tape").string();
    save_file(examples::example_tape("rosenbrock16"), small_path);
    const Run compiled = run_cli({"inspect", small_path, "--plan", "--mode", "forward", "--compile"});
    INFO(compiled.err);
    CHECK(compiled.status == 0);
    CHECK(compiled.out.find("device: ") == 0);
    // (lavapipe without GALLIVM_PERF=nopt runs the interpreter instead, and says why.)
    if (compiled.out.find("\nforward: interpreter (lavapipe") == std::string::npos) {
        CHECK(compiled.out.find("\nforward: compiled, ") != std::string::npos);
        CHECK(compiled.out.find(", pipeline ") != std::string::npos);
    }
    CHECK(compiled.out.find("gradient:") == std::string::npos);
    const Run glsl = run_cli({"inspect", tape_path, "--glsl", "forward"});
    CHECK(glsl.status == 0);
    CHECK(glsl.out.find("void main()") != std::string::npos);
    CHECK(glsl.out.find("tv_sincos(") != std::string::npos);
    CHECK(run_cli({"inspect", tape_path, "--glsl", "sideways"}).status == 2);
    std::filesystem::remove_all(directory);
}

TEST_CASE("tapevm eval --backend gpu gives the reference's results") {
    const auto directory =
        std::filesystem::temp_directory_path() / ("tapevm_gpu_cli_" + std::to_string(getpid()));
    std::filesystem::create_directories(directory);
    const std::string tape_path = (directory / "r.tape").string();
    const std::string inputs_path = (directory / "x.csv").string();
    save_file(examples::example_tape("rosenbrock16"), tape_path);
    {
        std::ofstream csv(inputs_path);
        const auto x = random_values<double>(3 * 16, -1, 1, 5);
        for (std::size_t point = 0; point < 3; ++point) {
            for (std::size_t i = 0; i < 16; ++i) csv << (i ? "," : "") << x[point * 16 + i];
            csv << '\n';
        }
    }
    for (const char* mode : {"forward", "gradient", "jacobian"}) {
        CAPTURE(mode);
        const Run gpu =
            run_cli({"eval", tape_path, "--inputs", inputs_path, "--mode", mode, "--backend", "gpu"});
        const Run ref = run_cli({"eval", tape_path, "--inputs", inputs_path, "--mode", mode});
        INFO(gpu.err);
        CHECK(gpu.status == 0);
        CHECK(ref.status == 0);
        // Same number of lines and values; the values agree to double rounding.
        std::istringstream a(gpu.out), b(ref.out);
        std::string line_a, line_b;
        std::size_t lines = 0;
        while (std::getline(b, line_b)) {
            REQUIRE(std::getline(a, line_a));
            std::istringstream va(line_a), vb(line_b);
            std::string x, y;
            while (std::getline(vb, y, ',')) {
                REQUIRE(std::getline(va, x, ','));
                const double dx = std::stod(x), dy = std::stod(y);
                CHECK(std::fabs(dx - dy) <= 1e-9 * std::fmax(1.0, std::fabs(dy)));
            }
            ++lines;
        }
        CHECK(lines == 3);
    }
    std::filesystem::remove_all(directory);
    check_validation_clean();
}

}  // namespace
}  // namespace tapevm::test
