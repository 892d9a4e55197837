// tapevm train: the training examples. `mlp` fits a 2-64-64-1 MLP to a smooth function with
// Adam; `char-gpt` trains a character-level GPT on a text file and writes a checkpoint that
// `tapevm sample` continues text from (and PyTorch's safetensors loads). For parity with
// bench/gpt_torch.py, char-gpt writes or reads its initial parameters (--init-out, --init) and
// its batches (--batches-out, --batches) in the files that script reads (bench/nn_parity.sh).
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "arguments.hpp"
#include "commands.hpp"
#include "tapevm/nn/data.hpp"
#include "tapevm/nn/examples.hpp"
#include "tapevm/nn/gpt.hpp"
#include "tapevm/nn/log.hpp"
#include "tapevm/nn/optim.hpp"
#include "tapevm/nn/safetensors.hpp"
#include "tapevm/nn/trainer.hpp"

namespace tapevm::cli {
namespace {

constexpr std::string_view help =
    R"(usage: tapevm train mlp [--steps N] [--device cpu|gpu|reference] [--lr X] [--seed N]
       tapevm train char-gpt (--data FILE | --batches FILE) [--device cpu|gpu|reference]
                             [--preset tiny|shakespeare-char] [--steps N] [--batch N] [--accumulation N]
                             [--lr X] [--warmup N] [--schedule-steps N] [--dropout X] [--seed N]
                             [--eval-interval N] [--eval-batches N] [--out FILE] [--log FILE] [--resume FILE] [--fp16]
                             [--clip-on-host] [--init FILE] [--init-out FILE] [--batches-out FILE [--batches-count N]]

mlp: a 2-64-64-1 tanh MLP regresses sin(2 x1) cos(1.5 x2) on [-1, 1]^2 from random batches
of 1,024 points with Adam (warm-up, cosine decay) and reports the validation mean squared
error on 4,096 fixed points (about 3.5e-5 after the default 2,000 steps on the cpu).

char-gpt: a character-level GPT on the bytes of FILE (the last 10% for validation), AdamW
(betas 0.9/0.99, eps 1e-8, weight decay 0.1 on weights of rank >= 2) with warm-up over
min(100, steps / 10) steps and cosine decay to lr / 10, gradient clipping at 1. Batches are
nn::TextDataset's random windows (batch i of a split a function of --seed and i), the draws
bench/gpt_torch.py --data reproduces. Shows progress every --log-interval steps (a bar redrawn
in place on a terminal, plain lines otherwise: step, loss, validation loss, tokens/s, ETA),
optionally logs every step as JSON lines, and writes a training checkpoint (safetensors:
parameters, optimizer state, step; the configuration and the vocabulary in its metadata) to
--out at every evaluation and at the end.

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
  --dropout X           dropout probability in [0, 1) (from the preset; 0 for parity with
                        bench/gpt_torch.py, which has none)
  --warmup N            learning-rate warm-up steps (min(100, schedule steps / 10))
  --schedule-steps N    the cosine schedule's length, decaying to lr / 10 (--steps): a short
                        run can follow the first steps of a long run's schedule
  --eval-interval N     validate (and checkpoint) every N steps (250)
  --eval-batches N      validation batches per evaluation: batches 0 .. N-1 of the validation
                        split, the same ones every time (8)
  --log-interval N      print every N steps (50)
  --out FILE            the checkpoint (char-gpt.safetensors); its parameters are the ones
                        bench/gpt_torch.py --compare reads
  --log FILE            also write one JSON object per step to FILE (losses at full precision)
  --resume FILE         continue from a checkpoint this command wrote
  --fp16                mixed precision: f16 weights and activations for the passes, f32
                        master weights for the optimizer, dynamic loss scaling (a step with
                        non-finite gradients is skipped and the scale halved)
  --clip-on-host        read the gradient norm on the host before each update (the default
                        computes the clip factor on the device, without a wait; --fp16's
                        loss scaling reads it on the host either way)
  --init FILE           start from these parameters (safetensors, as --init-out writes them)
                        instead of the seed's initialisation; a file of another model is an error
  --init-out FILE       write the initial parameters (safetensors, the configuration as gpt.*
                        metadata and the vocabulary: bench/gpt_torch.py --init reads it)
  --batches FILE        train on the batches of FILE (safetensors, i32 inputs and targets
                        [N][B][T], optionally val_inputs and val_targets [M][B][T], as
                        --batches-out writes): micro-batch i is batch i mod N, validation batch
                        j is j mod M (else the --data validation split, else none). B and T
                        come from the file (T must be the preset's context); without --data
                        the vocabulary comes from its metadata
  --batches-out FILE    write the batches this run draws from --data (bench/gpt_torch.py
                        --batches reads them): the first --batches-count training batches and
                        --eval-batches validation batches
  --batches-count N     training batches in --batches-out (steps x accumulation)
)";

constexpr OptionSpec options[] = {
    {"--device", true},       {"--steps", true},         {"--lr", true},
    {"--seed", true},         {"--data", true},          {"--preset", true},
    {"--batch", true},        {"--accumulation", true},  {"--eval-interval", true},
    {"--eval-batches", true}, {"--log-interval", true},  {"--out", true},
    {"--log", true},          {"--resume", true},        {"--fp16", false},
    {"--dropout", true},      {"--warmup", true},        {"--schedule-steps", true},
    {"--init", true},         {"--init-out", true},      {"--batches", true},
    {"--batches-out", true},  {"--batches-count", true}, {"--help", false},
    {"--clip-on-host", false}};

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

double parse_probability(std::string_view name, std::string_view text) {
    const std::string copy(text);
    char* end = nullptr;
    const double value = std::strtod(copy.c_str(), &end);
    if (copy.empty() || end != copy.c_str() + copy.size() || !(value >= 0 && value < 1)) {
        throw UsageError("train: " + std::string(name) + " must be a number in [0, 1), not '" + copy + "'");
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
    // Steps per second after the first 20 (pipelines built, caches warm), as bench/mlp_torch.py.
    constexpr std::size_t untimed_steps = 20;
    double untimed_seconds = 0;
    const auto report = [&](const nn::StepReport& r) {
        if (r.step == untimed_steps) untimed_seconds = r.elapsed;
        if (r.step == r.total_steps && r.step > untimed_steps) {
            out << "steps/s "
                << fixed(static_cast<double>(r.step - untimed_steps) / (r.elapsed - untimed_seconds), 1)
                << " (steps " << untimed_steps + 1 << "-" << r.step << ")\n";
        }
        if (r.step % log_interval != 0 && r.step != r.total_steps) return;
        out << "step " << r.step << "/" << r.total_steps << "  mse " << r.loss;
        if (r.validation_loss) out << "  validation " << *r.validation_loss;
        out << "  " << fixed(r.elapsed, 1) << " s\n" << std::flush;
    };
    const nn::MlpRegressionResult result = nn::train_mlp_regression(device, options, report);
    out << "validation mse " << result.validation_mse
        << (result.validation_mse <= 1e-3 ? " (<= 1e-3)\n" : "\n");
    return 0;
}

// ---- char-gpt: batches files and initial parameters -----------------------------------------

/// "8 characters \"abcdefgh\"" (bytes outside printable ASCII as \xNN, long ones shortened).
std::string describe_vocabulary(const std::string& symbols) {
    std::string shown;
    for (const char c : symbols) {
        if (shown.size() >= 40) {
            shown += "...";
            break;
        }
        const auto byte = static_cast<unsigned char>(c);
        if (byte >= 0x20 && byte < 0x7f && c != '"' && c != '\\') {
            shown += c;
        } else {
            char escaped[8];
            std::snprintf(escaped, sizeof escaped, "\\x%02x", byte);
            shown += escaped;
        }
    }
    return std::to_string(symbols.size()) + " characters \"" + shown + "\"";
}

/// A batches file (nn::save_token_batches's format) read into host memory.
struct TokenBatches {
    std::string path;
    std::size_t count = 0;                  // N training batches
    std::size_t validation_count = 0;       // M validation batches (0: none)
    std::size_t batch = 0;                  // B
    std::size_t context = 0;                // T
    std::vector<std::int32_t> arrays[4];    // inputs, targets, val_inputs, val_targets: [count][B][T]
    std::optional<std::string> vocabulary;  // its symbols, from the metadata
    std::optional<std::size_t> vocab;       // the "vocab" metadata

    std::string where() const { return "train: --batches " + path + ": "; }

    /// Batch i mod N (or j mod M) on `device`.
    nn::BatchSource source(const nn::Device& device, bool validation) const {
        const std::size_t n = validation ? validation_count : count;
        const std::vector<std::int32_t>* inputs = &arrays[validation ? 2 : 0];
        const std::vector<std::int32_t>* targets = &arrays[validation ? 3 : 1];
        const std::size_t b = batch, t = context;
        return [device, n, inputs, targets, b, t](std::uint64_t index) {
            const std::size_t offset = static_cast<std::size_t>(index % n) * b * t;
            const std::span<const std::int32_t> x(inputs->data() + offset, b * t),
                y(targets->data() + offset, b * t);
            return nn::Batch{device.upload({b, t}, x), device.upload({b, t}, y)};
        };
    }

    /// tapevm::Error unless the file agrees with the run's vocabulary (symbols): its metadata
    /// and every token id.
    void check_vocabulary(const std::string& symbols) const {
        if (vocabulary && *vocabulary != symbols) {
            throw Error(where() + "drawn with a vocabulary of " + describe_vocabulary(*vocabulary) +
                        ", not this run's " + describe_vocabulary(symbols));
        }
        if (vocab && *vocab != symbols.size()) {
            throw Error(where() + "metadata vocab " + std::to_string(*vocab) +
                        ", this run's vocabulary has " + std::to_string(symbols.size()) + " characters");
        }
        const char* names[4] = {"inputs", "targets", "val_inputs", "val_targets"};
        for (int a = 0; a < 4; ++a) {
            for (std::size_t i = 0; i < arrays[a].size(); ++i) {
                const std::int32_t id = arrays[a][i];
                if (id < 0 || static_cast<std::size_t>(id) >= symbols.size()) {
                    throw Error(where() + "token id " + std::to_string(id) + " at element " +
                                std::to_string(i) + " of '" + names[a] + "' is outside the vocabulary of " +
                                std::to_string(symbols.size()));
                }
            }
        }
    }
};

TokenBatches read_token_batches(const std::string& path) {
    const nn::SafetensorsFile file = nn::SafetensorsFile::open(path);
    TokenBatches batches;
    batches.path = path;
    const std::string where = batches.where();
    const auto read = [&](const char* key, std::vector<std::int32_t>& values, bool required) -> std::size_t {
        if (!file.contains(key)) {
            if (required)
                throw Error(where + "no tensor '" + key +
                            "' (a batches file holds i32 inputs and targets [N][B][T])");
            return 0;
        }
        const nn::SafetensorsEntry& entry = file.entry(key);
        const nn::Shape& shape = entry.shape;
        if (entry.dtype_name != "I32" || shape.size() != 3 || nn::element_count(shape) == 0) {
            throw Error(where + "'" + key + "' is " + entry.dtype_name + " " + nn::shape_string(shape) +
                        ", not i32 [N][B][T] with N, B, T > 0");
        }
        if (batches.batch == 0) {
            batches.batch = shape[1];
            batches.context = shape[2];
        } else if (shape[1] != batches.batch || shape[2] != batches.context) {
            throw Error(where + "'" + key + "' holds batches of [B][T] = [" + std::to_string(shape[1]) +
                        "][" + std::to_string(shape[2]) + "], 'inputs' of [" + std::to_string(batches.batch) +
                        "][" + std::to_string(batches.context) + "]");
        }
        const std::span<const std::byte> bytes = file.bytes(key);
        values.resize(nn::element_count(shape));
        std::memcpy(values.data(), bytes.data(), bytes.size());
        return shape[0];
    };
    batches.count = read("inputs", batches.arrays[0], true);
    if (read("targets", batches.arrays[1], true) != batches.count) {
        throw Error(where + "'targets' and 'inputs' hold different numbers of batches");
    }
    batches.validation_count = read("val_inputs", batches.arrays[2], false);
    if (read("val_targets", batches.arrays[3], batches.validation_count > 0) != batches.validation_count) {
        throw Error(where + "'val_targets' and 'val_inputs' hold different numbers of batches");
    }
    const nn::SafetensorsMetadata& metadata = file.metadata();
    if (const auto it = metadata.find("vocabulary"); it != metadata.end()) {
        try {
            batches.vocabulary = nn::Vocabulary::from_json(it->second).symbols();
        } catch (const Error& error) {
            throw Error(where + "metadata 'vocabulary': " + error.what());
        }
    }
    if (const auto it = metadata.find("vocab"); it != metadata.end()) {
        std::size_t vocab = 0;
        const std::string& text = it->second;
        const auto [end, status] = std::from_chars(text.data(), text.data() + text.size(), vocab);
        if (status != std::errc() || end != text.data() + text.size()) {
            throw Error(where + "metadata 'vocab' = '" + text + "' is not a count");
        }
        batches.vocab = vocab;
    }
    return batches;
}

/// Loads `path` into `model` as its initial parameters. tapevm::Error when the file is of
/// another model: gpt.* metadata that differs from the model's configuration, a vocabulary
/// ("chars") that is not `symbols`, a tensor the model has not (optimizer state aside), or
/// (load_model) a missing tensor or another shape.
void load_initial_parameters(nn::GPT& model, const std::string& path, const std::string& symbols) {
    const nn::SafetensorsFile file = nn::SafetensorsFile::open(path);
    const nn::SafetensorsMetadata& metadata = file.metadata();
    const std::string where = "train: --init " + path + ": ";
    std::string differences;
    for (const auto& [key, ours] : nn::gpt_config_metadata(model.config())) {
        const auto it = metadata.find(key);
        if (it != metadata.end() && it->second != ours) {
            differences +=
                (differences.empty() ? "" : ", ") + key + " " + it->second + " (this run: " + ours + ")";
        }
    }
    if (!differences.empty()) throw Error(where + "a model of another configuration: " + differences);
    if (const auto it = metadata.find("chars");
        it != metadata.end() && nn::vocabulary_from_metadata(it->second) != symbols) {
        throw Error(where + "made for a vocabulary of " +
                    describe_vocabulary(nn::vocabulary_from_metadata(it->second)) + ", not this run's " +
                    describe_vocabulary(symbols));
    }
    std::set<std::string> names;
    for (const nn::NamedParameter& p : model.parameters()) names.insert(p.name);
    for (const std::string& key : file.keys()) {
        if (!key.starts_with("optimizer.") && !names.contains(key)) {
            throw Error(where + "holds '" + key + "', which this model has not (a file of another model?)");
        }
    }
    nn::load_model(model, path);
}

int run_char_gpt(const Arguments& arguments, std::ostream& out) {
    const nn::Device device = make_device(arguments.value("--device").value_or("cpu"));
    const std::string preset(arguments.value("--preset").value_or("tiny"));
    nn::GPTConfig config = nn::gpt_preset(preset);
    const bool small = preset == "tiny";
    const std::size_t accumulation = count_option(arguments, "--accumulation", 1);
    const std::size_t steps = count_option(arguments, "--steps", small ? 2000 : 5000);
    const std::size_t eval_interval = count_option(arguments, "--eval-interval", 250);
    const std::size_t eval_batches = count_option(arguments, "--eval-batches", 8);
    const std::size_t log_interval = count_option(arguments, "--log-interval", 50);
    const std::uint64_t seed = count_option(arguments, "--seed", 1, 0);
    const double lr = arguments.value("--lr") ? parse_real("--lr", *arguments.value("--lr")) : 1e-3;
    if (const auto text = arguments.value("--dropout"))
        config.dropout = parse_probability("--dropout", *text);
    const std::string checkpoint(arguments.value("--out").value_or("char-gpt.safetensors"));
    const auto data = arguments.value("--data");
    const auto batches_in = arguments.value("--batches");
    if (!data && !batches_in)
        throw UsageError("train char-gpt needs --data FILE (the text to learn) or --batches FILE");
    if (arguments.has("--init") && arguments.has("--resume")) {
        throw UsageError("train: --init and --resume exclude each other (a checkpoint holds the parameters)");
    }
    if (arguments.has("--batches-out") && !data)
        throw UsageError("train: --batches-out writes the batches drawn from --data");
    if (arguments.has("--batches-count") && !arguments.has("--batches-out")) {
        throw UsageError("train: --batches-count is the size of --batches-out");
    }

    // Batches: from a file, else nn::TextDataset's draws from --data (bench/gpt_torch.py --data
    // draws the same); a file fixes B and T.
    std::optional<TokenBatches> file;
    if (batches_in) file = read_token_batches(std::string(*batches_in));
    std::size_t batch = count_option(arguments, "--batch", small ? 16 : 64);
    if (file) {
        if (arguments.has("--batch") && batch != file->batch) {
            throw Error(file->where() + "holds batches of " + std::to_string(file->batch) +
                        " sequences, --batch is " + std::to_string(batch));
        }
        if (file->context != config.context) {
            throw Error(file->where() + "holds windows of " + std::to_string(file->context) +
                        " tokens, the " + preset + " preset's context is " + std::to_string(config.context));
        }
        batch = file->batch;
    }
    std::optional<nn::TextDataset> dataset;
    if (data) {
        dataset.emplace(nn::TextDataset::from_file(
            std::string(*data),
            {.context = config.context, .batch_size = batch, .validation_fraction = 0.1, .seed = seed}));
    }
    std::string symbols;
    if (dataset) {
        symbols = dataset->vocabulary().symbols();
    } else if (file->vocabulary) {
        symbols = *file->vocabulary;
    } else {
        throw Error(file->where() +
                    "no 'vocabulary' in its metadata: give --data FILE (the text it was drawn from)");
    }
    if (file) file->check_vocabulary(symbols);

    config.vocab = symbols.size();
    config.seed = seed;
    nn::GPT model(device, config);
    if (const auto path = arguments.value("--init"))
        load_initial_parameters(model, std::string(*path), symbols);
    std::vector<std::pair<std::string, std::string>> metadata = nn::gpt_config_metadata(model.config());
    metadata.emplace_back("chars", nn::vocabulary_metadata(symbols));
    if (const auto path = arguments.value("--init-out")) {
        std::vector<std::pair<std::string, std::string>> init_metadata = metadata;
        init_metadata.emplace_back("format", "tapevm-gpt-init");
        init_metadata.emplace_back("seed", std::to_string(seed));
        nn::save_model(model, std::string(*path), init_metadata);
        out << "wrote the initial parameters to " << *path << '\n';
    }
    if (const auto path = arguments.value("--batches-out")) {
        const std::size_t count = count_option(arguments, "--batches-count", steps * accumulation);
        nn::save_token_batches(std::string(*path), *dataset, count, eval_batches);
        out << "wrote " << count << " training and " << eval_batches << " validation batches to " << *path
            << '\n';
    }

    const bool fp16 = arguments.has("--fp16");
    if (fp16) nn::enable_mixed_precision(model.parameters(), nn::DType::f16);
    nn::LossScaler scaler;
    nn::AdamW optimizer(model.parameters(), {.lr = lr, .beta2 = 0.99, .weight_decay = 0.1});
    nn::LanguageModelObjective objective(model);
    nn::TrainerOptions trainer_options;
    trainer_options.steps = steps;
    trainer_options.accumulation = accumulation;
    trainer_options.clip = 1.0;
    trainer_options.clip_on_device = !arguments.has("--clip-on-host");
    // bench/gpt_torch.py's schedule: warm-up min(100, S / 10), cosine to lr / 10 at step S, where
    // S is --schedule-steps (default --steps; a short run can follow a long run's schedule).
    const std::size_t schedule_steps = count_option(arguments, "--schedule-steps", steps);
    const std::size_t warmup =
        count_option(arguments, "--warmup", std::min<std::size_t>(100, schedule_steps / 10), 0);
    trainer_options.schedule = nn::CosineSchedule{lr, lr / 10, warmup, schedule_steps};
    trainer_options.eval_interval = eval_interval;
    trainer_options.eval_batches = eval_batches;
    if (fp16) trainer_options.loss_scaler = &scaler;
    nn::Trainer trainer(objective, optimizer, trainer_options);
    if (const auto resume = arguments.value("--resume")) {
        trainer.load_checkpoint(std::string(*resume));
        out << "resumed from " << *resume << " at step " << trainer.step() << '\n';
    }
    const auto dataset_source = [&](nn::Split split) -> nn::BatchSource {
        return [&text = *dataset, device, split](std::uint64_t index) {
            const nn::DeviceTokenBatch drawn = nn::upload(text.batch_at(split, index), device);
            return nn::Batch{drawn.inputs, drawn.targets};
        };
    };
    const nn::BatchSource train = file ? file->source(device, false) : dataset_source(nn::Split::train);
    nn::BatchSource validation;
    if (file && file->validation_count > 0) {
        validation = file->source(device, true);
    } else if (dataset) {
        validation = dataset_source(nn::Split::validation);
    }

    std::optional<nn::JsonLinesLog> log;
    if (const auto path = arguments.value("--log"))
        log.emplace(std::string(*path), arguments.has("--resume"));
    out << "char-gpt " << preset << " on " << device.name() << ": " << model.parameter_count()
        << " parameters, vocab " << config.vocab << ", ";
    if (file) {
        out << file->count << " batches from " << file->path;
    } else {
        out << dataset->tokens(nn::Split::train).size() << " training characters";
    }
    out << ", batch " << batch << " x " << accumulation << " x " << config.context
        << (fp16 ? ", fp16 mixed precision" : "") << '\n'
        << std::flush;
    nn::ProgressBar progress(steps);
    const auto report = [&](const nn::StepReport& r) {
        nn::LogRecord record{.step = r.step,
                             .loss = r.loss,
                             .val_loss = r.validation_loss,
                             .lr = r.lr,
                             .tokens_per_s = r.seconds > 0 ? static_cast<double>(r.tokens) / r.seconds : 0.0,
                             .elapsed = r.elapsed};
        if (log) log->write(record);
        if (r.validation_loss) trainer.save_checkpoint(checkpoint, metadata);
        if (r.step % log_interval == 0 || r.validation_loss || r.step == r.total_steps)
            progress.update(record);
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

Command train_command() {
    return {"train", "train the examples: an MLP regression, a character-level GPT", help, run};
}

}  // namespace tapevm::cli
