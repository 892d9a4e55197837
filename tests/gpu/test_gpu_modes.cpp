// The GPU VM against the reference VM: every mode, float and double, the example tapes, a
// guarded tape, NaN isolation, and batches that cross chunk boundaries.
#include <array>
#include <cstdlib>
#include <limits>
#include <mutex>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "context.hpp"
#include "gpu_support.hpp"
#include "kernels.hpp"
#include "runner.hpp"
#include "tapevm/error.hpp"
#include "tapevm/examples.hpp"
#include "tapevm/var.hpp"

namespace tapevm::test {
namespace {

// Every mode of `vm` on `points` random points against the reference VM. `shared_params`
// picks one parameter set for all points instead of one per point.
// Inputs are uniform in [low, high); the bundle-adjustment tape (15 inputs, 2 parameters) gets
// ADBench's test observation perturbed by up to 3% instead, where it is well conditioned.
template <class Real>
void check_every_mode(const gpu::Vm& vm, std::size_t points, bool shared_params, double low, double high,
                      unsigned seed = 1) {
    const Tape& tape = vm.tape();
    const std::size_t n = tape.input_count();
    const std::size_t m = tape.output_count();
    const std::size_t p = tape.param_count();
    const reference::Vm ref(tape);
    const bool ba = n == examples::ba_inputs && p == 2;
    const auto inputs = ba ? perturbed_rows<Real>(examples::ba_test_inputs, points, 0.03, seed)
                           : random_values<Real>(points * n, low, high, seed);
    const auto params =
        ba ? perturbed_rows<Real>(examples::ba_test_feature, shared_params ? 1 : points, 0.03, seed + 1)
           : random_values<Real>((shared_params ? 1 : points) * p, 0.5, 1.5, seed + 1);
    const Batch<Real> batch{points, inputs, params};
    const std::string precision = sizeof(Real) == 8 ? "double" : "float";
    CAPTURE(points);
    CAPTURE(precision);

    const auto compare = [&](const Evaluation<Real>& gpu, const Evaluation<Real>& expected, const char* mode,
                             std::size_t per_point) {
        check_close(gpu.values, expected.values, std::string(mode) + " " + precision, per_point,
                    ba && sizeof(Real) == 4 ? ba_float_tolerance : tolerance<Real>());
        CHECK(gpu.report.diverged == expected.report.diverged);
    };
    compare(vm.forward(batch), ref.forward(batch), "forward", m);
    if (m == 1) compare(vm.gradient(batch), ref.gradient(batch), "gradient", n);
    compare(vm.jacobian(batch, JacobianMode::reverse), ref.jacobian(batch, JacobianMode::reverse),
            "jacobian (reverse)", m * n);
    compare(vm.jacobian(batch, JacobianMode::forward), ref.jacobian(batch, JacobianMode::forward),
            "jacobian (forward)", m * n);
    const auto tangents = random_values<Real>(points * n, -1, 1, seed + 2);
    const auto cotangents = random_values<Real>(points * m, -1, 1, seed + 3);
    compare(vm.jvp(batch, std::span<const Real>(tangents)), ref.jvp(batch, std::span<const Real>(tangents)),
            "jvp", m);
    compare(vm.vjp(batch, std::span<const Real>(cotangents)),
            ref.vjp(batch, std::span<const Real>(cotangents)), "vjp", n);
    compare(vm.hvp(batch, std::span<const Real>(cotangents), std::span<const Real>(tangents)),
            ref.hvp(batch, std::span<const Real>(cotangents), std::span<const Real>(tangents)), "hvp", n);
    check_validation_clean();
    // With the compiled engine, every mode above ran a compiled kernel, or the interpreter for a
    // kernel over the size limit (2,500 on CPU devices, where a math-library call counts as up
    // to 150 statements; 20,000 statements on GPUs), and said why.
    if (vm.engine() == gpu::Engine::compiled) {
        for (const char* mode : {"forward", "gradient", "jacobian", "jvp", "vjp", "hvp"}) {
            if (std::string_view(mode) == "gradient" && m != 1) continue;
            CAPTURE(mode);
            // Compiled, unless over the size limit (the 10,000-instruction tape's derivatives;
            // trig16 in double on lavapipe).
            const gpu::CompilePlan plan = vm.compile_plan<Real>(mode);
            if (!plan.compiled) CHECK(plan.reason.find("over the limit") != std::string::npos);
            CHECK((plan.compiled || plan.statements + 150 * plan.library_calls > 2500));
        }
    }
}

template <class Real> void check_examples(std::size_t points) {
    for (const char* name : {"ba-param", "rosenbrock16", "trig16"}) {
        CAPTURE(name);
        const gpu::Vm vm(examples::example_tape(name), test_options());
        check_every_mode<Real>(vm, points, false, -1.5, 1.5);
        if (vm.tape().param_count() > 0) check_every_mode<Real>(vm, points, true, -1.5, 1.5);
    }
}

// Meson runs this suite as gpu_modes, gpu_modes_local and gpu_modes_slots: each must run the
// forward and reverse kernels its TAPEVM_GPU_INTERPRETER names. BA's programs need few homes
// and run in one dispatch, so `local` applies to them (test_gpu_device checks the fallbacks).
TEST_CASE("TAPEVM_GPU_INTERPRETER names the kernels that run forward and reverse calls") {
    using gpu::detail::Kernel;
    const char* variable = std::getenv("TAPEVM_GPU_INTERPRETER");
    const std::string interpreter = variable == nullptr || *variable == '\0' ? "auto" : variable;
    CAPTURE(interpreter);
    const Tape tape = examples::example_tape("ba-param");
    const auto device = gpu::detail::Device::acquire(test_options());
    const std::lock_guard lock(device->mutex());
    const gpu::detail::Runner runner(device, tape, 0);
    gpu::detail::Call forward, jacobian;
    forward.kernel = Kernel::forward;
    jacobian.kernel = Kernel::reverse;
    jacobian.planes = 1 + tape.output_count();
    jacobian.directions = tape.output_count();
    if (interpreter == "slots") {
        CHECK(runner.kernel(forward) == Kernel::forward);
        CHECK(runner.kernel(jacobian) == Kernel::reverse);
    } else if (interpreter == "local" || (interpreter == "auto" && device->info().type != "cpu")) {
        CHECK(runner.kernel(forward) == Kernel::forward_local);
        CHECK(runner.kernel(jacobian) == Kernel::reverse_local);
        CHECK(runner.work_values_per_lane(jacobian) == 0);
    } else {
        CHECK(runner.kernel(forward) == Kernel::forward_compact);
        CHECK(runner.kernel(jacobian) == Kernel::reverse_compact);
    }
}

TEST_CASE("every mode on the example tapes equals the reference VM (float)") { check_examples<float>(37); }

TEST_CASE("every mode on the example tapes equals the reference VM (double)") {
    const gpu::Vm probe(examples::example_tape("rosenbrock16"), test_options());
    if (!probe.device().float64) {
        CHECK_THROWS_AS(probe.forward(Batch<double>{1, std::vector<double>(16), {}}), Unsupported);
        return;
    }
    check_examples<double>(37);
}

// f(x, y) = x > y ? x * y : sin(x) - y: the recorded branch is x > y at (1, 0).
Tape guarded_tape() {
    const std::array<double, 2> at = {1.0, 0.0};
    return record(std::span<const double>(at), [](std::span<const Var> x) {
        if (x[0] > x[1]) return x[0] * x[1];
        return sin(x[0]) - x[1];
    });
}

// Operands repeated within an instruction (x * x, fma(x, x, y), pow(y, y)) and shared by
// many instructions: the bundled reverse sweep sums such contributions in registers.
TEST_CASE("repeated and shared operands, every mode, equal the reference VM") {
    const std::array<double, 3> at = {0.5, 1.5, -0.25};
    const Tape tape = record(std::span<const double>(at), [](std::span<const Var> x) {
        const Var square = x[0] * x[0];
        const Var twice = fma(x[1], x[1], x[0]) + pow(x[1], x[1]);
        const Var shared = x[2] * x[0] + x[2] * x[1] + x[2] * x[2] + sin(x[2]) * x[0];
        return std::vector<Var>{square * twice + shared, square - shared * x[0], fma(x[2], x[2], x[2])};
    });
    const gpu::Vm vm(tape, test_options(64));
    check_every_mode<float>(vm, 200, false, 0.25, 2);
    if (vm.device().float64) check_every_mode<double>(vm, 200, false, 0.25, 2);
}

TEST_CASE("guards are reported per point, across chunks, as by the reference VM") {
    const Tape tape = guarded_tape();
    REQUIRE(tape.guard_count() == 1);
    const gpu::Vm vm(tape, test_options(64));
    check_every_mode<float>(vm, 300, false, -1, 1);
    if (vm.device().float64) check_every_mode<double>(vm, 300, false, -1, 1);
    const std::vector<float> inputs = {2, 1, 0, 1, 3, 3, 5, -5};  // holds, fails, fails (tie), holds
    const auto result = vm.forward(Batch<float>{4, inputs, {}});
    CHECK(result.report.diverged == std::vector<std::size_t>{1, 2});
}

TEST_CASE("a NaN or infinite point leaves the other points' results alone") {
    const gpu::Vm vm(examples::example_tape("trig16"), test_options(64));
    auto inputs = random_values<float>(100 * 16, -1, 1, 7);
    const Batch<float> clean{100, inputs, {}};
    const auto before = vm.jacobian(clean).values;
    inputs[3 * 16 + 2] = std::numeric_limits<float>::quiet_NaN();
    inputs[70 * 16 + 5] = std::numeric_limits<float>::infinity();
    const auto after = vm.jacobian(Batch<float>{100, inputs, {}}).values;
    for (std::size_t point = 0; point < 100; ++point) {
        if (point == 3 || point == 70) continue;
        for (std::size_t i = 0; i < 16; ++i) CHECK(after[point * 16 + i] == before[point * 16 + i]);
    }
    check_validation_clean();
}

TEST_CASE("batches crossing chunk boundaries equal the reference VM") {
    // 256 points per chunk: 1, 255 and 256 fit in one, 257 needs two, 1031 (prime) five.
    const gpu::Vm vm(examples::example_tape("ba-param"), test_options(256));
    CHECK(vm.chunk_points<float>("jacobian") == 256);
    for (std::size_t points : {1, 255, 256, 257, 1031}) {
        const auto inputs = perturbed_rows<float>(examples::ba_test_inputs, points, 0.03, 11);
        const auto params = perturbed_rows<float>(examples::ba_test_feature, points, 0.03, 12);
        const Batch<float> batch{points, inputs, params};
        const reference::Vm ref(vm.tape());
        CAPTURE(points);
        check_close(vm.jacobian(batch).values, ref.jacobian(batch).values, "jacobian", 30,
                    ba_float_tolerance);
        check_close(vm.forward(batch).values, ref.forward(batch).values, "forward", 2, ba_float_tolerance);
    }
    check_validation_clean();
}

TEST_CASE("many small chunks: 1000 points in chunks of 64, float and double") {
    const gpu::Vm vm(examples::example_tape("rosenbrock16"), test_options(64));
    check_every_mode<float>(vm, 1000, false, -1.5, 1.5, 5);
    if (vm.device().float64) check_every_mode<double>(vm, 1000, false, -1.5, 1.5, 6);
}

TEST_CASE("a chunk size that is not a multiple of the workgroup is rounded up to one") {
    const gpu::Vm vm(examples::example_tape("rosenbrock16"), test_options(100));
    CHECK(vm.chunk_points<float>("gradient") == 128);
    check_every_mode<float>(vm, 300, false, -1.5, 1.5, 9);
}

// A two-layer tanh network with constant weights: about 10,000 instructions, more than a shader
// loop may run on lavapipe (llvmpipe stops loops after 65535 iterations): the runner splits
// such tapes into several dispatches there.
Tape network_tape() {
    constexpr int inputs = 8, hidden = 64;
    std::mt19937_64 engine(3);
    std::uniform_real_distribution<double> weight(-0.4, 0.4);
    std::vector<double> w1(inputs * hidden), w2(hidden * hidden), w3(hidden);
    for (auto* weights : {&w1, &w2, &w3})
        for (double& w : *weights) w = weight(engine);
    return record(inputs, [&](std::span<const Var> x) {
        std::vector<Var> first, second;
        for (int j = 0; j < hidden; ++j) {
            Var sum = Var(0.1);
            for (int i = 0; i < inputs; ++i) sum = sum + x[i] * Var(w1[j * inputs + i]);
            first.push_back(tanh(sum));
        }
        for (int j = 0; j < hidden; ++j) {
            Var sum = Var(-0.1);
            for (int i = 0; i < hidden; ++i) sum = sum + first[i] * Var(w2[j * hidden + i]);
            second.push_back(tanh(sum));
        }
        std::array<Var, 2> out = {Var(0.0), Var(0.0)};
        for (int j = 0; j < hidden; ++j) {
            out[0] = out[0] + second[j] * Var(w3[j]);
            out[1] = out[1] + second[j] * second[j];
        }
        return out;
    });
}

TEST_CASE("a tape of about 10,000 instructions, every mode (several dispatches on lavapipe)") {
    const gpu::Vm vm(network_tape(), test_options());
    REQUIRE(vm.tape().slot_count() > 8000);
    check_every_mode<float>(vm, 5, false, -1, 1, 13);
    if (vm.device().float64) check_every_mode<double>(vm, 5, false, -1, 1, 14);
}

}  // namespace
}  // namespace tapevm::test
