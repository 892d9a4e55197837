// The example tapes against independent results: the BA Jacobian against ADBench's expected
// values for its test instance (rho <= 1e-8, ADBench's metric), every example's values
// against its native double version, rosenbrock16's gradient against the hand-written one.
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include <doctest/doctest.h>

#include "tapevm/error.hpp"
#include "tapevm/examples.hpp"
#include "tapevm/var.hpp"
#include "test_util.hpp"

using namespace tapevm;

namespace {

std::string read_text(const std::string& path) {
    std::ifstream in(path);
    REQUIRE_MESSAGE(in.good(), "cannot open ", path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

// The numbers of the JSON array stored under `key` (the file's arrays hold numbers only).
std::vector<double> json_array(const std::string& json, const std::string& key) {
    const auto at = json.find("\"" + key + "\"");
    REQUIRE(at != std::string::npos);
    const auto open = json.find('[', at);
    const auto close = json.find(']', open);
    std::vector<double> values;
    std::stringstream items(json.substr(open + 1, close - open - 1));
    std::string item;
    while (std::getline(items, item, ',')) values.push_back(std::stod(item));
    return values;
}

// ADBench's error metric.
double rho(double a, double b) { return std::fabs(a - b) / std::fmax(1.0, std::fabs(a) + std::fabs(b)); }

// ADBench's BA instance: one camera, point, weight and feature replicated (tests/data/README.md).
struct BaInstance {
    std::size_t cameras = 0, points = 0, observations = 0;
    std::vector<double> camera, point, feature;
    double weight = 0;
};

BaInstance read_instance(const std::string& path) {
    std::ifstream in(path);
    REQUIRE(in.good());
    BaInstance instance;
    in >> instance.cameras >> instance.points >> instance.observations;
    instance.camera.resize(11);
    instance.point.resize(3);
    instance.feature.resize(2);
    for (double& v : instance.camera) in >> v;
    for (double& v : instance.point) in >> v;
    in >> instance.weight;
    for (double& v : instance.feature) in >> v;
    REQUIRE(in.good());
    return instance;
}

}  // namespace

TEST_CASE("BA example: Jacobian matches ADBench's expected values (rho <= 1e-8)") {
    const BaInstance instance = read_instance(std::string(TAPEVM_ADBENCH_DATA) + "/test.txt");
    const std::string json = read_text(std::string(TAPEVM_ADBENCH_DATA) + "/ba_expected_test_outputs.json");
    const auto expected_jacobian = json_array(json, "jacobian_calculation_correctness:expected_J_values");
    const auto expected_reprojection =
        json_array(json, "objective_calculation_correctness:expected_reproj_err");
    const auto expected_weight = json_array(json, "objective_calculation_correctness:expected_weight_err");
    const std::size_t p = instance.observations;
    REQUIRE(expected_jacobian.size() == 31 * p);
    REQUIRE(expected_reprojection.size() == 2 * p);

    // Every observation's 15 inputs (camera k mod n, point k mod m: all identical here) and
    // its feature as a per-point parameter.
    std::vector<double> inputs, features;
    for (std::size_t k = 0; k < p; ++k) {
        inputs.insert(inputs.end(), instance.camera.begin(), instance.camera.end());
        inputs.insert(inputs.end(), instance.point.begin(), instance.point.end());
        inputs.push_back(instance.weight);
        features.insert(features.end(), instance.feature.begin(), instance.feature.end());
    }
    const reference::Vm vm(examples::example_tape("ba-param"));
    const Batch<double> batch{p, inputs, features};
    std::vector<double> residuals(2 * p), jacobians(30 * p);
    CHECK(vm.forward(batch, std::span<double>(residuals)).all_guards_hold());
    for (auto mode : {JacobianMode::reverse, JacobianMode::forward}) {
        CHECK(vm.jacobian(batch, std::span<double>(jacobians), mode).all_guards_hold());
        // CSR order: the 2p reprojection rows (15 nonzeros each, camera, point, weight), then
        // the p weight rows.
        for (std::size_t k = 0; k < 30 * p; ++k) CHECK(rho(jacobians[k], expected_jacobian[k]) <= 1e-8);
    }
    for (std::size_t k = 0; k < 2 * p; ++k) CHECK(rho(residuals[k], expected_reprojection[k]) <= 1e-8);

    // The weight error 1 - w^2 and its derivative -2w.
    const Tape weight_tape =
        record(1, [](std::span<const Var> w) { return examples::ba_weight_error(w[0]); });
    const reference::Vm weight_vm(weight_tape);
    for (std::size_t k = 0; k < p; ++k) {
        const std::vector<double> w = {instance.weight};
        CHECK(rho(test::forward(weight_vm, w)[0], expected_weight[k]) <= 1e-8);
        CHECK(rho(test::jacobian(weight_vm, w, JacobianMode::reverse)[0], expected_jacobian[30 * p + k]) <=
              1e-8);
    }
}

TEST_CASE("BA example: the constant-feature tape equals the parameter tape and the native code") {
    const std::vector<double> x(examples::ba_test_inputs.begin(), examples::ba_test_inputs.end());
    const std::vector<double> feature(examples::ba_test_feature.begin(), examples::ba_test_feature.end());
    const reference::Vm constant_vm(examples::example_tape("ba"));
    const reference::Vm param_vm(examples::example_tape("ba-param"));
    CHECK(constant_vm.tape().param_count() == 0);
    CHECK(param_vm.tape().param_count() == 2);
    CHECK(constant_vm.tape().guard_count() == 1);  // Rodrigues' theta^2 != 0 branch
    const auto native = examples::ba_residual<double, double>(x, feature.data());
    const auto y1 = test::forward(constant_vm, x);
    const auto y2 = test::forward(param_vm, x, feature);
    CHECK(y1[0] == native[0]);
    CHECK(y1[1] == native[1]);
    CHECK(y2 == y1);
    CHECK(test::jacobian(constant_vm, x, JacobianMode::reverse) ==
          test::jacobian(param_vm, x, JacobianMode::reverse, feature));
    // A zero rotation takes ADBench's other branch: the guard reports it.
    std::vector<double> unrotated(x);
    unrotated[0] = unrotated[1] = unrotated[2] = 0;
    std::vector<double> out(2);
    const Report report = constant_vm.forward(single_point<double>(unrotated), std::span<double>(out));
    CHECK(report.diverged == std::vector<std::size_t>{0});
}

TEST_CASE("rosenbrock16 and trig16: tape values equal the native functions; gradients are right") {
    const reference::Vm rosenbrock(examples::example_tape("rosenbrock16"));
    const reference::Vm trig(examples::example_tape("trig16"));
    for (int trial = 0; trial < 10; ++trial) {
        std::vector<double> x(16);
        for (std::size_t i = 0; i < 16; ++i) x[i] = std::sin(1.7 * static_cast<double>(i + 16 * trial)) * 1.5;
        CHECK(test::forward(rosenbrock, x)[0] == examples::rosenbrock16<double>(x));
        CHECK(test::forward(trig, x)[0] == examples::trig16<double>(x));
        // Hand-written gradient of rosenbrock16.
        std::vector<double> expected(16, 0.0);
        for (std::size_t i = 0; i < 15; ++i) {
            const double a = x[i + 1] - x[i] * x[i];
            expected[i] += -400 * x[i] * a - 2 * (1 - x[i]);
            expected[i + 1] += 200 * a;
        }
        const auto gradient = test::jacobian(rosenbrock, x, JacobianMode::reverse);
        for (std::size_t i = 0; i < 16; ++i) CHECK(test::close(gradient[i], expected[i], 1e-13));
        // trig16 against finite differences of the native function.
        const auto trig_gradient = test::jacobian(trig, x, JacobianMode::reverse);
        for (std::size_t i = 0; i < 16; ++i) {
            const double fd = test::central_difference(
                [](std::span<const double> at) { return examples::trig16<double>(at); }, x, i);
            CHECK(test::close(trig_gradient[i], fd, 1e-7));
        }
    }
}

TEST_CASE("example tapes: sizes and an unknown name") {
    for (const auto& example : examples::example_list()) {
        const Tape tape = examples::example_tape(example.name);
        CHECK(tape.output_count() >= 1);
        CHECK(tape.instruction_count() > tape.input_count());
    }
    CHECK(examples::example_tape("rosenbrock16").input_count() == 16);
    CHECK(examples::example_tape("trig16").output_count() == 1);
    CHECK(examples::example_tape("ba").output_count() == 2);
    CHECK_THROWS_AS(examples::example_tape("nope"), Error);
}

// Golden dumps: the exact tape every example records (after optimize()). A change in the
// recorder, the optimiser or the dump format shows up here; rerun with
// TAPEVM_UPDATE_GOLDEN=1 to rewrite tests/data/golden/ after checking the diff.
TEST_CASE("example tapes match their golden dumps") {
    const char* update_flag = std::getenv("TAPEVM_UPDATE_GOLDEN");
    const bool update = update_flag != nullptr && std::string(update_flag) == "1";
    for (const auto& example : examples::example_list()) {
        const std::string path =
            std::string(TAPEVM_TEST_DATA) + "/golden/" + std::string(example.name) + ".dump";
        const std::string dump = examples::example_tape(example.name).dump();
        if (update) {
            std::ofstream(path) << dump;
            continue;
        }
        INFO(path);
        CHECK(dump == read_text(path));
    }
}
