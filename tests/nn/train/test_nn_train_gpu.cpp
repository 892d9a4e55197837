// The training stack on the gpu device (lavapipe here: tiny shapes) against the cpu device:
// the same GPT, seed and batches give the same losses and parameters after AdamW steps, and
// KV-cache decoding equals the full forward pass. Exits 77 (skipped) without a Vulkan device.
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "tapevm/nn/examples.hpp"
#include "tapevm/nn/gpt.hpp"
#include "tapevm/nn/optim.hpp"
#include "tapevm/nn/trainer.hpp"

using namespace tapevm::nn;

namespace {

std::string cycle_text(std::size_t length) {
    std::string text;
    for (std::size_t i = 0; i < length; ++i) text.push_back(static_cast<char>('a' + (i * 7 + i / 5) % 11));
    return text;
}

struct Run {
    std::vector<double> losses;
    std::vector<std::vector<double>> parameters;
};

Run train(const Device& device, const CharCorpus& corpus, const GPTConfig& config, bool fp16 = false) {
    GPT model(device, config);
    if (fp16) enable_mixed_precision(model.parameters(), DType::f16);
    AdamW optimizer(model.parameters(), {.lr = 3e-3});
    LanguageModelObjective objective(model);
    LossScaler scaler(1024);
    TrainerOptions options;
    options.steps = 5;
    options.accumulation = 2;
    options.clip = 1.0;
    if (fp16) options.loss_scaler = &scaler;
    Trainer trainer(objective, optimizer, options);
    Run run;
    trainer.fit(corpus.source(device, false, 2, config.context, 3), {},
                [&](const StepReport& r) { run.losses.push_back(r.loss); });
    for (const NamedParameter& p : model.parameters())
        run.parameters.push_back(p.parameter->value.to_double());
    return run;
}

}  // namespace

TEST_CASE("gpu: five AdamW steps of a tiny GPT match the cpu device") {
    const CharCorpus corpus(cycle_text(2000));
    const GPTConfig config{.vocab = corpus.vocab_size(),
                           .context = 8,
                           .layers = 2,
                           .heads = 2,
                           .kv_heads = 1,
                           .dim = 16,
                           .seed = 12};
    const Run cpu = train(Device::cpu(), corpus, config);
    const Run gpu = train(Device::gpu(), corpus, config);
    REQUIRE(gpu.losses.size() == cpu.losses.size());
    for (std::size_t i = 0; i < cpu.losses.size(); ++i) {
        INFO("step " << i + 1 << ": cpu " << cpu.losses[i] << " gpu " << gpu.losses[i]);
        CHECK(std::abs(gpu.losses[i] - cpu.losses[i]) <= 1e-4 * std::abs(cpu.losses[i]));
    }
    REQUIRE(gpu.parameters.size() == cpu.parameters.size());
    for (std::size_t i = 0; i < cpu.parameters.size(); ++i) {
        double error = 0;
        for (std::size_t j = 0; j < cpu.parameters[i].size(); ++j) {
            error = std::max(error, std::abs(gpu.parameters[i][j] - cpu.parameters[i][j]));
        }
        INFO("parameter " << i << ": max difference " << error);
        CHECK(error <= 1e-4);
    }
}

TEST_CASE(
    "gpu: fp16 mixed precision (f16 compute, f32 masters, loss scaling) matches the cpu device within 1e-2") {
    const CharCorpus corpus(cycle_text(2000));
    const GPTConfig config{
        .vocab = corpus.vocab_size(), .context = 8, .layers = 1, .heads = 2, .dim = 16, .seed = 3};
    const Run cpu = train(Device::cpu(), corpus, config, true);
    const Run gpu = train(Device::gpu(), corpus, config, true);
    REQUIRE(gpu.losses.size() == cpu.losses.size());
    for (std::size_t i = 0; i < cpu.losses.size(); ++i) {
        INFO("step " << i + 1 << ": cpu " << cpu.losses[i] << " gpu " << gpu.losses[i]);
        CHECK(std::isfinite(gpu.losses[i]));
        CHECK(std::abs(gpu.losses[i] - cpu.losses[i]) <= 1e-2 * std::abs(cpu.losses[i]));
    }
    CHECK(gpu.losses.back() < gpu.losses.front());
}

TEST_CASE("gpu: KV-cache decoding equals the full forward pass") {
    const Device device = Device::gpu();
    GPT model(device,
              {.vocab = 7, .context = 8, .layers = 1, .heads = 2, .kv_heads = 1, .dim = 16, .seed = 4});
    model.eval();
    const std::vector<std::int32_t> ids = {1, 4, 2, 6, 5};
    const std::vector<double> full =
        model.forward(device.upload({1, 5}, std::span<const std::int32_t>(ids))).to_double();
    std::vector<KvCache> caches = model.make_caches(1);
    std::vector<double> decoded =
        model.decode(device.upload({1, 2}, std::span<const std::int32_t>(ids.data(), 2)), caches, 0)
            .to_double();
    for (std::size_t t = 2; t < ids.size(); ++t) {
        const std::vector<double> step =
            model.decode(device.upload({1, 1}, std::span<const std::int32_t>(&ids[t], 1)), caches, t)
                .to_double();
        decoded.insert(decoded.end(), step.begin(), step.end());
    }
    REQUIRE(decoded.size() == full.size());
    for (std::size_t i = 0; i < full.size(); ++i) CHECK(decoded[i] == doctest::Approx(full[i]).epsilon(1e-4));
}

// Trainer::fit reads each step's loss while the next step runs (no clipping, no loss scaling:
// nothing else waits), and evaluates before recording the step after an evaluation step. The
// same run through train_step() and evaluate() one at a time must report the same numbers.
TEST_CASE("gpu: fit's overlapped loss reads report what train_step and evaluate report one at a time") {
    const CharCorpus corpus(cycle_text(2000));
    const GPTConfig config{.vocab = corpus.vocab_size(),
                           .context = 8,
                           .layers = 1,
                           .heads = 2,
                           .kv_heads = 2,
                           .dim = 16,
                           .seed = 5};
    const Device device = Device::gpu();
    struct Record {
        std::size_t step;
        double loss;
        std::optional<double> validation;
    };
    const auto run = [&](bool use_fit) {
        GPT model(device, config);
        AdamW optimizer(model.parameters(), {.lr = 3e-3});
        LanguageModelObjective objective(model);
        TrainerOptions options;
        options.steps = 7;
        options.eval_interval = 3;
        options.eval_batches = 1;
        Trainer trainer(objective, optimizer, options);
        const BatchSource train = corpus.source(device, false, 2, config.context, 3);
        const BatchSource validation = corpus.source(device, true, 2, config.context, 3);
        std::vector<Record> records;
        if (use_fit) {
            trainer.fit(train, validation, [&](const StepReport& r) {
                records.push_back({r.step, r.loss, r.validation_loss});
            });
        } else {
            while (trainer.step() < options.steps) {
                const StepReport r = trainer.train_step(train);
                std::optional<double> v;
                if (r.step % 3 == 0 || r.step == options.steps) v = trainer.evaluate(validation, 1);
                records.push_back({r.step, r.loss, v});
            }
        }
        return records;
    };
    const std::vector<Record> fitted = run(true), stepped = run(false);
    REQUIRE(fitted.size() == 7);
    REQUIRE(stepped.size() == 7);
    for (std::size_t i = 0; i < 7; ++i) {
        INFO("step " << i + 1);
        CHECK(fitted[i].step == i + 1);
        CHECK(fitted[i].loss == stepped[i].loss);
        CHECK(fitted[i].validation.has_value() == stepped[i].validation.has_value());
        if (fitted[i].validation && stepped[i].validation)
            CHECK(*fitted[i].validation == *stepped[i].validation);
    }
}
