#include <cstdio>

#include "tapevm/tapevm.hpp"

int main() {
    auto tape = tapevm::examples::example_tape("ba");
    std::puts(tape.dump().c_str());
    tapevm::reference::Vm vm(tape);
    std::vector<double> J(30);
    vm.jacobian(tapevm::single_point<double>(tapevm::examples::ba_test_inputs), std::span<double>(J));
    for (double v : J) std::printf("%.17g\n", v);
}
