// Device-resident buffers: round trips, evaluations that leave results on the device, reuse,
// errors (sizes, wrong buffers, unsupported requests) and a Vm that stays usable after them.
#include <doctest/doctest.h>

#include "gpu_support.hpp"
#include "tapevm/error.hpp"
#include "tapevm/examples.hpp"
#include "tapevm/var.hpp"

namespace tapevm::test {
namespace {

template <class Real> void check_round_trip(const gpu::Vm& vm) {
    for (std::size_t count : {0, 1, 1000}) {
        const auto values = random_values<Real>(count, -10, 10, 3);
        const auto buffer = vm.upload<Real>(values);
        CHECK(buffer.size() == count);
        std::vector<Real> back(count);
        vm.download(buffer, std::span<Real>(back));
        CHECK(back == values);
    }
    const auto zeros = vm.allocate<Real>(17);
    std::vector<Real> back(17, Real(1));
    vm.download(zeros, std::span<Real>(back));
    CHECK(back == std::vector<Real>(17, Real(0)));
}

TEST_CASE("upload, allocate and download round trips") {
    const gpu::Vm vm(examples::example_tape("rosenbrock16"), test_options());
    check_round_trip<float>(vm);
    if (vm.device().float64) check_round_trip<double>(vm);
    if (!vm.device().float64) CHECK_THROWS_AS(vm.allocate<double>(4), Unsupported);
    check_validation_clean();
}

template <class Real> void check_resident(bool shared_params) {
    // 500 points in chunks of 64: device buffers are bound chunk by chunk at their offsets.
    const gpu::Vm vm(examples::example_tape("ba-param"), test_options(64));
    const std::size_t points = 500;
    const auto x = perturbed_rows<Real>(examples::ba_test_inputs, points, 0.03, 21);
    const auto p = perturbed_rows<Real>(examples::ba_test_feature, shared_params ? 1 : points, 0.03, 22);
    const Batch<Real> batch{points, x, p};
    const auto inputs = vm.upload<Real>(x);
    const auto params = vm.upload<Real>(p);

    auto outputs = vm.allocate<Real>(points * 2);
    auto jacobians = vm.allocate<Real>(points * 30);
    for (int repeat = 0; repeat < 2; ++repeat) {  // inputs stay on the device between calls
        CHECK(vm.forward(points, inputs, &params, outputs).all_guards_hold());
        CHECK(vm.jacobian(points, inputs, &params, jacobians, JacobianMode::reverse).all_guards_hold());
    }
    std::vector<Real> values(points * 2), jac(points * 30);
    vm.download(outputs, std::span<Real>(values));
    vm.download(jacobians, std::span<Real>(jac));
    CHECK(values == vm.forward(batch).values);
    CHECK(jac == vm.jacobian(batch, JacobianMode::reverse).values);
    vm.jacobian(points, inputs, &params, jacobians, JacobianMode::forward);
    vm.download(jacobians, std::span<Real>(jac));
    CHECK(jac == vm.jacobian(batch, JacobianMode::forward).values);

    const gpu::Vm rosenbrock(examples::example_tape("rosenbrock16"), test_options(64));
    const auto rx = random_values<Real>(points * 16, -1, 1, 23);
    const auto rinputs = rosenbrock.upload<Real>(rx);
    auto gradients = rosenbrock.allocate<Real>(points * 16);
    rosenbrock.gradient(points, rinputs, nullptr, gradients);
    std::vector<Real> grad(points * 16);
    rosenbrock.download(gradients, std::span<Real>(grad));
    CHECK(grad == rosenbrock.gradient(Batch<Real>{points, rx, {}}).values);
    check_validation_clean();
}

TEST_CASE("device-resident evaluations equal the host-span ones (float)") {
    check_resident<float>(false);
    check_resident<float>(true);
}

TEST_CASE("device-resident evaluations equal the host-span ones (double)") {
    if (!gpu::Vm(examples::example_tape("rosenbrock16"), test_options()).device().float64) return;
    check_resident<double>(false);
    check_resident<double>(true);
}

TEST_CASE("wrong sizes and wrong buffers are clear errors, and the Vm stays usable") {
    const gpu::Vm vm(examples::example_tape("ba-param"), test_options());
    const auto inputs = vm.upload<float>(random_values<float>(10 * 15, 0.5, 1.5, 31));
    const auto params = vm.upload<float>(random_values<float>(10 * 2, 0.5, 1.5, 32));
    auto outputs = vm.allocate<float>(10 * 2);
    auto small = vm.allocate<float>(10);
    CHECK_THROWS_AS(vm.forward(11, inputs, &params, outputs), ShapeError);    // inputs too small
    CHECK_THROWS_AS(vm.forward(10, inputs, &params, small), ShapeError);      // outputs too small
    CHECK_THROWS_AS(vm.forward(10, inputs, nullptr, outputs), ShapeError);    // params missing
    CHECK_THROWS_AS(vm.forward(10, inputs, &small, outputs), ShapeError);     // params of a wrong size
    CHECK_THROWS_AS(vm.gradient(10, inputs, &params, outputs), Unsupported);  // two outputs
    std::vector<float> wrong(3);
    CHECK_THROWS_AS(vm.download(outputs, std::span<float>(wrong)), ShapeError);
    gpu::Buffer<float> moved = std::move(small);
    CHECK_THROWS_AS(vm.forward(10, inputs, &params, small), Error);  // moved-from buffer
    // Host spans: the shape checks of the Evaluator interface.
    std::vector<float> x(10 * 15, 1.0f), out(5);
    CHECK_THROWS_AS(vm.forward(Batch<float>{10, x, {}}, std::span<float>(out)), ShapeError);
    // Still usable.
    CHECK(vm.forward(10, inputs, &params, outputs).all_guards_hold());
    std::vector<float> values(20);
    vm.download(outputs, std::span<float>(values));
    for (float value : values) CHECK(std::isfinite(value));
    check_validation_clean();
}

TEST_CASE("an empty batch and tapes without inputs or outputs") {
    const gpu::Vm vm(examples::example_tape("rosenbrock16"), test_options());
    CHECK(vm.forward(Batch<float>{0, {}, {}}).values.empty());
    const Tape constant = record(0, [](std::span<const Var>) { return Var(2.5); });
    const gpu::Vm constant_vm(constant, test_options());
    const auto result = constant_vm.forward(Batch<float>{3, {}, {}});
    CHECK(result.values == std::vector<float>{2.5f, 2.5f, 2.5f});
    CHECK(constant_vm.jacobian(Batch<float>{3, {}, {}}).values.empty());
    check_validation_clean();
}

TEST_CASE("last_timing reports the GPU time of the last call") {
    const gpu::Vm vm(examples::example_tape("trig16"), test_options());
    const auto x = random_values<float>(1000 * 16, -1, 1, 41);
    vm.gradient(Batch<float>{1000, x, {}});
    const auto timing = vm.last_timing();
    CHECK(timing.compute_s >= 0);
    CHECK(timing.transfer_s >= 0);
    CHECK(timing.compute_s < 60);
}

}  // namespace
}  // namespace tapevm::test
