// Each module's backward against central finite differences on the f64 reference device,
// parameter naming, dropout's mask, and a whole tiny GPT at 1e-7 relative.
#include <doctest/doctest.h>

#include <cmath>
#include <numbers>
#include <set>
#include <string>

#include "gradient_check.hpp"
#include "tapevm/error.hpp"
#include "tapevm/nn/gpt.hpp"
#include "tapevm/nn/layers.hpp"
#include "tapevm/var.hpp"

using namespace tapevm::nn;
using tapevm::nn::test::check_module_gradients;
using tapevm::nn::test::random_values;

namespace {

constexpr double tolerance = 1e-7;

Tensor random_input(const Device& device, const Shape& shape, std::uint64_t seed, double low = -1,
                    double high = 1) {
    const std::vector<double> values = random_values(element_count(shape), seed, low, high);
    return device.upload(shape, std::span<const double>(values), DType::f64);
}

}  // namespace

TEST_CASE("Linear: backward against finite differences, with and without bias") {
    const Device device = Device::reference();
    Linear with_bias(device, 5, 3);
    check_module_gradients(with_bias, random_input(device, {2, 4, 5}, 1), tolerance);
    Linear without(device, 5, 3, false);
    CHECK(without.parameters().size() == 1);
    check_module_gradients(without, random_input(device, {3, 5}, 2), tolerance);
}

TEST_CASE("Linear: y = x W^T + b against a host product") {
    const Device device = Device::reference();
    Linear layer(device, 3, 2);
    const std::vector<double> w = {1, 2, 3, 4, 5, 6};
    const std::vector<double> b = {0.5, -1};
    layer.weight().value.assign(w);
    layer.bias()->value.assign(b);
    const std::vector<double> x = {1, -1, 2};
    const std::vector<double> y =
        layer.forward(device.upload({1, 3}, std::span<const double>(x), DType::f64)).to_double();
    CHECK(y[0] == doctest::Approx(1 - 2 + 6 + 0.5));
    CHECK(y[1] == doctest::Approx(4 - 5 + 12 - 1));
    CHECK_THROWS_AS(layer.forward(device.zeros({2, 4}, DType::f64)), tapevm::Error);
}

TEST_CASE("Embedding: the table's gradient against finite differences") {
    const Device device = Device::reference();
    Embedding embedding(device, 7, 4);
    const std::vector<std::int32_t> ids = {3, 0, 3, 6, 1};
    check_module_gradients(embedding, device.upload({5}, std::span<const std::int32_t>(ids)), tolerance, 28);
}

TEST_CASE("LayerNorm and RMSNorm: backward against finite differences") {
    const Device device = Device::reference();
    LayerNorm layer_norm(device, 6);
    init_normal(layer_norm.parameters()[0].parameter->value, 1, 0.3, 1, 1);
    init_normal(layer_norm.parameters()[1].parameter->value, 0, 0.3, 1, 2);
    check_module_gradients(layer_norm, random_input(device, {3, 6}, 3), tolerance);
    LayerNorm no_bias(device, 6, false);
    CHECK(no_bias.parameters().size() == 1);
    check_module_gradients(no_bias, random_input(device, {2, 6}, 4), tolerance);
    RMSNorm rms(device, 5);
    init_normal(rms.parameters()[0].parameter->value, 1, 0.3, 1, 3);
    check_module_gradients(rms, random_input(device, {2, 2, 5}, 5), tolerance);
}

TEST_CASE("activations: values at known points and backward against finite differences") {
    const Device device = Device::reference();
    const std::vector<double> points = {-2, -0.5, 0.25, 1.5};
    const Tensor x = device.upload({4}, std::span<const double>(points), DType::f64);
    for (const std::string name : {"relu", "gelu", "silu", "tanh"}) {
        INFO(name);
        Activation activation(activation_tape(name));
        const std::vector<double> y = activation.forward(x).to_double();
        for (std::size_t i = 0; i < points.size(); ++i) {
            const double v = points[i];
            double expected = 0;
            if (name == "relu") expected = v > 0 ? v : 0;
            if (name == "gelu")
                expected =
                    0.5 * v * (1 + std::tanh(std::sqrt(2 / std::numbers::pi) * (v + 0.044715 * v * v * v)));
            if (name == "silu") expected = v / (1 + std::exp(-v));
            if (name == "tanh") expected = std::tanh(v);
            CHECK(y[i] == doctest::Approx(expected).epsilon(1e-12));
        }
        // Inputs away from ReLU's kink.
        check_module_gradients(activation, random_input(device, {3, 4}, 6, 0.1, 2), tolerance);
        check_module_gradients(activation, random_input(device, {3, 4}, 7, -2, -0.1), tolerance);
    }
    CHECK_THROWS_AS(activation_tape("swish"), tapevm::Error);
}

TEST_CASE("Activation: bring your own tape, with parameters") {
    const Device device = Device::reference();
    // Leaky ReLU's smooth cousin: softplus(x) scaled by a parameter.
    const tapevm::Tape tape =
        tapevm::record(1, 1, [](std::span<const tapevm::Var> x, std::span<const tapevm::Var> p) {
            return p[0] * log1p(exp(x[0]));
        });
    Activation activation(tape, {0.75});
    const std::vector<double> y = activation.forward(random_input(device, {1}, 8)).to_double();
    const double x0 = random_values(1, 8)[0];
    CHECK(y[0] == doctest::Approx(0.75 * std::log1p(std::exp(x0))).epsilon(1e-12));
    check_module_gradients(activation, random_input(device, {2, 3}, 9), tolerance);
    CHECK_THROWS_AS(Activation{tape}, tapevm::Error);  // a parameter missing
    const tapevm::Tape two = tapevm::record(2, [](std::span<const tapevm::Var> x) { return x[0] * x[1]; });
    CHECK_THROWS_AS(Activation{two}, tapevm::Error);
}

TEST_CASE("Dropout: mask, scaling, determinism, evaluation mode") {
    const Device device = Device::reference();
    const std::vector<double> ones(4000, 1.0);
    const Tensor x = device.upload({4000}, std::span<const double>(ones), DType::f64);
    Dropout a(0.25, 7), b(0.25, 7);
    const std::vector<double> ya = a.forward(x).to_double();
    CHECK(b.forward(x).to_double() == ya);
    std::size_t kept = 0;
    for (const double v : ya) {
        CHECK((v == 0 || std::abs(v - 1 / 0.75) < 1e-15));
        kept += v != 0;
    }
    CHECK(std::abs(static_cast<double>(kept) / 4000 - 0.75) < 0.03);
    // backward multiplies by the same mask.
    const std::vector<double> twos(4000, 2.0);
    const std::vector<double> dx =
        a.backward(device.upload({4000}, std::span<const double>(twos), DType::f64)).to_double();
    for (std::size_t i = 0; i < dx.size(); ++i) CHECK(dx[i] == 2 * ya[i]);
    // the next call draws another mask; the counter replays it.
    const std::vector<double> second = a.forward(x).to_double();
    CHECK(second != ya);
    Dropout c(0.25, 7);
    c.set_counter(1);
    CHECK(c.forward(x).to_double() == second);
    a.eval();
    CHECK(a.forward(x).to_double() == ones);
    CHECK_THROWS_AS(Dropout(1.0, 1), tapevm::Error);
}

TEST_CASE("Sequential and MLP: backward against finite differences, names") {
    const Device device = Device::reference();
    Sequential net;
    net.emplace<Linear>(device, 3, 8);
    net.emplace<Activation>(tanh_tape());
    net.emplace<Linear>(device, 8, 2);
    std::vector<std::string> names;
    for (const NamedParameter& p : net.parameters()) names.push_back(p.name);
    CHECK(names == std::vector<std::string>{"0.weight", "0.bias", "2.weight", "2.bias"});
    CHECK(net.parameter_count() == 3 * 8 + 8 + 8 * 2 + 2);
    check_module_gradients(net, random_input(device, {4, 3}, 10), tolerance);
    MLP mlp(device, 4, 10, gelu_tape());
    check_module_gradients(mlp, random_input(device, {2, 3, 4}, 11), tolerance);
}

TEST_CASE("CausalSelfAttention (grouped-query) and TransformerBlock: backward against finite differences") {
    const Device device = Device::reference();
    CausalSelfAttention attention(device, 8, 4, 2);
    std::vector<std::string> names;
    for (const NamedParameter& p : attention.parameters()) names.push_back(p.name);
    CHECK(names == std::vector<std::string>{"q.weight", "q.bias", "k.weight", "k.bias", "v.weight", "v.bias",
                                            "proj.weight", "proj.bias"});
    CHECK(attention.k().out_features() == 4);
    check_module_gradients(attention, random_input(device, {2, 5, 8}, 12), tolerance, 8);
    CHECK_THROWS_AS(CausalSelfAttention(device, 8, 3, 1), tapevm::Error);

    BlockConfig config{.dim = 8, .heads = 2, .kv_heads = 1, .mlp_hidden = 16};
    TransformerBlock block(device, config);
    check_module_gradients(block, random_input(device, {2, 4, 8}, 13), tolerance, 6);
    config.rms_norm = true;
    config.activation = "silu";
    config.bias = false;
    TransformerBlock rms_block(device, config);
    check_module_gradients(rms_block, random_input(device, {1, 3, 8}, 14), tolerance, 6);
}

TEST_CASE("GPT: names, tying, and the whole model's gradient against finite differences at 1e-7") {
    const Device device = Device::reference();
    GPTConfig config{
        .vocab = 11, .context = 8, .layers = 2, .heads = 2, .dim = 16, .tie_weights = true, .seed = 5};
    GPT model(device, config);
    std::set<std::string> names;
    for (const NamedParameter& p : model.parameters()) names.insert(p.name);
    CHECK(names.count("wte.weight") == 1);
    CHECK(names.count("blocks.1.attn.q.weight") == 1);
    CHECK(names.count("blocks.0.mlp.proj.bias") == 1);
    CHECK(names.count("ln_f.weight") == 1);
    CHECK(names.count("lm_head.weight") == 0);  // tied: read through wte.weight

    std::vector<std::int32_t> ids(2 * 8), targets(2 * 8);
    const std::vector<double> r = random_values(32, 21, 0, 11);
    for (std::size_t i = 0; i < 16; ++i) {
        ids[i] = static_cast<std::int32_t>(r[i]);
        targets[i] = static_cast<std::int32_t>(r[16 + i]);
    }
    targets[5] = 0;  // pad
    const Tensor x = device.upload({2, 8}, std::span<const std::int32_t>(ids));
    const Tensor y = device.upload({2, 8}, std::span<const std::int32_t>(targets));
    model.zero_grad();
    model.loss(x, y, 0);
    model.backward_loss();
    const auto loss = [&] { return model.loss(x, y, 0).to_double()[0]; };
    double global = 0;
    for (const NamedParameter& p : model.parameters()) {
        for (const double g : p.parameter->grad.to_double()) global = std::max(global, std::abs(g));
    }
    for (const NamedParameter& p : model.parameters()) {
        const std::vector<double> grad = p.parameter->grad.to_double();
        const auto c = tapevm::nn::test::compare_entries(p.parameter->value, grad,
                                                         tapevm::nn::test::sample_indices(grad.size(), 6),
                                                         loss, 1e-5, 1e-2 * global);
        INFO(p.name << ": error " << c.error << " scale " << c.scale);
        CHECK(c.relative() <= tolerance);
    }

    GPTConfig untied = config;
    untied.tie_weights = false;
    GPT separate(device, untied);
    std::set<std::string> separate_names;
    for (const NamedParameter& p : separate.parameters()) separate_names.insert(p.name);
    CHECK(separate_names.count("lm_head.weight") == 1);
    // Same seed, same initialisation of a shared name on another construction.
    CHECK(separate.parameters()[0].parameter->value.to_double() ==
          model.parameters()[0].parameter->value.to_double());
    CHECK_THROWS_AS(model.forward(device.zeros({1, 9}, DType::i32)), tapevm::Error);
}

TEST_CASE("GPT: decoding through key/value caches matches the full forward") {
    const Device device = Device::reference();
    GPTConfig config{.vocab = 11, .context = 8, .layers = 2, .heads = 4, .kv_heads = 2, .dim = 16, .seed = 9};
    GPT model(device, config);
    model.eval();
    const std::vector<std::int32_t> ids = {1, 4, 2, 8, 5, 7};
    const std::vector<double> full =
        model.forward(device.upload({1, 6}, std::span<const std::int32_t>(ids))).to_double();
    std::vector<KvCache> caches = model.make_caches(1);
    // a prefill of 3 tokens, then one token at a time
    std::vector<double> decoded =
        model.decode(device.upload({1, 3}, std::span<const std::int32_t>(ids.data(), 3)), caches, 0)
            .to_double();
    for (std::size_t t = 3; t < ids.size(); ++t) {
        const std::vector<double> step =
            model.decode(device.upload({1, 1}, std::span<const std::int32_t>(&ids[t], 1)), caches, t)
                .to_double();
        decoded.insert(decoded.end(), step.begin(), step.end());
    }
    REQUIRE(decoded.size() == full.size());
    for (std::size_t i = 0; i < full.size(); ++i)
        CHECK(decoded[i] == doctest::Approx(full[i]).epsilon(1e-12));
}
