// The worked examples behind `tapevm train` and `tapevm sample`, in the library so the tests
// run exactly what the command line runs:
//   - MLP regression: a 2-64-64-1 tanh MLP fits a smooth function of two inputs with Adam.
//   - character-level language model: CharCorpus (a byte vocabulary, a train/validation
//     split, random windows of context + 1), a GPT, and sampling through KV caches.
// (src/nn/io's TextDataset and DataLoader are the general tools; CharCorpus is the small,
// deterministic piece these examples need without io. It splits and draws exactly as
// TextDataset does, which `tapevm train char-gpt` uses and bench/gpt_torch.py --data
// reproduces.)
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tapevm/nn/gpt.hpp"
#include "tapevm/nn/trainer.hpp"

namespace tapevm::nn {

// ---- MLP regression -------------------------------------------------------------------------

/// The target: sin(2 x1) cos(1.5 x2) on [-1, 1]^2.
double regression_target(double x1, double x2);

struct MlpRegressionOptions {
    std::size_t steps = 2000;
    std::size_t batch = 1024;
    std::size_t hidden = 64;
    double lr = 3e-3;  // Adam, cosine decay to lr / 30 after 50 warm-up steps
    std::uint64_t seed = 1;
    std::size_t eval_interval = 250;
};

struct MlpRegressionResult {
    double validation_mse = 0;  // on 4,096 fixed points
    StepReport last;
};

/// Trains the 2-hidden-hidden-1 tanh MLP on fresh random batches (counter-based, from seed).
MlpRegressionResult train_mlp_regression(const Device& device, const MlpRegressionOptions& options,
                                         const std::function<void(const StepReport&)>& callback = {});

// ---- characters -----------------------------------------------------------------------------

/// A text as byte tokens: the vocabulary is the sorted distinct bytes; the last
/// floor(size x validation_fraction) tokens are the validation split, the rest training (as
/// TextDataset).
class CharCorpus {
public:
    /// Throws tapevm::Error for a text with fewer than 2 distinct bytes or too short to split.
    explicit CharCorpus(std::string_view text, double validation_fraction = 0.1);
    static CharCorpus from_file(const std::filesystem::path& path, double validation_fraction = 0.1);

    const std::string& vocabulary() const { return vocabulary_; }
    std::size_t vocab_size() const { return vocabulary_.size(); }
    std::size_t train_tokens() const { return train_.size(); }
    std::size_t validation_tokens() const { return validation_.size(); }

    /// Batch `index` of `batch` windows of context + 1 tokens: inputs and targets i32
    /// [batch][context], the same as TextDataset::batch_at(split, index) with that seed,
    /// batch size and context (window b starts at a draw from (seed, split, index x batch + b)).
    /// Throws when a split is shorter than context + 1.
    Batch batch(const Device& device, bool validation, std::uint64_t index, std::size_t batch,
                std::size_t context, std::uint64_t seed) const;
    /// A BatchSource over one split.
    BatchSource source(const Device& device, bool validation, std::size_t batch, std::size_t context,
                       std::uint64_t seed) const;

private:
    std::string vocabulary_;
    std::vector<std::int32_t> train_;
    std::vector<std::int32_t> validation_;
};

/// Token ids of `text` under `vocabulary` (tapevm::Error naming a byte outside it).
std::vector<std::int32_t> encode_chars(std::string_view vocabulary, std::string_view text);
std::string decode_chars(std::string_view vocabulary, std::span<const std::int32_t> ids);
/// The vocabulary as checkpoint metadata ("chars": comma-separated byte values) and back.
std::string vocabulary_metadata(std::string_view vocabulary);
std::string vocabulary_from_metadata(const std::string& text);

struct SampleOptions {
    std::size_t tokens = 200;
    double temperature = 1.0;
    std::size_t top_k = 0;  // 0: the whole vocabulary
    std::uint64_t seed = 1;
};

/// Continues `prompt` (ids, not empty) by sampling from the model through KV caches: one
/// prefill, then one token per step; past the context the window restarts on the last
/// context / 2 tokens. Returns the new tokens.
std::vector<std::int32_t> sample_tokens(GPT& model, std::span<const std::int32_t> prompt,
                                        const SampleOptions& options);

}  // namespace tapevm::nn
