// The CPU VM against the reference VM on the example tapes: every operation, float and
// double, at batch sizes that are and are not multiples of the SIMD width and of the block.
#include "cpu_test_support.hpp"

namespace {

using tapevm::Tape;
using namespace tapevm::cpu_test;

template <class Real> void check_example(const std::string& name, std::size_t points, unsigned threads) {
    const Tape tape = tapevm::examples::example_tape(name);
    const tapevm::cpu::Vm vm(tape, {.threads = threads});
    const tapevm::reference::Vm reference(tape);
    const RandomBatch<Real> data(tape, points, 1000 + points, is_ba(name));
    check_all_operations<Real>(
        vm, reference, data, tolerance<Real>(name),
        name + " " + std::to_string(points) + " points " + (sizeof(Real) == 8 ? "f64" : "f32"));
}

TEST_CASE_TEMPLATE("every operation on every example equals the reference, batches of 1..1023", Real, double,
                   float) {
    for (const char* name : {"ba", "ba-param", "rosenbrock16", "trig16"}) {
        for (const std::size_t points : {1, 7, 8, 9, 1023}) {
            CAPTURE(name);
            CAPTURE(points);
            check_example<Real>(name, points, 2);
        }
    }
}

TEST_CASE_TEMPLATE("a batch of 100003 points (many blocks, a ragged last one) equals the reference", Real,
                   double, float) {
    check_example<Real>("rosenbrock16", 100003, 2);
    // The BA Jacobian, the product's main workload, in both modes.
    const Tape tape = tapevm::examples::example_tape("ba-param");
    const RandomBatch<Real> data(tape, 100003, 7, true);
    const tapevm::cpu::Vm vm(tape, {.threads = 2});
    const tapevm::reference::Vm reference(tape);
    for (const auto mode : {tapevm::JacobianMode::forward, tapevm::JacobianMode::reverse}) {
        const auto got = vm.jacobian(data.batch(), mode);
        const auto expected = reference.jacobian(data.batch(), mode);
        check_close(got.values, expected.values, tolerance<Real>("ba-param"), "ba-param jacobian 100003");
    }
}

TEST_CASE("rosenbrock16 (+, -, * only) is bit for bit the reference, every block size") {
    const Tape tape = tapevm::examples::example_tape("rosenbrock16");
    const tapevm::reference::Vm reference(tape);
    const RandomBatch<double> data(tape, 515, 3, false);
    const auto expected = reference.gradient(data.batch());
    for (const std::size_t lanes : {1, 8, 16, 24, 100, 1024, 4096}) {
        CAPTURE(lanes);
        const tapevm::cpu::Vm vm(tape, {.threads = 1, .block_lanes = lanes});
        const auto got = vm.gradient(data.batch());
        CHECK(tapevm::test::first_different_value(got.values, expected.values) == -1);
    }
}

}  // namespace
