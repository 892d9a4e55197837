// tapevm train: the training examples. `mlp` fits a 2-64-64-1 MLP to a smooth function with
// Adam; `char-gpt` trains a character-level GPT on a text file and writes a checkpoint that
// `tapevm sample` continues text from (and PyTorch's safetensors loads).
#include <cmath>
#include <cstdio>
#include <optional>
#include <string>

#include "arguments.hpp"
#include "commands.hpp"
#include "tapevm/nn/examples.hpp"
#include "tapevm/nn/gpt.hpp"
#include "tapevm/nn/log.hpp"
#include "tapevm/nn/optim.hpp"
#include "tapevm/nn/trainer.hpp"

namespace tapevm::cli {
namespace {

constexpr std::string_view help = R"(usage: tapevm train mlp [--steps N] [--device cpu|gpu|reference] [--lr X] [--seed N]
       tapevm train char-gpt --data FILE [--device cpu|gpu|reference] [--preset tiny|shakespeare-char]
                             [--steps N] [--batch N] [--accumulation N] [--lr X] [--seed N]
                             [--eval-interval N] [--out FILE] [--log FILE] [--resume FILE] [--fp16]

mlp: a 2-64-64-1 tanh MLP regresses sin(2 x1) cos(1.5 x2) on [-1, 1]^2 from random batches
of 1,024 points with Adam (warm-up, cosine decay) and reports the validation mean squared
error on 4,096 fixed points (about 3.5e-5 after the default 2,000 steps on the cpu).

char-gpt: a character-level GPT on the bytes of FILE (90% training, 10% validation), AdamW
with warm-up and cosine decay, gradient clipping at 1. Shows progress every --log-interval
steps (a bar redrawn in place on a terminal, plain lines otherwise: step, loss, validation
loss, tokens/s, ETA), optionally logs every step as JSON lines, and writes a training
checkpoint (safetensors: parameters, optimizer state, step; the configuration and the
vocabulary in its metadata) to --out at every evaluation and at the end.

options:
  --device NAME         cpu (default), gpu or reference (f64, slow)
  --steps N             optimizer steps (mlp 2000; char-gpt: tiny 2000, shakespeare-char 5000)
  --lr X                peak learning rate (mlp 3e-3; char-gpt 1e-3)
  --seed N              initialisation and batches (1)
  --data FILE           the text to learn
  --preset NAME         tiny (2 layers, d 64, context 64, batch 16) or shakespeare-char
                        (nanoGPT's: 6 layers, 6 heads, d 384, context 256, batch 64, dropout 0.2)
  --batch N             sequences per micro-batch (from the preset)
  --accumulation N      micro-batches per step (1)
  --eval-interval N     validate (and checkpoint) every N steps (250)
  --log-interval N      print every N steps (50)
  --out FILE            the checkpoint (char-gpt.safetensors)
  --log FILE            also write one JSON object per step to FILE
  --resume FILE         continue from a checkpoint this command wrote
  --fp16                mixed precision: f16 weights and activations for the passes, f32
                        master weights for the optimizer, dynamic loss scaling (a step with
                        non-finite gradients is skipped and the scale halved)
)";

constexpr OptionSpec options[] = {
    {"--device", true}, {"--steps", true}, {"--lr", true}, {"--seed", true}, {"--data", true},
    {"--preset", true}, {"--batch", true}, {"--accumulation", true}, {"--eval-interval", true},
    {"--log-interval", true}, {"--out", true}, {"--log", true}, {"--resume", true}, {"--fp16", false}, {"--help", false}};

nn::Device make_device(std::string_view name) {
    if (name == "cpu") return nn::Device::cpu();
    if (name == "gpu") return nn::Device::gpu();
    if (name == "reference") return nn::Device::reference();
    throw UsageError("train: --device must be cpu, gpu or reference, not '" + std::string(name) + "'");
}

double parse_real(std::string_view name, std::string_view text) {
    const std::string copy(text);
    char* end = nullptr;
    const double value = std::strtod(copy.c_str(), &end);
    if (copy.empty() || end != copy.c_str() + copy.size() || !std::isfinite(value) || value <= 0) {
        throw UsageError("train: " + std::string(name) + " must be a positive number, not '" + copy + "'");
    }
    return value;
}

std::size_t count_option(const Arguments& arguments, std::string_view name, std::size_t fallback,
                         std::size_t minimum = 1) {
    const auto text = arguments.value(name);
    return text ? parse_count(name, *text, minimum, std::size_t{1} << 40) : fallback;
}

std::string fixed(double value, int digits) {
    char buffer[64];
    std::snprintf(buffer, sizeof buffer, "%.*f", digits, value);
    return buffer;
}

int run_mlp(const Arguments& arguments, std::ostream& out) {
    const nn::Device device = make_device(arguments.value("--device").value_or("cpu"));
    nn::MlpRegressionOptions options;
    options.steps = count_option(arguments, "--steps", options.steps);
    options.seed = count_option(arguments, "--seed", options.seed, 0);
    if (const auto lr = arguments.value("--lr")) options.lr = parse_real("--lr", *lr);
    const std::size_t log_interval = count_option(arguments, "--log-interval", 250);
    out << "mlp 2-" << options.hidden << "-" << options.hidden << "-1 on " << device.name() << ", "
        << options.steps << " steps of " << options.batch << " points\n";
    const auto report = [&](const nn::StepReport& r) {
        if (r.step % log_interval != 0 && r.step != r.total_steps) return;
        out << "step " << r.step << "/" << r.total_steps << "  mse " << r.loss;
        if (r.validation_loss) out << "  validation " << *r.validation_loss;
        out << "  " << fixed(r.elapsed, 1) << " s\n" << std::flush;
    };
    const nn::MlpRegressionResult result = nn::train_mlp_regression(device, options, report);
    out << "validation mse " << result.validation_mse << (result.validation_mse <= 1e-3 ? " (<= 1e-3)\n" : "\n");
    return 0;
}

int run_char_gpt(const Arguments& arguments, std::ostream& out) {
    const std::string data(arguments.required("--data", "FILE (the text to train on)"));
    const nn::Device device = make_device(arguments.value("--device").value_or("cpu"));
    const std::string preset(arguments.value("--preset").value_or("tiny"));
    nn::GPTConfig config = nn::gpt_preset(preset);
    const bool small = preset == "tiny";
    const std::size_t batch = count_option(arguments, "--batch", small ? 16 : 64);
    const std::size_t accumulation = count_option(arguments, "--accumulation", 1);
    const std::size_t steps = count_option(arguments, "--steps", small ? 2000 : 5000);
    const std::size_t eval_interval = count_option(arguments, "--eval-interval", 250);
    const std::size_t log_interval = count_option(arguments, "--log-interval", 50);
    const std::uint64_t seed = count_option(arguments, "--seed", 1, 0);
    const double lr = arguments.value("--lr") ? parse_real("--lr", *arguments.value("--lr")) : 1e-3;
    const std::string checkpoint(arguments.value("--out").value_or("char-gpt.safetensors"));

    const nn::CharCorpus corpus = nn::CharCorpus::from_file(data);
    config.vocab = corpus.vocab_size();
    config.seed = seed;
    nn::GPT model(device, config);
    const bool fp16 = arguments.has("--fp16");
    if (fp16) nn::enable_mixed_precision(model.parameters(), nn::DType::f16);
    nn::LossScaler scaler;
    nn::AdamW optimizer(model.parameters(), {.lr = lr, .beta2 = 0.99, .weight_decay = 0.1});
    nn::LanguageModelObjective objective(model);
    nn::TrainerOptions trainer_options;
    trainer_options.steps = steps;
    trainer_options.accumulation = accumulation;
    trainer_options.clip = 1.0;
    trainer_options.schedule = nn::CosineSchedule{lr, lr / 10, std::min<std::size_t>(100, steps / 10), steps};
    trainer_options.eval_interval = eval_interval;
    trainer_options.eval_batches = 8;
    if (fp16) trainer_options.loss_scaler = &scaler;
    nn::Trainer trainer(objective, optimizer, trainer_options);
    if (const auto resume = arguments.value("--resume")) {
        trainer.load_checkpoint(std::string(*resume));
        out << "resumed from " << *resume << " at step " << trainer.step() << '\n';
    }
    const nn::BatchSource train = corpus.source(device, false, batch, config.context, seed);
    const nn::BatchSource validation = corpus.source(device, true, batch, config.context, seed);

    std::vector<std::pair<std::string, std::string>> metadata = nn::gpt_config_metadata(config);
    metadata.emplace_back("chars", nn::vocabulary_metadata(corpus.vocabulary()));
    std::optional<nn::JsonLinesLog> log;
    if (const auto path = arguments.value("--log")) log.emplace(std::string(*path), arguments.has("--resume"));
    out << "char-gpt " << preset << " on " << device.name() << ": " << model.parameter_count() << " parameters, vocab "
        << config.vocab << ", " << corpus.train_tokens() << " training characters, batch " << batch << " x "
        << accumulation << " x " << config.context << (fp16 ? ", fp16 mixed precision" : "") << '\n' << std::flush;
    nn::ProgressBar progress(steps);
    const auto report = [&](const nn::StepReport& r) {
        nn::LogRecord record{.step = r.step, .loss = r.loss, .val_loss = r.validation_loss, .lr = r.lr,
                             .tokens_per_s = r.seconds > 0 ? static_cast<double>(r.tokens) / r.seconds : 0.0,
                             .elapsed = r.elapsed};
        if (log) log->write(record);
        if (r.validation_loss) trainer.save_checkpoint(checkpoint, metadata);
        if (r.step % log_interval == 0 || r.validation_loss || r.step == r.total_steps) progress.update(record);
    };
    trainer.fit(train, validation, report);
    progress.finish();
    trainer.save_checkpoint(checkpoint, metadata);
    out << "wrote " << checkpoint << '\n';
    return 0;
}

int run(std::span<const std::string_view> args, std::ostream& out, std::ostream&) {
    const Arguments arguments = parse_arguments("train", args, options);
    if (arguments.answered_help(help, out)) return 0;
    arguments.expect_positional(1, 1, "an example (mlp or char-gpt)");
    const std::string_view example = arguments.positional().front();
    if (example == "mlp") return run_mlp(arguments, out);
    if (example == "char-gpt") return run_char_gpt(arguments, out);
    throw UsageError("train: unknown example '" + std::string(example) + "' (mlp, char-gpt)");
}

}  // namespace

Command train_command() { return {"train", "train the examples: an MLP regression, a character-level GPT", help, run}; }

}  // namespace tapevm::cli
