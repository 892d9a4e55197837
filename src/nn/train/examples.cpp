#include "tapevm/nn/examples.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>
#include <sstream>

#include "counter_random.hpp"
#include "tapevm/error.hpp"
#include "tapevm/nn/kernels.hpp"
#include "tapevm/nn/layers.hpp"

namespace tapevm::nn {

// ---- MLP regression -------------------------------------------------------------------------

double regression_target(double x1, double x2) { return std::sin(2 * x1) * std::cos(1.5 * x2); }

namespace {

constexpr std::size_t validation_points = 4096;

// `count` points of [-1, 1]^2 from (seed, stream) and their targets.
Batch regression_batch(const Device& device, DType dtype, std::size_t count, std::uint64_t seed,
                       std::uint64_t stream) {
    std::vector<double> x(2 * count), y(count);
    for (std::size_t i = 0; i < count; ++i) {
        x[2 * i] = 2 * detail::counter_uniform(seed, stream, 2 * i) - 1;
        x[2 * i + 1] = 2 * detail::counter_uniform(seed, stream, 2 * i + 1) - 1;
        y[i] = regression_target(x[2 * i], x[2 * i + 1]);
    }
    return {device.upload({count, 2}, std::span<const double>(x), dtype),
            device.upload({count, 1}, std::span<const double>(y), dtype)};
}

// PyTorch's default Linear initialisation, uniform(+-1/sqrt(fan_in)), by parameter name so
// that it depends on the seed only.
void init_fan_in(Module& module, std::uint64_t seed) {
    std::size_t fan_in = 1;
    for (const NamedParameter& p : module.parameters()) {
        const Tensor& value = p.parameter->value;
        if (value.rank() == 2) fan_in = value.dim(1);
        const double bound = 1.0 / std::sqrt(static_cast<double>(fan_in));
        init_uniform(value, -bound, bound, seed, name_hash(p.name));
    }
}

}  // namespace

MlpRegressionResult train_mlp_regression(const Device& device, const MlpRegressionOptions& options,
                                         const std::function<void(const StepReport&)>& callback) {
    const DType dtype = device.accumulate_dtype();
    Sequential model;
    model.emplace<Linear>(device, 2, options.hidden);
    model.emplace<Activation>(tanh_tape());
    model.emplace<Linear>(device, options.hidden, options.hidden);
    model.emplace<Activation>(tanh_tape());
    model.emplace<Linear>(device, options.hidden, 1);
    init_fan_in(model, options.seed);

    Adam optimizer(model.parameters(), {.lr = options.lr});
    RegressionObjective objective(model);
    TrainerOptions trainer_options;
    trainer_options.steps = options.steps;
    trainer_options.schedule = CosineSchedule{options.lr, options.lr / 30, 50, options.steps};
    trainer_options.eval_interval = options.eval_interval;
    trainer_options.eval_batches = 1;
    Trainer trainer(objective, optimizer, trainer_options);

    const BatchSource train = [&](std::uint64_t index) {
        return regression_batch(device, dtype, options.batch, options.seed, index);
    };
    const Batch fixed = regression_batch(device, dtype, validation_points, options.seed, ~std::uint64_t{0});
    const BatchSource validation = [&](std::uint64_t) { return fixed; };
    MlpRegressionResult result;
    result.last = trainer.fit(train, validation, callback);
    result.validation_mse = trainer.evaluate(validation, 1);
    return result;
}

// ---- characters -----------------------------------------------------------------------------

std::vector<std::int32_t> encode_chars(std::string_view vocabulary, std::string_view text) {
    std::int32_t table[256];
    std::fill(std::begin(table), std::end(table), -1);
    for (std::size_t i = 0; i < vocabulary.size(); ++i)
        table[static_cast<unsigned char>(vocabulary[i])] = static_cast<std::int32_t>(i);
    std::vector<std::int32_t> ids;
    ids.reserve(text.size());
    for (const char c : text) {
        const std::int32_t id = table[static_cast<unsigned char>(c)];
        if (id < 0) {
            throw Error("encode_chars: byte " + std::to_string(static_cast<unsigned char>(c)) +
                        " is not in the vocabulary");
        }
        ids.push_back(id);
    }
    return ids;
}

std::string decode_chars(std::string_view vocabulary, std::span<const std::int32_t> ids) {
    std::string out;
    for (const std::int32_t id : ids) {
        if (id < 0 || static_cast<std::size_t>(id) >= vocabulary.size()) {
            throw Error("decode_chars: id " + std::to_string(id) + " is outside the vocabulary of " +
                        std::to_string(vocabulary.size()));
        }
        out.push_back(vocabulary[static_cast<std::size_t>(id)]);
    }
    return out;
}

std::string vocabulary_metadata(std::string_view vocabulary) {
    std::string out;
    for (const char c : vocabulary) {
        if (!out.empty()) out += ',';
        out += std::to_string(static_cast<unsigned char>(c));
    }
    return out;
}

std::string vocabulary_from_metadata(const std::string& text) {
    std::string out;
    std::stringstream stream(text);
    std::string item;
    while (std::getline(stream, item, ',')) {
        std::size_t used = 0;
        int value = -1;
        try {
            value = std::stoi(item, &used);
        } catch (const std::exception&) {
            used = 0;
        }
        if (used == 0 || used != item.size() || value < 0 || value > 255) {
            throw Error("vocabulary_from_metadata: '" + item + "' is not a byte value");
        }
        out.push_back(static_cast<char>(value));
    }
    if (out.size() < 2) throw Error("vocabulary_from_metadata: fewer than 2 characters");
    return out;
}

CharCorpus::CharCorpus(std::string_view text, double validation_fraction) {
    bool seen[256] = {};
    for (const char c : text) seen[static_cast<unsigned char>(c)] = true;
    for (int c = 0; c < 256; ++c) {
        if (seen[c]) vocabulary_.push_back(static_cast<char>(c));
    }
    if (text.empty()) throw Error("CharCorpus: the text is empty");
    if (vocabulary_.size() < 2) {
        throw Error("CharCorpus: the text has " + std::to_string(vocabulary_.size()) +
                    " distinct character; a language model needs at least 2");
    }
    if (!(validation_fraction >= 0 && validation_fraction < 1)) {
        throw Error("CharCorpus: validation_fraction " + std::to_string(validation_fraction) +
                    " is outside [0, 1)");
    }
    const std::vector<std::int32_t> ids = encode_chars(vocabulary_, text);
    // As TextDataset: the last floor(size x fraction) tokens are the validation split.
    const auto split = ids.size() - static_cast<std::size_t>(
                                        std::floor(static_cast<double>(ids.size()) * validation_fraction));
    train_.assign(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(split));
    validation_.assign(ids.begin() + static_cast<std::ptrdiff_t>(split), ids.end());
}

CharCorpus CharCorpus::from_file(const std::filesystem::path& path, double validation_fraction) {
    std::ifstream file(path, std::ios::binary);
    if (!file) throw Error("CharCorpus: cannot read '" + path.string() + "'");
    const std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
    return CharCorpus(text, validation_fraction);
}

Batch CharCorpus::batch(const Device& device, bool validation, std::uint64_t index, std::size_t batch,
                        std::size_t context, std::uint64_t seed) const {
    const std::vector<std::int32_t>& data = validation ? validation_ : train_;
    if (data.size() < context + 1) {
        throw Error(std::string("CharCorpus: the ") + (validation ? "validation" : "training") +
                    " split has " + std::to_string(data.size()) +
                    " characters, fewer than context + 1 = " + std::to_string(context + 1));
    }
    // TextDataset's windows (src/nn/io/data.cpp: the same streams, counters and multiply-high
    // map; tests/nn/train/test_nn_examples_parity.cpp checks that they agree).
    constexpr std::uint64_t window_stream[2] = {0x5452'4149'4e00'0000ULL, 0x5641'4c49'4400'0000ULL};
    const std::uint64_t stream = window_stream[validation ? 1 : 0];
    const std::uint64_t starts = data.size() - context;
    std::vector<std::int32_t> inputs(batch * context), targets(batch * context);
    for (std::size_t b = 0; b < batch; ++b) {
        __extension__ typedef unsigned __int128 Wide;
        const std::uint64_t bits = detail::counter_bits(seed, stream, index * batch + b);
        const auto start = static_cast<std::size_t>((Wide(bits) * starts) >> 64);
        std::copy_n(data.begin() + static_cast<std::ptrdiff_t>(start), context,
                    inputs.begin() + static_cast<std::ptrdiff_t>(b * context));
        std::copy_n(data.begin() + static_cast<std::ptrdiff_t>(start + 1), context,
                    targets.begin() + static_cast<std::ptrdiff_t>(b * context));
    }
    return {device.upload({batch, context}, std::span<const std::int32_t>(inputs)),
            device.upload({batch, context}, std::span<const std::int32_t>(targets))};
}

BatchSource CharCorpus::source(const Device& device, bool validation, std::size_t batch, std::size_t context,
                               std::uint64_t seed) const {
    this->batch(device, validation, 0, 1, context, seed);  // fails now, not mid-training, when too short
    return [this, device, validation, batch, context, seed](std::uint64_t index) {
        return this->batch(device, validation, index, batch, context, seed);
    };
}

// ---- sampling -------------------------------------------------------------------------------

namespace {

std::int32_t draw(std::span<const double> logits, const SampleOptions& options, std::uint64_t step) {
    std::vector<std::pair<double, std::int32_t>> ranked;
    for (std::size_t i = 0; i < logits.size(); ++i)
        ranked.emplace_back(logits[i], static_cast<std::int32_t>(i));
    std::sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    if (options.top_k > 0 && options.top_k < ranked.size()) ranked.resize(options.top_k);
    if (options.temperature <= 0) return ranked.front().second;
    std::vector<double> weights;
    double total = 0;
    for (const auto& [logit, id] : ranked) {
        weights.push_back(std::exp((logit - ranked.front().first) / options.temperature));
        total += weights.back();
    }
    double u = detail::counter_uniform(options.seed, 0x5a4d, step) * total;
    for (std::size_t i = 0; i < weights.size(); ++i) {
        if (u < weights[i]) return ranked[i].second;
        u -= weights[i];
    }
    return ranked.back().second;
}

}  // namespace

std::vector<std::int32_t> sample_tokens(GPT& model, std::span<const std::int32_t> prompt,
                                        const SampleOptions& options) {
    if (prompt.empty()) throw Error("sample_tokens: the prompt is empty");
    const Device device = model.device();
    const std::size_t context = model.config().context;
    const std::size_t vocab = model.config().vocab;
    model.eval();
    std::vector<std::int32_t> all(prompt.begin(), prompt.end());
    std::vector<std::int32_t> produced;
    std::vector<KvCache> caches;
    std::size_t past = 0;
    Tensor logits;
    const auto prefill = [&](std::size_t keep) {
        caches = model.make_caches(1);
        const std::span<const std::int32_t> window(all.data() + all.size() - keep, keep);
        logits = model.decode(device.upload({1, keep}, window), caches, 0);
        past = keep;
    };
    prefill(std::min(all.size(), context));
    for (std::size_t step = 0; step < options.tokens; ++step) {
        const std::vector<double> values = logits.to_double();
        const std::span<const double> last(values.data() + values.size() - vocab, vocab);
        const std::int32_t next = draw(last, options, step);
        all.push_back(next);
        produced.push_back(next);
        if (step + 1 == options.tokens) break;
        if (past == context) {
            prefill(std::max<std::size_t>(context / 2, 1));
        } else {
            logits =
                model.decode(device.upload({1, 1}, std::span<const std::int32_t>(&next, 1)), caches, past);
            ++past;
        }
    }
    return produced;
}

}  // namespace tapevm::nn
