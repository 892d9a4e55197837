// Training end to end on the CPU: the MLP example reaches MSE <= 1e-3, the tiny GPT learns a
// generated Markov chain down to near its entropy rate, fp16 mixed precision with loss
// scaling; the corpus and sampling helpers.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <string>

#include "markov_text.hpp"
#include "tapevm/error.hpp"
#include "tapevm/nn/examples.hpp"
#include "tapevm/nn/gpt.hpp"
#include "tapevm/nn/optim.hpp"
#include "tapevm/nn/trainer.hpp"

using namespace tapevm::nn;

namespace {

using tapevm::nn::test::markov_text;

}  // namespace

TEST_CASE("the MLP example reaches a validation MSE <= 1e-3 on the CPU") {
    const MlpRegressionResult result = train_mlp_regression(Device::cpu(), {});
    INFO("validation mse " << result.validation_mse);
    CHECK(result.validation_mse <= 1e-3);
    CHECK(result.last.step == 2000);
}

TEST_CASE("char-gpt tiny learns a Markov chain to within 0.1 nats of its entropy rate (cpu)") {
    const CharCorpus corpus(markov_text(40000, 11));
    REQUIRE(corpus.vocab_size() == 8);
    const Device device = Device::cpu();
    GPTConfig config = gpt_preset("tiny");
    config.vocab = corpus.vocab_size();
    config.context = 32;
    GPT model(device, config);
    AdamW optimizer(model.parameters(), {.lr = 3e-3, .beta2 = 0.99, .weight_decay = 0.1});
    LanguageModelObjective objective(model);
    TrainerOptions options;
    options.steps = 150;
    options.clip = 1.0;
    options.schedule = CosineSchedule{3e-3, 3e-4, 15, 150};
    Trainer trainer(objective, optimizer, options);
    trainer.fit(corpus.source(device, false, 16, config.context, 1));
    const double validation = trainer.evaluate(corpus.source(device, true, 16, config.context, 1), 8);
    const double entropy = std::log(2.0);
    INFO("validation loss " << validation << ", entropy rate " << entropy << ", uniform " << std::log(8.0));
    CHECK(validation < entropy + 0.1);
    CHECK(validation > entropy - 0.05);  // no model beats the entropy rate (up to sampling noise)
}

TEST_CASE("clipping on the device and on the host give the same steps (cpu)") {
    const CharCorpus corpus(markov_text(4000, 5));
    const Device device = Device::cpu();
    std::vector<std::vector<StepReport>> runs;
    for (const bool on_device : {true, false}) {
        GPT model(device, {.vocab = 8, .context = 16, .layers = 1, .heads = 2, .dim = 16, .seed = 4});
        AdamW optimizer(model.parameters(), {.lr = 1e-2});
        LanguageModelObjective objective(model);
        TrainerOptions options;
        options.steps = 6;
        options.clip = 0.05;  // below the norms: every step clips
        options.clip_on_device = on_device;
        Trainer trainer(objective, optimizer, options);
        std::vector<StepReport>& reports = runs.emplace_back();
        trainer.fit(corpus.source(device, false, 4, 16, 1), {},
                    [&](const StepReport& r) { reports.push_back(r); });
    }
    REQUIRE(runs[0].size() == 6);
    REQUIRE(runs[1].size() == 6);
    for (std::size_t i = 0; i < 6; ++i) {
        INFO("step " << i + 1);
        CHECK(runs[0][i].grad_norm > 0.05);
        CHECK(runs[0][i].grad_norm == doctest::Approx(runs[1][i].grad_norm).epsilon(1e-5));
        CHECK(runs[0][i].loss == doctest::Approx(runs[1][i].loss).epsilon(1e-5));
    }
    CHECK(runs[0][5].loss < runs[0][0].loss);
}

TEST_CASE("corpus errors and sampling") {
    CHECK_THROWS_AS(CharCorpus(""), tapevm::Error);
    CHECK_THROWS_AS(CharCorpus("aaaaaaaa"), tapevm::Error);
    const CharCorpus short_text("abcabcabcabc");
    CHECK_THROWS_AS(short_text.source(Device::reference(), false, 2, 64, 1), tapevm::Error);
    CHECK(decode_chars("abc", encode_chars("abc", "cab")) == "cab");
    CHECK_THROWS_AS(encode_chars("abc", "abd"), tapevm::Error);
    CHECK(vocabulary_from_metadata(vocabulary_metadata("\n ab")) == "\n ab");

    // Sampling at temperature 0 follows the arg-max of the full forward pass.
    const Device device = Device::reference();
    GPT model(device, {.vocab = 5, .context = 6, .layers = 1, .heads = 2, .dim = 8, .seed = 2});
    const std::vector<std::int32_t> prompt = {1, 3};
    const std::vector<std::int32_t> produced = sample_tokens(model, prompt, {.tokens = 9, .temperature = 0});
    REQUIRE(produced.size() == 9);
    std::vector<std::int32_t> all = prompt;
    for (std::size_t i = 0; i < 4; ++i) {  // while the window fits the context, decode == forward
        const std::vector<double> logits =
            model.forward(device.upload({1, all.size()}, std::span<const std::int32_t>(all))).to_double();
        std::int32_t best = 0;
        for (std::int32_t v = 1; v < 5; ++v) {
            if (logits[(all.size() - 1) * 5 + static_cast<std::size_t>(v)] >
                logits[(all.size() - 1) * 5 + static_cast<std::size_t>(best)]) {
                best = v;
            }
        }
        CHECK(produced[i] == best);
        all.push_back(best);
    }
}

TEST_CASE(
    "fp16 mixed precision: f32 masters, f16 compute, an overflowing step skipped and the scale halved "
    "(cpu)") {
    const CharCorpus corpus(markov_text(4000, 3));
    const Device device = Device::cpu();
    GPT model(device, {.vocab = 8, .context = 16, .layers = 1, .heads = 2, .dim = 16, .seed = 6});
    enable_mixed_precision(model.parameters(), DType::f16);
    for (const NamedParameter& p : model.parameters()) {
        CHECK(p.parameter->value.dtype() == DType::f32);
        CHECK(p.parameter->compute.dtype() == DType::f16);
        CHECK(p.parameter->grad.dtype() == DType::f16);
    }
    AdamW optimizer(model.parameters(), {.lr = 3e-3});
    LanguageModelObjective objective(model);
    LossScaler scaler(1e30, 1000);  // the first step's gradients overflow f16
    TrainerOptions options;
    options.steps = 60;
    options.loss_scaler = &scaler;
    Trainer trainer(objective, optimizer, options);
    const std::vector<std::byte> before = model.parameters()[0].parameter->value.to_bytes();
    const StepReport first = trainer.train_step(corpus.source(device, false, 8, 16, 1));
    CHECK(first.skipped);
    CHECK(scaler.scale() == 5e29);
    CHECK(optimizer.steps() == 0);
    CHECK(model.parameters()[0].parameter->value.to_bytes() == before);
    scaler.set_state(1024, 0);
    std::vector<double> losses;
    trainer.fit(corpus.source(device, false, 8, 16, 1), {}, [&](const StepReport& r) {
        CHECK_FALSE(r.skipped);
        losses.push_back(r.loss);
    });
    REQUIRE(losses.size() == 59);
    INFO("first " << losses.front() << " last " << losses.back());
    CHECK(std::isfinite(losses.back()));
    CHECK(losses.back() < losses.front() - 0.3);
    // The compute copies follow the masters.
    const auto& p = *model.parameters()[2].parameter;
    const std::vector<float> master = p.value.to_float();
    const std::vector<float> half = p.compute.to_float();
    for (std::size_t i = 0; i < master.size(); ++i) CHECK(half[i] == half_to_float(float_to_half(master[i])));
}

TEST_CASE("device memory stays flat over training steps (cpu)") {
    const CharCorpus corpus(markov_text(4000, 8));
    const Device device = Device::cpu();
    GPT model(device,
              {.vocab = 8, .context = 16, .layers = 2, .heads = 2, .dim = 16, .dropout = 0.1, .seed = 2});
    AdamW optimizer(model.parameters());
    LanguageModelObjective objective(model);
    TrainerOptions options;
    options.steps = 1000;
    options.clip = 1.0;
    options.eval_interval = 100;
    options.eval_batches = 1;
    Trainer trainer(objective, optimizer, options);
    const BatchSource train = corpus.source(device, false, 2, 16, 1);
    const BatchSource validation = corpus.source(device, true, 2, 16, 1);
    std::uint64_t after_warm_up = 0;
    trainer.fit(train, validation, [&](const StepReport& r) {
        if (r.step == 100) after_warm_up = device.live_memory();
        if (r.step > 100 && r.step % 100 == 0) CHECK(device.live_memory() == after_warm_up);
    });
    CHECK(after_warm_up > 0);
}
