// Training data: the counter-based RNG, BatchSampler's epochs (every sample once, seeded
// shuffle, drop_last) and exact resume, Vocabulary, TextDataset's splits, windows, errors and
// resume. Host-side only; test_nn_io_devices.cpp uploads to devices.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include <doctest/doctest.h>
#include <unistd.h>

#include "tapevm/nn/data.hpp"
#include "tapevm/nn/safetensors.hpp"

using namespace tapevm::nn;

TEST_CASE("random_bits is a pure function and random_below stays in range, about uniform") {
    CHECK(random_bits(1, 2, 3) == random_bits(1, 2, 3));
    CHECK(random_bits(1, 2, 3) != random_bits(1, 2, 4));
    CHECK(random_bits(1, 2, 3) != random_bits(1, 3, 3));
    CHECK(random_bits(1, 2, 3) != random_bits(2, 2, 3));
    CHECK(random_below(~std::uint64_t(0), 10) == 9);
    CHECK(random_below(0, 10) == 0);
    // 10 bins, 100,000 draws: each count within 5 standard deviations of 10,000.
    std::vector<int> counts(10);
    for (std::uint64_t i = 0; i < 100000; ++i) ++counts[random_below(random_bits(7, 0, i), 10)];
    for (int count : counts) CHECK(std::abs(count - 10000) < 5 * 95);
}

TEST_CASE("the RNG and TextDataset's windows agree with bench/gpt_torch.py's Python version") {
    // Values printed by `bench/gpt_torch.py --self-test`, an independent implementation: the
    // PyTorch reference draws the same batches from the same corpus and seed.
    CHECK(random_bits(1, 2, 3) == 0xd0734750fde362b3ull);
    CHECK(random_bits(0, 0, 0) == 0x238275bc38fcbe91ull);
    CHECK(random_below(random_bits(1, 2, 3), 1000) == 814);
    std::string text;
    for (int i = 0; i < 10; ++i) text += "abcdefghij";
    const TextDataset dataset(text, {.context = 4, .batch_size = 3, .validation_fraction = 0.1, .seed = 7});
    CHECK(dataset.batch_at(Split::train, 2).starts == std::vector<std::size_t>{61, 4, 50});
    CHECK(dataset.batch_at(Split::validation, 1).starts == std::vector<std::size_t>{5, 2, 3});
}

TEST_CASE("BatchSampler serves every sample once per epoch, shuffled per epoch from the seed") {
    BatchSampler sampler(10, {.batch_size = 4, .shuffle = true, .drop_last = false, .seed = 3});
    CHECK(sampler.batches_per_epoch() == 3);
    for (std::uint64_t epoch = 0; epoch < 3; ++epoch) {
        std::vector<std::size_t> seen;
        for (std::size_t expected_rows : {4u, 4u, 2u}) {
            const std::vector<std::size_t> batch = sampler.next();
            CHECK(batch.size() == expected_rows);
            CHECK(sampler.epoch() == epoch);
            seen.insert(seen.end(), batch.begin(), batch.end());
        }
        CHECK(seen == sampler.epoch_order(epoch));
        std::sort(seen.begin(), seen.end());
        std::vector<std::size_t> all(10);
        std::iota(all.begin(), all.end(), 0);
        CHECK(seen == all);
    }
    CHECK(sampler.epoch_order(0) != sampler.epoch_order(1));
    BatchSampler other_seed(10, {.batch_size = 4, .seed = 4});
    CHECK(other_seed.epoch_order(0) != sampler.epoch_order(0));

    BatchSampler in_order(5, {.batch_size = 2, .shuffle = false});
    CHECK(in_order.next() == std::vector<std::size_t>{0, 1});
    CHECK(in_order.next() == std::vector<std::size_t>{2, 3});
    CHECK(in_order.next() == std::vector<std::size_t>{4});
    CHECK(in_order.next() == std::vector<std::size_t>{0, 1});
    CHECK(in_order.epoch() == 1);
}

TEST_CASE("drop_last leaves out short batches") {
    BatchSampler sampler(10, {.batch_size = 4, .shuffle = false, .drop_last = true});
    CHECK(sampler.batches_per_epoch() == 2);
    CHECK(sampler.next() == std::vector<std::size_t>{0, 1, 2, 3});
    CHECK(sampler.next() == std::vector<std::size_t>{4, 5, 6, 7});
    CHECK(sampler.next() == std::vector<std::size_t>{0, 1, 2, 3});
    CHECK(sampler.epoch() == 1);
    CHECK_THROWS_AS(BatchSampler(3, {.batch_size = 4, .drop_last = true}), DataError);
    CHECK_THROWS_AS(BatchSampler(0, {.batch_size = 4}), DataError);
    CHECK_THROWS_AS(BatchSampler(3, {.batch_size = 0}), DataError);
}

TEST_CASE("a BatchSampler restored from a saved state continues exactly") {
    const DataLoaderOptions options{.batch_size = 3, .shuffle = true, .drop_last = false, .seed = 11};
    BatchSampler straight(8, options);
    std::vector<std::vector<std::size_t>> expected;
    for (int i = 0; i < 12; ++i) expected.push_back(straight.next());

    for (int cut : {0, 1, 3, 5, 7}) {
        CAPTURE(cut);
        BatchSampler first(8, options);
        for (int i = 0; i < cut; ++i) CHECK(first.next() == expected[std::size_t(i)]);
        const std::string saved = first.state().to_json();
        BatchSampler resumed(8, {.batch_size = 3, .seed = 999});  // the seed comes from the state
        resumed.restore(DataLoaderState::from_json(saved));
        CHECK(resumed.state() == first.state());
        for (int i = cut; i < 12; ++i) CHECK(resumed.next() == expected[std::size_t(i)]);
    }
    BatchSampler other(9, options);
    CHECK_THROWS_AS(other.restore(straight.state()), DataError);
    CHECK_THROWS_AS(DataLoaderState::from_json("{\"seed\":1}"), DataError);
    CHECK_THROWS_AS(DataLoaderState::from_json("not json"), DataError);
    CHECK_THROWS_AS(DataLoaderState::from_json(R"({"seed":1,"epoch":-1,"position":0,"samples":8})"),
                    DataError);
}

TEST_CASE("Vocabulary: sorted distinct bytes, encode and decode, JSON") {
    const Vocabulary vocabulary = Vocabulary::from_text("hello, world\n");
    CHECK(vocabulary.symbols() == "\n ,dehlorw");
    CHECK(vocabulary.size() == 10);
    CHECK(vocabulary.id('\n') == 0);
    CHECK(vocabulary.id('w') == 9);
    const std::vector<std::int32_t> ids = vocabulary.encode("low");
    CHECK(ids == std::vector<std::int32_t>{6, 7, 9});
    CHECK(vocabulary.decode(ids) == "low");
    CHECK_THROWS_WITH_AS(vocabulary.encode("lax"), doctest::Contains("'a' at position 1"), DataError);
    const std::int32_t bad[] = {10};
    CHECK_THROWS_AS(vocabulary.decode(bad), DataError);
    CHECK(vocabulary.to_json() == "[10,32,44,100,101,104,108,111,114,119]");
    CHECK(Vocabulary::from_json(vocabulary.to_json()) == vocabulary);
    const Vocabulary binary = Vocabulary::from_text(std::string("\x00\xff\x80", 3));
    CHECK(Vocabulary::from_json(binary.to_json()) == binary);
    CHECK_THROWS_AS(Vocabulary::from_json("[3,1]"), DataError);
    CHECK_THROWS_AS(Vocabulary::from_json("[256]"), DataError);
    CHECK_THROWS_AS(Vocabulary::from_text(""), DataError);
}

namespace {

/// A corpus from a first-order Markov chain over "abcd" (each symbol followed by the next
/// with probability 3/4, by any symbol otherwise), from a fixed seed.
std::string markov_text(std::size_t length) {
    std::string text;
    std::uint64_t state = 0;
    for (std::size_t i = 0; i < length; ++i) {
        const std::uint64_t bits = random_bits(42, 0, i);
        state = random_below(bits, 4) < 3 ? (state + 1) % 4 : random_below(bits >> 32, 4);
        text += char('a' + state);
    }
    return text;
}

}  // namespace

TEST_CASE("TextDataset: split, windows and targets") {
    const std::string text = markov_text(1000);
    const TextDatasetOptions options{.context = 8, .batch_size = 5, .validation_fraction = 0.1, .seed = 9};
    TextDataset dataset(text, options, "markov");
    CHECK(dataset.vocabulary().symbols() == "abcd");
    CHECK(dataset.tokens(Split::train).size() == 900);
    CHECK(dataset.tokens(Split::validation).size() == 100);
    CHECK(dataset.vocabulary().decode(dataset.tokens(Split::validation)) == text.substr(900));

    for (Split split : {Split::train, Split::validation}) {
        const std::span<const std::int32_t> tokens = dataset.tokens(split);
        std::set<std::size_t> starts;
        for (std::uint64_t index = 0; index < 20; ++index) {
            const TokenBatch batch = dataset.batch_at(split, index);
            REQUIRE(batch.inputs.size() == 5 * 8);
            REQUIRE(batch.targets.size() == 5 * 8);
            for (std::size_t b = 0; b < 5; ++b) {
                const std::size_t start = batch.starts[b];
                REQUIRE(start + 8 + 1 <= tokens.size());
                starts.insert(start);
                for (std::size_t t = 0; t < 8; ++t) {
                    CHECK(batch.inputs[b * 8 + t] == tokens[start + t]);
                    CHECK(batch.targets[b * 8 + t] == tokens[start + t + 1]);
                }
            }
        }
        // 100 draws spread over the possible starts (892 train, 92 validation): about 95 and 61
        // distinct ones expected.
        CHECK(starts.size() > (split == Split::train ? 85u : 50u));
    }
    // Pure in (seed, split, index); the seed and the split change the draws.
    CHECK(dataset.batch_at(Split::train, 3).starts == dataset.batch_at(Split::train, 3).starts);
    CHECK(dataset.batch_at(Split::train, 3).starts != dataset.batch_at(Split::train, 4).starts);
    TextDataset other_seed(text, {.context = 8, .batch_size = 5, .seed = 10});
    CHECK(other_seed.batch_at(Split::train, 3).starts != dataset.batch_at(Split::train, 3).starts);
}

TEST_CASE("TextDataset resumes exactly from a saved state") {
    const std::string text = markov_text(500);
    const TextDatasetOptions options{.context = 16, .batch_size = 3, .validation_fraction = 0.2, .seed = 5};
    TextDataset straight(text, options);
    std::vector<std::vector<std::int32_t>> expected;
    for (int i = 0; i < 6; ++i) {
        expected.push_back(straight.next_host_batch(Split::train).inputs);
        if (i % 3 == 2) expected.push_back(straight.next_host_batch(Split::validation).inputs);
    }
    TextDataset first(text, options);
    std::vector<std::vector<std::int32_t>> got;
    for (int i = 0; i < 3; ++i) {
        got.push_back(first.next_host_batch(Split::train).inputs);
        if (i % 3 == 2) got.push_back(first.next_host_batch(Split::validation).inputs);
    }
    const TextDatasetState saved = first.state();
    CHECK(saved.train_batches == 3);
    CHECK(saved.validation_batches == 1);
    TextDataset resumed(text, options);
    resumed.restore(TextDatasetState::from_json(saved.to_json()));
    for (int i = 3; i < 6; ++i) {
        got.push_back(resumed.next_host_batch(Split::train).inputs);
        if (i % 3 == 2) got.push_back(resumed.next_host_batch(Split::validation).inputs);
    }
    CHECK(got == expected);

    TextDataset other(text, {.context = 16, .batch_size = 3, .validation_fraction = 0.2, .seed = 6});
    CHECK_THROWS_AS(other.restore(saved), DataError);
    TextDataset shorter(text.substr(1), options);
    CHECK_THROWS_AS(shorter.restore(saved), DataError);
}

TEST_CASE("TextDataset: clear errors for unusable text and options") {
    const TextDatasetOptions options{.context = 8, .batch_size = 2};
    CHECK_THROWS_WITH_AS(TextDataset("", options, "empty.txt"), doctest::Contains("empty.txt is empty"),
                         DataError);
    CHECK_THROWS_WITH_AS(TextDataset("aaaaaaaaaaaaaaaaaaaaaaaa", options, "a.txt"),
                         doctest::Contains("one distinct character ('a')"), DataError);
    CHECK_THROWS_WITH_AS(TextDataset("abcabca", options, "short.txt"),
                         doctest::Contains("context 8 needs windows of 9 tokens, but the train split has 7"),
                         DataError);
    // 100 tokens, 10 for validation: too few for context 16.
    CHECK_THROWS_WITH_AS(TextDataset(markov_text(100), {.context = 16, .batch_size = 2}, "m"),
                         doctest::Contains("the validation split has 10"), DataError);
    CHECK_THROWS_AS(TextDataset(markov_text(100), {.context = 0, .batch_size = 2}), DataError);
    CHECK_THROWS_AS(TextDataset(markov_text(100), {.context = 4, .batch_size = 0}), DataError);
    CHECK_THROWS_AS(
        TextDataset(markov_text(100), {.context = 4, .batch_size = 2, .validation_fraction = 1.0}),
        DataError);
    CHECK_THROWS_AS(
        TextDataset(markov_text(100), {.context = 4, .batch_size = 2, .validation_fraction = -0.1}),
        DataError);
    // No validation split asked for: training works, validation batches are an error.
    TextDataset train_only(markov_text(100), {.context = 4, .batch_size = 2, .validation_fraction = 0.0});
    CHECK(train_only.tokens(Split::validation).empty());
    CHECK(train_only.batch_at(Split::train, 0).inputs.size() == 8);
    CHECK_THROWS_WITH_AS(train_only.batch_at(Split::validation, 0),
                         doctest::Contains("validation split is empty"), DataError);
    CHECK_THROWS_WITH_AS(TextDataset::from_file("/nonexistent/corpus.txt", options),
                         doctest::Contains("cannot open /nonexistent/corpus.txt"), DataError);
}

TEST_CASE("TextDataset::from_file reads the bytes as they are") {
    const std::filesystem::path path = std::filesystem::temp_directory_path() /
                                       ("tapevm_test_" + std::to_string(::getpid()) + "_corpus.txt");
    const std::string text = markov_text(300) + "\r\n\xff";
    {
        std::ofstream out(path, std::ios::binary);
        out << text;
    }
    const TextDataset dataset = TextDataset::from_file(path, {.context = 8, .batch_size = 2});
    std::filesystem::remove(path);
    CHECK(dataset.source() == path.string());
    CHECK(dataset.vocabulary().symbols() == std::string("\n\rabcd\xff"));
    CHECK(dataset.tokens(Split::train).size() + dataset.tokens(Split::validation).size() == text.size());
}

TEST_CASE("save_token_batches writes bench/gpt_torch.py's batches file") {
    const TextDataset dataset(markov_text(400), {.context = 8, .batch_size = 2, .seed = 3}, "markov");
    const std::filesystem::path path = std::filesystem::temp_directory_path() /
                                       ("tapevm_test_" + std::to_string(::getpid()) + "_batches.safetensors");
    save_token_batches(path, dataset, 3, 2);
    const SafetensorsFile file = SafetensorsFile::open(path);
    std::filesystem::remove(path);
    CHECK(file.keys() == std::vector<std::string>{"inputs", "targets", "val_inputs", "val_targets"});
    CHECK(file.shape("inputs") == Shape{3, 2, 8});
    CHECK(file.shape("val_targets") == Shape{2, 2, 8});
    CHECK(file.metadata().at("vocab") == "4");
    CHECK(Vocabulary::from_json(file.metadata().at("vocabulary")) == dataset.vocabulary());
    auto ints = [&](const std::string& key) {
        const std::span<const std::byte> bytes = file.bytes(key);
        std::vector<std::int32_t> values(bytes.size() / 4);
        std::memcpy(values.data(), bytes.data(), bytes.size());
        return values;
    };
    std::vector<std::int32_t> inputs, val_targets;
    for (std::uint64_t i = 0; i < 3; ++i) {
        const TokenBatch batch = dataset.batch_at(Split::train, i);
        inputs.insert(inputs.end(), batch.inputs.begin(), batch.inputs.end());
    }
    for (std::uint64_t i = 0; i < 2; ++i) {
        const TokenBatch batch = dataset.batch_at(Split::validation, i);
        val_targets.insert(val_targets.end(), batch.targets.begin(), batch.targets.end());
    }
    CHECK(ints("inputs") == inputs);
    CHECK(ints("val_targets") == val_targets);
    CHECK_THROWS_AS(save_token_batches(path, dataset, 0), DataError);
}
