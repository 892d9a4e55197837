// Optimizers against their formulas written out on the host, the schedule, clipping, loss
// scaling, and gradient accumulation (one batch of 64 = 4 x 16) on the CPU.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <numbers>

#include "gradient_check.hpp"
#include "tapevm/error.hpp"
#include "tapevm/nn/gpt.hpp"
#include "tapevm/nn/layers.hpp"
#include "tapevm/nn/optim.hpp"
#include "tapevm/nn/trainer.hpp"

using namespace tapevm::nn;
using tapevm::nn::test::random_values;

namespace {

// A module with two bare parameters (one matrix, one vector) and no forward: optimizer tests.
class Bare : public Module {
public:
    explicit Bare(const Device& device, DType dtype = DType::f64) {
        matrix_ = make_parameter(device, {2, 3}, dtype);
        vector_ = make_parameter(device, {3}, dtype);
        register_parameter("matrix", matrix_);
        register_parameter("vector", vector_);
    }
    Tensor forward(const Tensor& x) override { return x; }
    Tensor backward(const Tensor& dy) override { return dy; }
    Parameter matrix_, vector_;
};

struct HostAdam {
    std::vector<double> p, m, v;
    void step(const std::vector<double>& g, double lr, double b1, double b2, double eps, double l2,
              double decoupled, double scale, int t) {
        for (std::size_t i = 0; i < p.size(); ++i) {
            const double gi = g[i] * scale + l2 * p[i];
            m[i] = b1 * m[i] + (1 - b1) * gi;
            v[i] = b2 * v[i] + (1 - b2) * gi * gi;
            const double m_hat = m[i] / (1 - std::pow(b1, t));
            const double v_hat = v[i] / (1 - std::pow(b2, t));
            p[i] = p[i] - lr * decoupled * p[i] - lr * m_hat / (std::sqrt(v_hat) + eps);
        }
    }
};

void set_gradients(Bare& bare, int step) {
    bare.matrix_.grad.assign(random_values(6, 100 + step));
    bare.vector_.grad.assign(random_values(3, 200 + step));
}

}  // namespace

TEST_CASE("Adam and AdamW: three steps against the host formula, decay only on matrices") {
    const Device device = Device::reference();
    for (const bool decoupled : {false, true}) {
        INFO("decoupled " << decoupled);
        Bare bare(device);
        bare.matrix_.value.assign(random_values(6, 1));
        bare.vector_.value.assign(random_values(3, 2));
        const AdamOptions options{.lr = 0.01, .beta1 = 0.8, .beta2 = 0.95, .eps = 1e-6, .weight_decay = 0.1};
        Adam adam(bare.parameters(), options, decoupled);
        HostAdam matrix{random_values(6, 1), std::vector<double>(6), std::vector<double>(6)};
        HostAdam vector{random_values(3, 2), std::vector<double>(3), std::vector<double>(3)};
        for (int t = 1; t <= 3; ++t) {
            set_gradients(bare, t);
            adam.step(0.5);
            const double l2 = decoupled ? 0 : 0.1;
            matrix.step(random_values(6, 100 + t), 0.01, 0.8, 0.95, 1e-6, l2, decoupled ? 0.1 : 0, 0.5, t);
            vector.step(random_values(3, 200 + t), 0.01, 0.8, 0.95, 1e-6, l2, 0, 0.5, t);
        }
        const std::vector<double> got_matrix = bare.matrix_.value.to_double();
        const std::vector<double> got_vector = bare.vector_.value.to_double();
        for (std::size_t i = 0; i < 6; ++i)
            CHECK(got_matrix[i] == doctest::Approx(matrix.p[i]).epsilon(1e-13));
        for (std::size_t i = 0; i < 3; ++i)
            CHECK(got_vector[i] == doctest::Approx(vector.p[i]).epsilon(1e-13));
        CHECK(adam.steps() == 3);
        CHECK(adam.state().size() == 4);
        CHECK(adam.state()[0].first == "matrix.exp_avg");
        const std::vector<double> m = adam.state()[0].second.to_double();
        for (std::size_t i = 0; i < 6; ++i) CHECK(m[i] == doctest::Approx(matrix.m[i]).epsilon(1e-13));
    }
}

TEST_CASE("SGD with momentum and weight decay against the host formula") {
    const Device device = Device::reference();
    Bare bare(device);
    std::vector<double> p = random_values(6, 3), buf(6);
    bare.matrix_.value.assign(p);
    SGD sgd(bare.parameters(), {.lr = 0.1, .momentum = 0.9, .weight_decay = 0.01});
    for (int t = 1; t <= 3; ++t) {
        set_gradients(bare, t);
        sgd.step(2.0);
        const std::vector<double> g = random_values(6, 100 + t);
        for (std::size_t i = 0; i < 6; ++i) {
            buf[i] = 0.9 * buf[i] + (2.0 * g[i] + 0.01 * p[i]);
            p[i] -= 0.1 * buf[i];
        }
    }
    const std::vector<double> got = bare.matrix_.value.to_double();
    for (std::size_t i = 0; i < 6; ++i) CHECK(got[i] == doctest::Approx(p[i]).epsilon(1e-13));
}

TEST_CASE("cosine schedule, clipping and the loss scaler") {
    const CosineSchedule schedule{.lr = 1.0, .min_lr = 0.1, .warmup = 9, .total = 109};
    CHECK(schedule.at(0) == doctest::Approx(0.1));
    CHECK(schedule.at(8) == doctest::Approx(0.9));
    CHECK(schedule.at(9) == doctest::Approx(1.0));
    CHECK(schedule.at(59) == doctest::Approx(0.1 + 0.5 * 0.9));
    CHECK(schedule.at(109) == doctest::Approx(0.1));
    CHECK(schedule.at(500) == doctest::Approx(0.1));

    const Device device = Device::reference();
    Bare bare(device);
    set_gradients(bare, 7);
    double host = 0;
    for (const double g : random_values(6, 107)) host += g * g;
    for (const double g : random_values(3, 207)) host += g * g;
    CHECK(grad_norm(bare.parameters()) == doctest::Approx(std::sqrt(host)).epsilon(1e-14));
    CHECK(clip_factor(4.0, 1.0) == doctest::Approx(0.25).epsilon(1e-6));
    CHECK(clip_factor(0.5, 1.0) == 1.0);
    CHECK(clip_factor(std::nan(""), 1.0) == 1.0);

    LossScaler scaler(1024, 2);
    CHECK_FALSE(scaler.update(false));
    CHECK(scaler.scale() == 512);
    CHECK(scaler.update(true));
    CHECK(scaler.scale() == 512);
    CHECK(scaler.update(true));
    CHECK(scaler.scale() == 1024);
    CHECK(scaler.skipped() == 1);
}

TEST_CASE("clipping on the device: clip_factor(tensor) and step(tensor) match the host path") {
    for (const Device& device : {Device::reference(), Device::cpu()}) {
        INFO(device.name());
        // Two equal models; one clips through the host, one through a device tensor.
        const DType dtype = device.accumulate_dtype();  // f64 on the reference device, f32 on the cpu
        Bare host_model(device, dtype), device_model(device, dtype);
        device_model.matrix_.value.assign(host_model.matrix_.value.to_double());
        device_model.vector_.value.assign(host_model.vector_.value.to_double());
        AdamW host_opt(host_model.parameters(), {.lr = 0.1, .weight_decay = 0.1});
        AdamW device_opt(device_model.parameters(), {.lr = 0.1, .weight_decay = 0.1});
        SGD sgd(device_model.parameters(), {.lr = 0.1, .momentum = 0.9});
        for (int step = 0; step < 3; ++step) {
            set_gradients(host_model, step);
            set_gradients(device_model, step);
            const double inv_scale = 0.5;  // a loss scale of 2 to remove
            const double norm = grad_norm(host_model.parameters()) * inv_scale;
            const double max_norm = step == 1 ? 100.0 : 0.3;  // step 1 does not clip
            const Tensor norm_squared = grad_norm_squared_tensor(device_model.parameters());
            CHECK(norm_squared.shape() == Shape{1});
            const Tensor factor = clip_factor(norm_squared, max_norm, inv_scale);
            const double expected = clip_factor(norm, max_norm) * inv_scale;
            const double tolerance = device.name() == "reference" ? 1e-14 : 1e-6;
            CHECK(factor.to_double()[0] == doctest::Approx(expected).epsilon(tolerance));
            host_opt.step(expected);
            device_opt.step(factor);
        }
        const std::vector<double> want = host_model.matrix_.value.to_double();
        const std::vector<double> got = device_model.matrix_.value.to_double();
        for (std::size_t i = 0; i < want.size(); ++i) CHECK(got[i] == doctest::Approx(want[i]).epsilon(1e-6));
        // SGD reads a device multiplier too: a factor of 0 leaves the parameters as they are.
        const Tensor zero_factor = device.zeros({1}, device_model.matrix_.value.dtype());
        sgd.step(zero_factor);
        const std::vector<double> after = device_model.matrix_.value.to_double();
        for (std::size_t i = 0; i < got.size(); ++i) CHECK(after[i] == got[i]);
        // A non-finite norm clips nothing (factor = inv_scale), as on the host.
        const Tensor bad = device.empty({1}, dtype);
        bad.assign(std::vector<double>{std::numeric_limits<double>::infinity()});
        CHECK(clip_factor(bad, 1.0, 0.25).to_double()[0] == 0.25);
        // Bad arguments: a typed error, nothing run.
        CHECK_THROWS_AS(device_opt.step(device.zeros({2}, dtype)), tapevm::ShapeError);
        CHECK_THROWS_AS(device_opt.step(Tensor()), tapevm::Error);
        CHECK_THROWS_AS(clip_factor(bad, 0.0), tapevm::Error);
    }
}

TEST_CASE("gradient accumulation: one batch of 64 equals 4 micro-batches of 16 (cpu, f32)") {
    const Device device = Device::cpu();
    const GPTConfig config{.vocab = 11, .context = 8, .layers = 2, .heads = 2, .dim = 16, .seed = 3};
    std::vector<std::int32_t> ids(64 * 8), targets(64 * 8);
    const std::vector<double> r = random_values(2 * ids.size(), 5, 0, 11);
    for (std::size_t i = 0; i < ids.size(); ++i) {
        ids[i] = static_cast<std::int32_t>(r[i]);
        targets[i] = static_cast<std::int32_t>(r[ids.size() + i]);
    }
    GPT whole(device, config);
    whole.zero_grad();
    whole.loss(device.upload({64, 8}, std::span<const std::int32_t>(ids)),
               device.upload({64, 8}, std::span<const std::int32_t>(targets)));
    whole.backward_loss();

    GPT parts(device, config);
    parts.zero_grad();
    for (std::size_t m = 0; m < 4; ++m) {
        const std::span<const std::int32_t> x(ids.data() + m * 16 * 8, 16 * 8);
        const std::span<const std::int32_t> y(targets.data() + m * 16 * 8, 16 * 8);
        parts.loss(device.upload({16, 8}, x), device.upload({16, 8}, y), -1, 0.25);
        parts.backward_loss();
    }
    const auto a = whole.parameters();
    const auto b = parts.parameters();
    REQUIRE(a.size() == b.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
        const std::vector<double> ga = a[i].parameter->grad.to_double();
        const std::vector<double> gb = b[i].parameter->grad.to_double();
        double scale = 0, error = 0;
        for (std::size_t j = 0; j < ga.size(); ++j) {
            scale = std::max(scale, std::abs(ga[j]));
            error = std::max(error, std::abs(ga[j] - gb[j]));
        }
        INFO(a[i].name << ": error " << error << " scale " << scale);
        CHECK(error <= 2e-5 * scale + 1e-9);
        CHECK(scale > 0);
    }
}
