// Records f(x, y) = sin(x) y + x^2 and checks its values and gradients at three points against
// the closed forms, through the installed headers and library only. Exit status 0 when right.
#include <cmath>
#include <cstdio>
#include <span>
#include <vector>

#include <tapevm/cpu.hpp>
#include <tapevm/error.hpp>
#include <tapevm/gpu.hpp>
#include <tapevm/tapevm.hpp>

int main() {
    const tapevm::Tape tape =
        tapevm::record(2, [](std::span<const tapevm::Var> x) { return sin(x[0]) * x[1] + x[0] * x[0]; });
    const tapevm::reference::Vm vm(tape);

    const std::vector<double> inputs = {0.5, 2.0, -1.0, 3.0, 2.5, -0.25};  // [points][2]
    const tapevm::Batch<double> batch{3, inputs, {}};
    std::vector<double> values(3);
    std::vector<double> gradients(6);
    vm.forward(batch, std::span<double>(values));
    vm.gradient(batch, std::span<double>(gradients));

    int wrong = 0;
    auto check = [&](const char* what, double got, double expected) {
        if (std::fabs(got - expected) > 1e-14 * (1.0 + std::fabs(expected))) {
            std::printf("wrong %s: %.17g, expected %.17g\n", what, got, expected);
            ++wrong;
        }
    };
    for (std::size_t point = 0; point < 3; ++point) {
        const double x = inputs[2 * point], y = inputs[2 * point + 1];
        check("value", values[point], std::sin(x) * y + x * x);
        check("df/dx", gradients[2 * point], std::cos(x) * y + 2.0 * x);
        check("df/dy", gradients[2 * point + 1], std::sin(x));
    }
    // The CPU VM from the installed library gives the same gradients.
    std::vector<double> cpu_gradients(6);
    tapevm::cpu::Vm(tape).gradient(batch, std::span<double>(cpu_gradients));
    for (std::size_t k = 0; k < 6; ++k) check("cpu gradient", cpu_gradients[k], gradients[k]);
    // The GPU VM links; without a device it says why instead of failing to start.
    try {
        std::printf("consumer (pkg-config): %zu Vulkan device(s)\n", tapevm::gpu::devices().size());
    } catch (const tapevm::DeviceUnavailable& e) {
        std::printf("consumer (pkg-config): no Vulkan device (%s)\n", e.what());
    }
    std::printf("consumer (pkg-config): %d instructions, %s\n", static_cast<int>(tape.instruction_count()),
                wrong == 0 ? "values and gradients correct" : "WRONG");
    return wrong == 0 ? 0 : 1;
}
