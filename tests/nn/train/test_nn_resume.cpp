// Checkpoints: resuming is bitwise equal to a straight run (parameters, optimizer state,
// losses, dropout masks), and a checkpoint of another model is a clear error.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>

#include <unistd.h>

#include "markov_text.hpp"
#include "tapevm/error.hpp"
#include "tapevm/nn/examples.hpp"
#include "tapevm/nn/gpt.hpp"
#include "tapevm/nn/optim.hpp"
#include "tapevm/nn/trainer.hpp"

using namespace tapevm::nn;

namespace {

using tapevm::nn::test::markov_text;

std::filesystem::path temporary(const std::string& name) {
    return std::filesystem::temp_directory_path() /
           ("tapevm_test_" + std::to_string(::getpid()) + "_" + name);
}

}  // namespace

TEST_CASE("resume: 200 steps straight equal 100 + save + load + 100, bitwise (cpu, with dropout)") {
    const CharCorpus corpus(markov_text(4000, 5));
    const Device device = Device::cpu();
    GPTConfig config{
        .vocab = 8, .context = 16, .layers = 2, .heads = 2, .dim = 16, .dropout = 0.1, .seed = 4};
    const auto make_options = [] {
        TrainerOptions options;
        options.steps = 200;
        options.accumulation = 2;
        options.clip = 0.5;
        options.schedule = CosineSchedule{1e-2, 1e-3, 20, 200};
        return options;
    };
    const BatchSource batches = corpus.source(device, false, 4, config.context, 9);

    GPT straight(device, config);
    AdamW straight_opt(straight.parameters());
    LanguageModelObjective straight_objective(straight);
    Trainer straight_trainer(straight_objective, straight_opt, make_options());
    std::vector<double> straight_losses;
    straight_trainer.fit(batches, {}, [&](const StepReport& r) { straight_losses.push_back(r.loss); });

    const std::filesystem::path path = temporary("resume.safetensors");
    std::vector<double> resumed_losses;
    {
        GPT first(device, config);
        AdamW first_opt(first.parameters());
        LanguageModelObjective objective(first);
        TrainerOptions options = make_options();
        options.steps = 100;
        Trainer trainer(objective, first_opt, options);
        trainer.fit(batches, {}, [&](const StepReport& r) { resumed_losses.push_back(r.loss); });
        trainer.save_checkpoint(path);
    }
    GPTConfig other_seed = config;
    other_seed.seed = 77;  // everything must come from the checkpoint
    GPT second(device, other_seed);
    AdamW second_opt(second.parameters());
    LanguageModelObjective objective(second);
    Trainer trainer(objective, second_opt, make_options());
    trainer.load_checkpoint(path);
    CHECK(trainer.step() == 100);
    trainer.fit(batches, {}, [&](const StepReport& r) { resumed_losses.push_back(r.loss); });
    std::filesystem::remove(path);

    REQUIRE(resumed_losses.size() == straight_losses.size());
    for (std::size_t i = 0; i < straight_losses.size(); ++i) {
        INFO("step " << i + 1 << ": straight " << straight_losses[i] << " resumed " << resumed_losses[i]);
        CHECK(resumed_losses[i] == straight_losses[i]);
    }
    const auto a = straight.parameters();
    const auto b = second.parameters();
    for (std::size_t i = 0; i < a.size(); ++i) {
        INFO(a[i].name);
        CHECK(a[i].parameter->value.to_bytes() == b[i].parameter->value.to_bytes());
    }
    const auto sa = straight_opt.state();
    const auto sb = second_opt.state();
    for (std::size_t i = 0; i < sa.size(); ++i) {
        INFO(sa[i].first);
        CHECK(sa[i].second.to_bytes() == sb[i].second.to_bytes());
    }
    CHECK(straight_opt.steps() == second_opt.steps());

    // A checkpoint of another model is a clear error.
    const std::filesystem::path small = temporary("other.safetensors");
    GPTConfig narrow = config;
    narrow.dim = 8;
    GPT other(device, narrow);
    save_model(other, small);
    CHECK_THROWS_AS(load_model(second, small), tapevm::Error);
    std::filesystem::remove(small);
}
