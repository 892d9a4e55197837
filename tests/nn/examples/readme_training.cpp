// The README's training example, verbatim: built (not run: it reads input.txt) so it keeps compiling.
#include <tapevm/nn/examples.hpp>  // CharCorpus
#include <tapevm/nn/gpt.hpp>
#include <tapevm/nn/optim.hpp>
#include <tapevm/nn/trainer.hpp>
#include <cstdio>
using namespace tapevm::nn;

int main() {
    const Device device = Device::cpu();  // or Device::gpu()
    const CharCorpus corpus = CharCorpus::from_file("input.txt");
    GPTConfig config = gpt_preset("tiny");
    config.vocab = corpus.vocab_size();
    GPT model(device, config);
    AdamW optimizer(model.parameters(), {.lr = 1e-3, .weight_decay = 0.1});
    LanguageModelObjective objective(model);
    Trainer trainer(objective, optimizer,
                    {.steps = 2000,
                     .clip = 1.0,
                     .schedule = CosineSchedule{1e-3, 1e-4, 100, 2000},
                     .eval_interval = 250});
    trainer.fit(corpus.source(device, false, 16, config.context, 1),
                corpus.source(device, true, 16, config.context, 1),
                [](const StepReport& r) { std::printf("step %zu loss %.4f\n", r.step, r.loss); });
    save_model(model, "model.safetensors");  // loads in PyTorch with safetensors.torch.load_file
}
