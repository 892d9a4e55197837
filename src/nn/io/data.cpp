// Training data (data.hpp): the counter-based RNG, BatchSampler and DataLoader, Vocabulary
// and TextDataset.
#include "tapevm/nn/data.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <tuple>
#include <utility>

#include <nlohmann/json.hpp>

#include "tapevm/nn/safetensors.hpp"

namespace tapevm::nn {

namespace {

std::uint64_t mix(std::uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/// Random streams of the data classes, apart from each other.
constexpr std::uint64_t shuffle_stream = 0x5348'5546'464c'4500ull;  // "SHUFFLE"
constexpr std::uint64_t window_stream[2] = {0x5452'4149'4e00'0000ull, 0x5641'4c49'4400'0000ull};

/// Reads an object of unsigned integers with exactly the `fields` named; DataError otherwise.
std::vector<std::uint64_t> read_counters(std::string_view text, std::initializer_list<const char*> fields,
                                         const char* what) {
    nlohmann::json json = nlohmann::json::parse(text.begin(), text.end(), nullptr, false);
    if (json.is_discarded() || !json.is_object() || json.size() != fields.size())
        throw DataError(std::string(what) + ": not a saved state: '" + std::string(text.substr(0, 80)) + "'");
    std::vector<std::uint64_t> values;
    for (const char* field : fields) {
        const auto found = json.find(field);
        if (found == json.end() || !found->is_number_unsigned())
            throw DataError(std::string(what) + ": saved state lacks the unsigned integer '" + field + "'");
        values.push_back(found->get<std::uint64_t>());
    }
    return values;
}

}  // namespace

std::uint64_t random_bits(std::uint64_t seed, std::uint64_t stream, std::uint64_t counter) {
    return mix(mix(mix(seed) ^ stream) ^ counter);
}

std::uint64_t random_below(std::uint64_t bits, std::uint64_t bound) {
    __extension__ typedef unsigned __int128 Wide;
    return std::uint64_t((Wide(bits) * bound) >> 64);
}

// ---- DataLoader -------------------------------------------------------------------------------

std::string DataLoaderState::to_json() const {
    return nlohmann::json{{"seed", seed}, {"epoch", epoch}, {"position", position}, {"samples", samples}}
        .dump();
}

DataLoaderState DataLoaderState::from_json(std::string_view text) {
    const std::vector<std::uint64_t> v =
        read_counters(text, {"seed", "epoch", "position", "samples"}, "DataLoader");
    return {v[0], v[1], v[2], v[3]};
}

BatchSampler::BatchSampler(std::size_t samples, DataLoaderOptions options)
    : samples_(samples), options_(options) {
    if (samples == 0) throw DataError("DataLoader: no samples");
    if (options.batch_size == 0) throw DataError("DataLoader: batch_size is 0");
    if (options.drop_last && samples < options.batch_size)
        throw DataError("DataLoader: drop_last with batch_size " + std::to_string(options.batch_size) +
                        " and only " + std::to_string(samples) + " samples gives no batch");
    order_ = epoch_order(0);
}

std::size_t BatchSampler::batches_per_epoch() const {
    return options_.drop_last ? samples_ / options_.batch_size
                              : (samples_ + options_.batch_size - 1) / options_.batch_size;
}

std::vector<std::size_t> BatchSampler::epoch_order(std::uint64_t epoch) const {
    std::vector<std::size_t> order(samples_);
    for (std::size_t i = 0; i < samples_; ++i) order[i] = i;
    if (!options_.shuffle) return order;
    const std::uint64_t seed = random_bits(options_.seed, shuffle_stream, epoch);
    for (std::size_t i = samples_ - 1; i > 0; --i) {
        const std::size_t j = std::size_t(random_below(random_bits(seed, shuffle_stream, i), i + 1));
        std::swap(order[i], order[j]);
    }
    return order;
}

std::vector<std::size_t> BatchSampler::next() {
    const std::size_t rows_left = samples_ - std::size_t(position_);
    if (rows_left == 0 || (options_.drop_last && rows_left < options_.batch_size)) {
        ++epoch_;
        position_ = 0;
        order_ = epoch_order(epoch_);
    }
    const std::size_t rows = std::min(options_.batch_size, samples_ - std::size_t(position_));
    const auto first = order_.begin() + std::ptrdiff_t(position_);
    std::vector<std::size_t> indices(first, first + std::ptrdiff_t(rows));
    position_ += rows;
    return indices;
}

DataLoaderState BatchSampler::state() const { return {options_.seed, epoch_, position_, samples_}; }

void BatchSampler::restore(const DataLoaderState& state) {
    if (state.samples != samples_)
        throw DataError("DataLoader: saved state is of " + std::to_string(state.samples) +
                        " samples, this has " + std::to_string(samples_));
    if (state.position > samples_)
        throw DataError("DataLoader: saved position " + std::to_string(state.position) + " is past the " +
                        std::to_string(samples_) + " samples");
    options_.seed = state.seed;
    epoch_ = state.epoch;
    position_ = state.position;
    order_ = epoch_order(epoch_);
}

namespace {

std::size_t leading_extent(const std::vector<Tensor>& columns) {
    if (columns.empty()) throw DataError("DataLoader: no columns");
    for (std::size_t i = 0; i < columns.size(); ++i) {
        if (!columns[i].defined())
            throw DataError("DataLoader: column " + std::to_string(i) + " is undefined");
        if (columns[i].rank() == 0)
            throw DataError("DataLoader: column " + std::to_string(i) +
                            " is a scalar; samples are its first axis");
        if (columns[i].dim(0) != columns[0].dim(0))
            throw DataError("DataLoader: column " + std::to_string(i) + " (" + columns[i].describe() +
                            ") has " + std::to_string(columns[i].dim(0)) + " samples, column 0 (" +
                            columns[0].describe() + ") has " + std::to_string(columns[0].dim(0)));
    }
    return columns[0].dim(0);
}

const Tensor& first_defined(const std::vector<Tensor>& columns) {
    if (columns.empty() || !columns[0].defined()) throw DataError("DataLoader: no columns");
    return columns[0];
}

}  // namespace

DataLoader::DataLoader(std::vector<Tensor> columns, DataLoaderOptions options)
    : DataLoader(columns, options, first_defined(columns).device()) {}

DataLoader::DataLoader(std::vector<Tensor> columns, DataLoaderOptions options, Device device)
    : sampler_(leading_extent(columns), options), device_(std::move(device)) {
    for (const Tensor& tensor : columns) {
        Column column;
        column.dtype = tensor.dtype();
        column.row_shape.assign(tensor.shape().begin() + 1, tensor.shape().end());
        column.row_bytes = element_count(column.row_shape) * dtype_size(column.dtype);
        column.bytes = tensor.to_bytes();
        columns_.push_back(std::move(column));
    }
}

DataBatch DataLoader::next() {
    DataBatch batch;
    batch.indices = sampler_.next();
    batch.epoch = sampler_.epoch();
    for (const Column& column : columns_) {
        std::vector<std::byte> rows(batch.indices.size() * column.row_bytes);
        for (std::size_t r = 0; r < batch.indices.size(); ++r)
            std::memcpy(rows.data() + r * column.row_bytes,
                        column.bytes.data() + batch.indices[r] * column.row_bytes, column.row_bytes);
        Shape shape = column.row_shape;
        shape.insert(shape.begin(), batch.indices.size());
        Tensor tensor = device_.empty(std::move(shape), column.dtype);
        tensor.assign_bytes(rows);
        batch.tensors.push_back(std::move(tensor));
    }
    return batch;
}

// ---- Vocabulary -------------------------------------------------------------------------------

namespace {

std::string byte_description(unsigned char byte) {
    if (byte >= 0x20 && byte < 0x7f) return "'" + std::string(1, char(byte)) + "'";
    return "byte " + std::to_string(unsigned(byte));
}

}  // namespace

Vocabulary Vocabulary::from_text(std::string_view text) {
    if (text.empty()) throw DataError("Vocabulary: empty text");
    bool present[256] = {};
    for (char c : text) present[static_cast<unsigned char>(c)] = true;
    std::string symbols;
    for (unsigned byte = 0; byte < 256; ++byte)
        if (present[byte]) symbols += char(byte);
    return Vocabulary(std::move(symbols));
}

Vocabulary::Vocabulary(std::string symbols) : symbols_(std::move(symbols)) {
    std::fill(std::begin(ids_), std::end(ids_), std::int16_t(-1));
    for (std::size_t i = 0; i < symbols_.size(); ++i) {
        const auto byte = static_cast<unsigned char>(symbols_[i]);
        if (i > 0 && static_cast<unsigned char>(symbols_[i - 1]) >= byte)
            throw DataError("Vocabulary: symbols not distinct and sorted at position " + std::to_string(i));
        ids_[byte] = std::int16_t(i);
    }
}

std::int32_t Vocabulary::id(char symbol) const {
    const std::int16_t found = ids_[static_cast<unsigned char>(symbol)];
    if (found < 0)
        throw DataError("Vocabulary: " + byte_description(static_cast<unsigned char>(symbol)) +
                        " is not in the vocabulary");
    return found;
}

std::vector<std::int32_t> Vocabulary::encode(std::string_view text) const {
    std::vector<std::int32_t> ids(text.size());
    for (std::size_t i = 0; i < text.size(); ++i) {
        const std::int16_t found = ids_[static_cast<unsigned char>(text[i])];
        if (found < 0)
            throw DataError("Vocabulary: " + byte_description(static_cast<unsigned char>(text[i])) +
                            " at position " + std::to_string(i) + " is not in the vocabulary");
        ids[i] = found;
    }
    return ids;
}

std::string Vocabulary::decode(std::span<const std::int32_t> ids) const {
    std::string text(ids.size(), '\0');
    for (std::size_t i = 0; i < ids.size(); ++i) {
        if (ids[i] < 0 || std::size_t(ids[i]) >= symbols_.size())
            throw DataError("Vocabulary: id " + std::to_string(ids[i]) + " at position " + std::to_string(i) +
                            " is outside [0, " + std::to_string(symbols_.size()) + ")");
        text[i] = symbols_[std::size_t(ids[i])];
    }
    return text;
}

std::string Vocabulary::to_json() const {
    nlohmann::json bytes = nlohmann::json::array();
    for (char c : symbols_) bytes.push_back(unsigned(static_cast<unsigned char>(c)));
    return bytes.dump();
}

Vocabulary Vocabulary::from_json(std::string_view text) {
    const nlohmann::json json = nlohmann::json::parse(text.begin(), text.end(), nullptr, false);
    if (json.is_discarded() || !json.is_array())
        throw DataError("Vocabulary: expected a JSON array of byte values, got '" +
                        std::string(text.substr(0, 80)) + "'");
    std::string symbols;
    for (const nlohmann::json& value : json) {
        if (!value.is_number_unsigned() || value.get<std::uint64_t>() > 255)
            throw DataError("Vocabulary: " + value.dump() + " is not a byte value");
        symbols += char(value.get<std::uint64_t>());
    }
    return Vocabulary(std::move(symbols));
}

// ---- TextDataset ------------------------------------------------------------------------------

const char* split_name(Split split) { return split == Split::train ? "train" : "validation"; }

DeviceTokenBatch upload(const TokenBatch& batch, const Device& device) {
    const Shape shape = {batch.batch_size, batch.context};
    return {device.upload(shape, std::span<const std::int32_t>(batch.inputs), DType::i32),
            device.upload(shape, std::span<const std::int32_t>(batch.targets), DType::i32)};
}

std::string TextDatasetState::to_json() const {
    return nlohmann::json{{"seed", seed},
                          {"train_batches", train_batches},
                          {"validation_batches", validation_batches},
                          {"tokens", tokens}}
        .dump();
}

TextDatasetState TextDatasetState::from_json(std::string_view text) {
    const std::vector<std::uint64_t> v =
        read_counters(text, {"seed", "train_batches", "validation_batches", "tokens"}, "TextDataset");
    return {v[0], v[1], v[2], v[3]};
}

TextDataset TextDataset::from_file(const std::filesystem::path& path, TextDatasetOptions options) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw DataError("TextDataset: cannot open " + path.string() + ": " + std::strerror(errno));
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (in.bad()) throw DataError("TextDataset: cannot read " + path.string());
    return TextDataset(text, options, path.string());
}

namespace {

Vocabulary checked_vocabulary(std::string_view text, const std::string& source) {
    if (text.empty()) throw DataError("TextDataset: " + source + " is empty");
    Vocabulary vocabulary = Vocabulary::from_text(text);
    if (vocabulary.size() < 2)
        throw DataError("TextDataset: " + source + " holds one distinct character (" +
                        byte_description(static_cast<unsigned char>(vocabulary.symbols()[0])) +
                        "): there is nothing to predict");
    return vocabulary;
}

}  // namespace

TextDataset::TextDataset(std::string_view text, TextDatasetOptions options, std::string source)
    : source_(std::move(source)), options_(options), vocabulary_(checked_vocabulary(text, source_)) {
    const std::string where = "TextDataset: " + source_ + ": ";
    if (options.context == 0) throw DataError(where + "context is 0");
    if (options.batch_size == 0) throw DataError(where + "batch_size is 0");
    if (!(options.validation_fraction >= 0.0 && options.validation_fraction < 1.0))
        throw DataError(where + "validation_fraction " + std::to_string(options.validation_fraction) +
                        " is outside [0, 1)");
    tokens_ = vocabulary_.encode(text);
    const auto validation = std::size_t(std::floor(double(tokens_.size()) * options.validation_fraction));
    train_tokens_ = tokens_.size() - validation;
    for (Split split : {Split::train, Split::validation}) {
        const std::size_t count = tokens(split).size();
        if (split == Split::validation && options.validation_fraction == 0.0) continue;
        if (count < options.context + 1)
            throw DataError(where + "context " + std::to_string(options.context) + " needs windows of " +
                            std::to_string(options.context + 1) + " tokens, but the " + split_name(split) +
                            " split has " + std::to_string(count) + " (of " + std::to_string(tokens_.size()) +
                            " tokens, validation fraction " + std::to_string(options.validation_fraction) +
                            ")");
    }
}

std::span<const std::int32_t> TextDataset::tokens(Split split) const {
    const std::span<const std::int32_t> all(tokens_);
    return split == Split::train ? all.first(train_tokens_) : all.subspan(train_tokens_);
}

TokenBatch TextDataset::batch_at(Split split, std::uint64_t index) const {
    const std::span<const std::int32_t> data = tokens(split);
    const std::size_t context = options_.context;
    if (data.size() < context + 1)
        throw DataError("TextDataset: " + source_ + ": the " + split_name(split) +
                        " split is empty (validation fraction " +
                        std::to_string(options_.validation_fraction) + ")");
    TokenBatch batch;
    batch.batch_size = options_.batch_size;
    batch.context = context;
    batch.inputs.resize(batch.batch_size * context);
    batch.targets.resize(batch.batch_size * context);
    batch.starts.resize(batch.batch_size);
    const std::uint64_t windows = data.size() - context;  // starts 0 .. size - context - 1
    const std::uint64_t stream = window_stream[split == Split::train ? 0 : 1];
    for (std::size_t b = 0; b < batch.batch_size; ++b) {
        const auto start = std::size_t(
            random_below(random_bits(options_.seed, stream, index * batch.batch_size + b), windows));
        batch.starts[b] = start;
        std::copy_n(data.begin() + std::ptrdiff_t(start), context,
                    batch.inputs.begin() + std::ptrdiff_t(b * context));
        std::copy_n(data.begin() + std::ptrdiff_t(start + 1), context,
                    batch.targets.begin() + std::ptrdiff_t(b * context));
    }
    return batch;
}

TokenBatch TextDataset::next_host_batch(Split split) {
    std::uint64_t& counter = counters_[split == Split::train ? 0 : 1];
    TokenBatch batch = batch_at(split, counter);
    ++counter;
    prefetched_[split == Split::train ? 0 : 1].reset();
    return batch;
}

DeviceTokenBatch TextDataset::next_batch(Split split, const Device& device) {
    const int which = split == Split::train ? 0 : 1;
    std::uint64_t& counter = counters_[which];
    std::optional<Prefetched>& ahead = prefetched_[which];
    DeviceTokenBatch batch;
    if (ahead && ahead->index == counter && ahead->device == device)
        batch = ahead->batch;
    else
        batch = upload(batch_at(split, counter), device);
    ++counter;
    ahead.reset();
    if (options_.prefetch) ahead = Prefetched{counter, device, upload(batch_at(split, counter), device)};
    return batch;
}

TextDatasetState TextDataset::state() const {
    return {options_.seed, counters_[0], counters_[1], std::uint64_t(tokens_.size())};
}

void TextDataset::restore(const TextDatasetState& state) {
    if (state.seed != options_.seed || state.tokens != tokens_.size())
        throw DataError("TextDataset: " + source_ + ": saved state is of seed " + std::to_string(state.seed) +
                        " and " + std::to_string(state.tokens) + " tokens, this dataset has seed " +
                        std::to_string(options_.seed) + " and " + std::to_string(tokens_.size()) + " tokens");
    counters_[0] = state.train_batches;
    counters_[1] = state.validation_batches;
    prefetched_[0].reset();
    prefetched_[1].reset();
}

void save_token_batches(const std::filesystem::path& path, const TextDataset& dataset,
                        std::uint64_t train_batches, std::uint64_t validation_batches) {
    if (train_batches == 0)
        throw DataError("save_token_batches: " + path.string() + ": no train batches asked for");
    const std::size_t batch = dataset.options().batch_size, context = dataset.options().context;
    std::vector<std::int32_t> arrays[4];  // inputs, targets, val_inputs, val_targets
    for (const auto& [split, count, first] :
         {std::tuple(Split::train, train_batches, 0), std::tuple(Split::validation, validation_batches, 2)}) {
        for (std::uint64_t index = 0; index < count; ++index) {
            const TokenBatch drawn = dataset.batch_at(split, index);
            arrays[first].insert(arrays[first].end(), drawn.inputs.begin(), drawn.inputs.end());
            arrays[first + 1].insert(arrays[first + 1].end(), drawn.targets.begin(), drawn.targets.end());
        }
    }
    const char* names[4] = {"inputs", "targets", "val_inputs", "val_targets"};
    std::vector<SafetensorsTensorBytes> tensors;
    for (int i = 0; i < 4; ++i) {
        const std::uint64_t count = i < 2 ? train_batches : validation_batches;
        if (count == 0) continue;
        tensors.push_back({names[i],
                           DType::i32,
                           {std::size_t(count), batch, context},
                           std::as_bytes(std::span(arrays[i]))});
    }
    const SafetensorsMetadata metadata = {{"format", "tapevm-token-batches"},
                                          {"vocab", std::to_string(dataset.vocabulary().size())},
                                          {"vocabulary", dataset.vocabulary().to_json()},
                                          {"seed", std::to_string(dataset.options().seed)},
                                          {"source", dataset.source()}};
    const std::vector<std::byte> bytes = encode_safetensors(tensors, metadata, path.string());
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
    if (!out.flush()) throw SafetensorsError(path.string(), "", "file", "cannot write");
}

}  // namespace tapevm::nn
