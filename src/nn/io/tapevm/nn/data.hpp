// Training data: a DataLoader over tensors and a character-level TextDataset, both
// deterministic (every draw a pure function of a seed and a counter) and resumable exactly
// from a small saved state.
//
//   nn::DataLoader loader({x, y}, {.batch_size = 64, .seed = 1});
//   nn::DataBatch batch = loader.next();            // batch.tensors[0]: x's rows, on x's device
//   checkpoint["data"] = loader.state().to_json();  // later: loader.restore(DataLoaderState::from_json(...))
//
//   nn::TextDataset text = nn::TextDataset::from_file("kjv.txt", {.context = 256, .batch_size = 64});
//   nn::DeviceTokenBatch b = text.next_batch(nn::Split::train, device);  // i32 [64][256] twice
//
// Random numbers are counter-based (random_bits): the n-th draw needs no state but (seed, n),
// so a state of a few counters resumes a run bit for bit, and prefetching ahead changes nothing.
//
// Threads: each object is used by one thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tapevm/error.hpp"
#include "tapevm/nn/device.hpp"
#include "tapevm/nn/tensor.hpp"

namespace tapevm::nn {

/// Unusable data or data options: an empty corpus, a context longer than the data, a saved
/// state of another dataset. The message names the dataset and the value.
class DataError : public Error {
public:
    using Error::Error;
};

/// 64 well-mixed bits, a pure function of (seed, stream, counter) (SplitMix64's finaliser
/// applied over the three words). Streams keep independent uses of one seed apart.
std::uint64_t random_bits(std::uint64_t seed, std::uint64_t stream, std::uint64_t counter);
/// `bits` mapped to [0, bound) by multiply-high (Lemire); bound > 0.
std::uint64_t random_below(std::uint64_t bits, std::uint64_t bound);

// ---- DataLoader -------------------------------------------------------------------------------

struct DataLoaderOptions {
    std::size_t batch_size = 32;
    /// A new permutation every epoch (from seed and epoch); false keeps the samples' order.
    bool shuffle = true;
    /// Leave out an epoch's last batch when it is short.
    bool drop_last = false;
    std::uint64_t seed = 0;
};

/// Where a DataLoader (or BatchSampler) stands. Restoring it continues with exactly the
/// batches the saved run would have drawn next.
struct DataLoaderState {
    std::uint64_t seed = 0;
    std::uint64_t epoch = 0;
    /// Samples of this epoch's order already served.
    std::uint64_t position = 0;
    /// The dataset's size, checked on restore.
    std::uint64_t samples = 0;

    /// {"seed":..,"epoch":..,"position":..,"samples":..}: fits a safetensors metadata value.
    std::string to_json() const;
    /// DataError for text that is not such an object.
    static DataLoaderState from_json(std::string_view text);
    friend bool operator==(const DataLoaderState&, const DataLoaderState&) = default;
};

/// The index logic of DataLoader alone: which samples each batch holds.
class BatchSampler {
public:
    /// DataError for no samples, batch size 0, or drop_last with fewer samples than a batch.
    BatchSampler(std::size_t samples, DataLoaderOptions options);

    std::size_t samples() const { return samples_; }
    const DataLoaderOptions& options() const { return options_; }
    std::size_t batches_per_epoch() const;
    /// Epoch `epoch`'s order of the samples: a Fisher-Yates permutation drawn from (seed,
    /// epoch), or 0..samples-1 without shuffle.
    std::vector<std::size_t> epoch_order(std::uint64_t epoch) const;
    /// The next batch's sample indices; after an epoch's last batch the next epoch begins.
    std::vector<std::size_t> next();
    /// The epoch of the batch served last (0 before the first).
    std::uint64_t epoch() const { return epoch_; }
    DataLoaderState state() const;
    /// DataError when the state is of another dataset size or its position is past the end.
    void restore(const DataLoaderState& state);

private:
    std::size_t samples_;
    DataLoaderOptions options_;
    std::uint64_t epoch_ = 0;
    std::uint64_t position_ = 0;
    std::vector<std::size_t> order_;  // epoch_order(epoch_)
};

struct DataBatch {
    /// One per column, in the columns' order: the batch's rows of it, [rows][...].
    std::vector<Tensor> tensors;
    /// The samples in the batch, in order.
    std::vector<std::size_t> indices;
    std::uint64_t epoch = 0;
};

/// Batches of rows of tensors ("columns") that share their leading extent, as PyTorch's
/// DataLoader over a TensorDataset. The columns are copied to the host once; each batch is
/// gathered there and uploaded to the target device in the columns' dtypes.
class DataLoader {
public:
    /// Batches land on the first column's device. DataError for no columns, an undefined or
    /// rank-0 column, or leading extents that differ; BatchSampler's errors.
    DataLoader(std::vector<Tensor> columns, DataLoaderOptions options);
    DataLoader(std::vector<Tensor> columns, DataLoaderOptions options, Device device);

    std::size_t samples() const { return sampler_.samples(); }
    std::size_t batches_per_epoch() const { return sampler_.batches_per_epoch(); }
    const BatchSampler& sampler() const { return sampler_; }
    /// The next batch (see BatchSampler::next).
    DataBatch next();
    DataLoaderState state() const { return sampler_.state(); }
    void restore(const DataLoaderState& state) { sampler_.restore(state); }

private:
    struct Column {
        DType dtype;
        Shape row_shape;
        std::size_t row_bytes;
        std::vector<std::byte> bytes;
    };
    BatchSampler sampler_;
    std::vector<Column> columns_;
    Device device_;
};

// ---- TextDataset ------------------------------------------------------------------------------

/// A character (byte) vocabulary: the distinct bytes of a text, sorted; id i is symbols()[i].
class Vocabulary {
public:
    /// DataError for an empty text.
    static Vocabulary from_text(std::string_view text);
    /// From symbols already distinct and sorted (else DataError).
    explicit Vocabulary(std::string symbols);

    std::size_t size() const { return symbols_.size(); }
    const std::string& symbols() const { return symbols_; }
    /// DataError for a byte not in the vocabulary (naming it and its position).
    std::int32_t id(char symbol) const;
    std::vector<std::int32_t> encode(std::string_view text) const;
    /// DataError for an id outside [0, size()).
    std::string decode(std::span<const std::int32_t> ids) const;
    /// The byte values as a JSON array ("[10,32,65]"): JSON-safe for any byte, for metadata.
    std::string to_json() const;
    static Vocabulary from_json(std::string_view text);
    friend bool operator==(const Vocabulary&, const Vocabulary&) = default;

private:
    std::string symbols_;
    std::int16_t ids_[256];  // byte -> id, -1 when absent
};

enum class Split { train, validation };
/// "train", "validation".
const char* split_name(Split split);

struct TextDatasetOptions {
    /// Tokens per sequence (T); each window holds context + 1 tokens.
    std::size_t context = 256;
    std::size_t batch_size = 64;
    /// The last fraction of the text is the validation split (nanoGPT: 0.1); in [0, 1).
    double validation_fraction = 0.1;
    std::uint64_t seed = 0;
    /// next_batch keeps the following batch of the same split uploaded ahead, so its upload is
    /// recorded before the step that uses the current one (the batches are the same either way).
    bool prefetch = false;
};

/// A batch on the host: inputs[b][t] = window_b[t], targets[b][t] = window_b[t + 1].
struct TokenBatch {
    std::size_t batch_size = 0;
    std::size_t context = 0;
    std::vector<std::int32_t> inputs;   // [batch_size][context], row-major
    std::vector<std::int32_t> targets;  // [batch_size][context]
    std::vector<std::size_t> starts;    // each window's first token in its split
};

/// A batch on a device: i32 [B][T] inputs and targets.
struct DeviceTokenBatch {
    Tensor inputs;
    Tensor targets;
};
/// Uploads `batch` to `device`.
DeviceTokenBatch upload(const TokenBatch& batch, const Device& device);

/// How many batches of each split a TextDataset has handed out.
struct TextDatasetState {
    std::uint64_t seed = 0;
    std::uint64_t train_batches = 0;
    std::uint64_t validation_batches = 0;
    /// Tokens in the whole text, checked on restore.
    std::uint64_t tokens = 0;

    std::string to_json() const;
    static TextDatasetState from_json(std::string_view text);
    friend bool operator==(const TextDatasetState&, const TextDatasetState&) = default;
};

/// Character-level language-model data (nanoGPT's shakespeare_char): the text's bytes as
/// tokens of its Vocabulary, the first (1 - validation_fraction) for training and the rest for
/// validation, batches of random windows of context + 1 tokens.
class TextDataset {
public:
    /// Reads the whole file. DataError when it cannot be read, and as the constructor.
    static TextDataset from_file(const std::filesystem::path& path, TextDatasetOptions options);
    /// DataError (naming `source`) for an empty text, a single distinct character, context or
    /// batch size 0, a validation fraction outside [0, 1), or a split with fewer than
    /// context + 1 tokens (the validation split only when the fraction is not 0).
    TextDataset(std::string_view text, TextDatasetOptions options, std::string source = "<text>");

    const Vocabulary& vocabulary() const { return vocabulary_; }
    const TextDatasetOptions& options() const { return options_; }
    const std::string& source() const { return source_; }
    /// The split's tokens (empty validation when the fraction is 0).
    std::span<const std::int32_t> tokens(Split split) const;

    /// Batch number `index` of `split`: window b starts at a uniform draw from (seed, split,
    /// index * batch_size + b). Pure. DataError for an empty split.
    TokenBatch batch_at(Split split, std::uint64_t index) const;
    /// The split's next batch (batch_at of its counter), advancing the counter.
    TokenBatch next_host_batch(Split split);
    /// The same, uploaded to `device` (prefetched when options().prefetch).
    DeviceTokenBatch next_batch(Split split, const Device& device);

    TextDatasetState state() const;
    /// DataError for a state of another seed or text size.
    void restore(const TextDatasetState& state);

private:
    struct Prefetched {
        std::uint64_t index;
        Device device;
        DeviceTokenBatch batch;
    };
    std::string source_;
    TextDatasetOptions options_;
    Vocabulary vocabulary_;
    std::vector<std::int32_t> tokens_;
    std::size_t train_tokens_ = 0;
    std::uint64_t counters_[2] = {0, 0};
    std::optional<Prefetched> prefetched_[2];
};

/// Writes the first `train_batches` batches of the train split and the first
/// `validation_batches` of the validation split (batch_at 0, 1, ...) as bench/gpt_torch.py's
/// batches file: safetensors holding i32 `inputs` and `targets` [train_batches][B][T] and,
/// when validation_batches > 0, `val_inputs` and `val_targets` [validation_batches][B][T];
/// metadata "format" = "tapevm-token-batches", "vocab" (the vocabulary size), "vocabulary"
/// (Vocabulary::to_json), "seed" and "source". Built in memory: meant for parity runs of tens
/// of batches (gpt_torch.py's --data draws long runs itself). SafetensorsError when the file
/// cannot be written; DataError for 0 train batches.
void save_token_batches(const std::filesystem::path& path, const TextDataset& dataset,
                        std::uint64_t train_batches, std::uint64_t validation_batches = 0);

}  // namespace tapevm::nn
