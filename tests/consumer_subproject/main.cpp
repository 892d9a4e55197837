// Records g(x, y) = (x y, exp(x) - y) and checks its Jacobian at one point against the closed
// form, through tapevm built as a subproject. Exit status 0 when right.
#include <array>
#include <cmath>
#include <cstdio>
#include <span>

#include <tapevm/tapevm.hpp>

int main() {
    const tapevm::Tape tape = tapevm::record(2, [](std::span<const tapevm::Var> x) {
        return std::array<tapevm::Var, 2>{x[0] * x[1], exp(x[0]) - x[1]};
    });
    const tapevm::reference::Vm vm(tape);

    const std::array<double, 2> point = {0.75, -2.0};
    std::array<double, 4> jacobian{};  // [output][input]
    vm.jacobian(tapevm::single_point<double>(point), std::span<double>(jacobian));

    const double x = point[0], y = point[1];
    const std::array<double, 4> expected = {y, x, std::exp(x), -1.0};
    int wrong = 0;
    for (std::size_t k = 0; k < expected.size(); ++k) {
        if (std::fabs(jacobian[k] - expected[k]) > 1e-14 * (1.0 + std::fabs(expected[k]))) {
            std::printf("wrong J[%zu][%zu]: %.17g, expected %.17g\n", k / 2, k % 2, jacobian[k], expected[k]);
            ++wrong;
        }
    }
    std::printf("consumer (subproject): %d outputs x %d inputs, %s\n", static_cast<int>(tape.output_count()),
                static_cast<int>(tape.input_count()), wrong == 0 ? "Jacobian correct" : "WRONG");
    return wrong == 0 ? 0 : 1;
}
