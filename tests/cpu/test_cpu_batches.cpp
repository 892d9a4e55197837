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

TEST_CASE("results larger than 4 MiB (staged, then written with non-temporal stores) at any alignment") {
    // Result arrays above 4 MiB go through a per-participant staging buffer and reach the
    // caller's array with non-temporal stores of whole cache lines while the next block
    // computes; the partial lines at either end of a block take plain stores. Rosenbrock's
    // gradient (16 columns) is exact against the reference; BA's reverse Jacobian (30 columns,
    // not a multiple of the width) must equal the same VM's on chunks of 1000 points, whose
    // results are small enough to be written directly.
    const Tape rosenbrock = tapevm::examples::example_tape("rosenbrock16");
    const RandomBatch<double> points(rosenbrock, 40009, 5, false);
    const auto expected = tapevm::reference::Vm(rosenbrock).gradient(points.batch()).values;
    const Tape ba = tapevm::examples::example_tape("ba");
    const RandomBatch<double> observations(ba, 20011, 6, true);
    const std::size_t columns = 2 * ba.input_count();
    // Buffers with room to place the results at any offset from a 64-byte boundary.
    std::vector<double> buffer(expected.size() + 16);
    std::vector<double> ba_buffer(observations.points * columns + 16);
    const auto at = [](std::vector<double>& v, std::size_t offset) {
        const auto address = reinterpret_cast<std::uintptr_t>(v.data());
        return v.data() + (64 - address % 64) % 64 / sizeof(double) + offset;
    };
    for (const tapevm::cpu::Isa isa : tapevm::cpu::supported_isas()) {
        for (const std::size_t lanes : {8, 24, 208}) {
            CAPTURE(tapevm::cpu::isa_name(isa));
            CAPTURE(lanes);
            const tapevm::cpu::Vm vm(rosenbrock, {.threads = 2, .isa = isa, .block_lanes = lanes});
            const tapevm::cpu::Vm ba_vm(ba, {.threads = 2, .isa = isa, .block_lanes = lanes});
            std::vector<double> ba_expected;
            for (std::size_t first = 0; first < observations.points; first += 1000) {
                const std::size_t count = std::min<std::size_t>(1000, observations.points - first);
                const tapevm::Batch<double> chunk{
                    count,
                    std::span<const double>(observations.inputs)
                        .subspan(first * ba.input_count(), count * ba.input_count()),
                    {}};
                const auto values = ba_vm.jacobian(chunk, tapevm::JacobianMode::reverse).values;
                ba_expected.insert(ba_expected.end(), values.begin(), values.end());
            }
            for (const std::size_t offset : {0, 1, 3, 7}) {
                CAPTURE(offset);
                const std::span<double> out(at(buffer, offset), expected.size());
                std::fill(out.begin(), out.end(), -1.0);
                vm.gradient(points.batch(), out);
                CHECK(tapevm::test::first_different_value(std::vector<double>(out.begin(), out.end()),
                                                          expected) == -1);
                const std::span<double> ba_out(at(ba_buffer, offset), ba_expected.size());
                std::fill(ba_out.begin(), ba_out.end(), -1.0);
                ba_vm.jacobian(observations.batch(), ba_out, tapevm::JacobianMode::reverse);
                CHECK(tapevm::test::first_different_value(std::vector<double>(ba_out.begin(), ba_out.end()),
                                                          ba_expected) == -1);
            }
        }
    }
}
