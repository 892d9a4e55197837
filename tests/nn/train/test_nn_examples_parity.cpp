// `tapevm train char-gpt`'s parity options (run in-process through tapevm::cli::run, tiny
// shapes on the cpu): --init-out / --init reproduce a fresh run bit for bit, --batches-out /
// --batches reproduce the drawn batches' run bit for bit (step s on batch s mod N), the drawn
// batches are nn::TextDataset's (the windows bench/gpt_torch.py --data draws, checked here
// against the RNG formula that script spells out), and files of another model, vocabulary or
// context are clear errors (exit status 2, one "error:" line naming the file and the problem).
#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <map>
#include <sstream>
#include <utility>
#include <string>
#include <vector>

#include <unistd.h>

#include "markov_text.hpp"
#include "../../cli_support.hpp"
#include "tapevm/nn/data.hpp"
#include "tapevm/nn/examples.hpp"
#include "tapevm/nn/log.hpp"
#include "tapevm/nn/safetensors.hpp"

using namespace tapevm::nn;
using tapevm::test::CliResult;
namespace fs = std::filesystem;

namespace {

using tapevm::nn::test::markov_text;

// A fresh directory, removed with its contents.
class TempDir {
public:
    TempDir() : path_(fs::temp_directory_path() / ("tapevm_test_parity_" + std::to_string(::getpid()))) {
        fs::remove_all(path_);
        fs::create_directories(path_);
    }
    ~TempDir() { fs::remove_all(path_); }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    std::string operator/(const std::string& name) const { return (path_ / name).string(); }

private:
    fs::path path_;
};

void write_text(const std::string& path, const std::string& text) {
    std::ofstream(path, std::ios::binary) << text;
}

// tapevm train char-gpt, tiny preset, small shapes, on the cpu, with `extra` options (pairs of
// option and value; an option given here replaces the default).
CliResult train(std::initializer_list<std::string> extra) {
    std::vector<std::pair<std::string, std::string>> options = {
        {"--preset", "tiny"},     {"--device", "cpu"},     {"--batch", "2"},          {"--steps", "4"},
        {"--eval-interval", "2"}, {"--eval-batches", "2"}, {"--log-interval", "1000"}};
    const std::vector<std::string> given(extra);
    REQUIRE(given.size() % 2 == 0);
    for (std::size_t i = 0; i < given.size(); i += 2) {
        std::erase_if(options, [&](const auto& option) { return option.first == given[i]; });
        options.emplace_back(given[i], given[i + 1]);
    }
    std::vector<std::string> args = {"train", "char-gpt"};
    for (const auto& [name, value] : options) {
        args.push_back(name);
        args.push_back(value);
    }
    const std::vector<std::string_view> views(args.begin(), args.end());
    std::ostringstream out, err;
    CliResult result;
    result.status = tapevm::cli::run(views, out, err);
    result.out = out.str();
    result.err = err.str();
    return result;
}

// The losses and validation losses a JSON-lines log holds, in order.
std::vector<double> losses(const std::string& path) {
    std::vector<double> values;
    for (const LogRecord& record : read_log(path)) {
        if (record.loss) values.push_back(*record.loss);
        if (record.val_loss) values.push_back(-*record.val_loss);  // negative: told apart from losses
    }
    return values;
}

// Every tensor of a safetensors file as bytes.
std::map<std::string, std::vector<std::byte>> tensors(const std::string& path) {
    const SafetensorsFile file = SafetensorsFile::open(path);
    std::map<std::string, std::vector<std::byte>> out;
    for (const std::string& key : file.keys()) {
        const std::span<const std::byte> bytes = file.bytes(key);
        out[key].assign(bytes.begin(), bytes.end());
    }
    return out;
}

std::vector<std::int32_t> ints(const SafetensorsFile& file, const std::string& key) {
    const std::span<const std::byte> bytes = file.bytes(key);
    std::vector<std::int32_t> values(bytes.size() / 4);
    std::memcpy(values.data(), bytes.data(), bytes.size());
    return values;
}

// A batches file of i32 `inputs` and `targets` [n][b][t] with the given metadata.
void write_batches(const std::string& path, const std::vector<std::int32_t>& inputs,
                   const std::vector<std::int32_t>& targets, Shape shape,
                   const SafetensorsMetadata& metadata) {
    const SafetensorsTensorBytes list[] = {{"inputs", DType::i32, shape, std::as_bytes(std::span(inputs))},
                                           {"targets", DType::i32, shape, std::as_bytes(std::span(targets))}};
    const std::vector<std::byte> bytes = encode_safetensors(list, metadata, path);
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
}

#define REQUIRE_OK(result)              \
    do {                                \
        const CliResult& r_ = (result); \
        INFO("stderr: " << r_.err);     \
        REQUIRE(r_.status == 0);        \
    } while (false)

}  // namespace

TEST_CASE("char-gpt --init-out then --init: the same losses, bit for bit, as a fresh run of that seed") {
    const TempDir dir;
    write_text(dir / "corpus.txt", markov_text(6000, 5));
    const std::string corpus = dir / "corpus.txt";
    REQUIRE_OK(train({"--data", corpus, "--seed", "3", "--init-out", dir / "init3.st", "--log",
                      dir / "fresh.jsonl", "--out", dir / "fresh.st"}));
    REQUIRE_OK(train({"--data", corpus, "--seed", "3", "--init", dir / "init3.st", "--log",
                      dir / "loaded.jsonl", "--out", dir / "loaded.st"}));
    const std::vector<double> fresh = losses(dir / "fresh.jsonl");
    REQUIRE(fresh.size() == 4 + 2);
    CHECK(losses(dir / "loaded.jsonl") == fresh);
    CHECK(tensors(dir / "loaded.st") == tensors(dir / "fresh.st"));

    // The init file: the model's parameters (f32 on the cpu) and the metadata gpt_torch.py reads.
    const SafetensorsFile init = SafetensorsFile::open(dir / "init3.st");
    CHECK(init.metadata().at("gpt.layers") == "2");
    CHECK(init.metadata().at("gpt.vocab") == "8");
    CHECK(init.metadata().at("gpt.tie_weights") == "1");
    CHECK(init.metadata().at("chars") == "97,98,99,100,101,102,103,104");
    CHECK(init.dtype("wte.weight") == DType::f32);
    CHECK(init.shape("blocks.1.mlp.fc.weight") == Shape{256, 64});
    CHECK_FALSE(init.contains("lm_head.weight"));  // tied

    // --init really replaces the seed's initialisation: seed 7's parameters with seed 3's batches
    // differ from the fresh run, and equal seed 7's run on seed 3's batches (through a file).
    REQUIRE_OK(train({"--data", corpus, "--seed", "7", "--steps", "1", "--init-out", dir / "init7.st",
                      "--out", dir / "x.st"}));
    REQUIRE_OK(train({"--data", corpus, "--seed", "3", "--init", dir / "init7.st", "--batches-out",
                      dir / "b3.st", "--log", dir / "mixed.jsonl", "--out", dir / "x.st"}));
    REQUIRE_OK(train(
        {"--seed", "7", "--batches", dir / "b3.st", "--log", dir / "seed7.jsonl", "--out", dir / "x.st"}));
    CHECK(losses(dir / "mixed.jsonl").front() != fresh.front());
    CHECK(losses(dir / "seed7.jsonl") == losses(dir / "mixed.jsonl"));
}

TEST_CASE("char-gpt --batches-out then --batches: the same losses and parameters; batch s mod N") {
    const TempDir dir;
    const std::string text = markov_text(6000, 9);
    write_text(dir / "corpus.txt", text);
    const std::string corpus = dir / "corpus.txt";
    REQUIRE_OK(train({"--data", corpus, "--seed", "11", "--accumulation", "2", "--batches-out", dir / "b.st",
                      "--log", dir / "drawn.jsonl", "--out", dir / "drawn.st"}));
    REQUIRE_OK(train({"--batches", dir / "b.st", "--seed", "11", "--accumulation", "2", "--log",
                      dir / "file.jsonl", "--out", dir / "file.st"}));
    CHECK(losses(dir / "file.jsonl") == losses(dir / "drawn.jsonl"));
    CHECK(tensors(dir / "file.st") == tensors(dir / "drawn.st"));

    // The file holds steps x accumulation training batches and --eval-batches validation
    // batches, exactly nn::TextDataset's draws of the seed (90% / 10% split).
    const SafetensorsFile file = SafetensorsFile::open(dir / "b.st");
    CHECK(file.shape("inputs") == Shape{8, 2, 64});
    CHECK(file.shape("val_targets") == Shape{2, 2, 64});
    const TextDataset dataset(text, {.context = 64, .batch_size = 2, .validation_fraction = 0.1, .seed = 11});
    std::vector<std::int32_t> inputs, val_targets;
    for (std::uint64_t i = 0; i < 8; ++i) {
        const TokenBatch batch = dataset.batch_at(Split::train, i);
        inputs.insert(inputs.end(), batch.inputs.begin(), batch.inputs.end());
    }
    for (std::uint64_t i = 0; i < 2; ++i) {
        const TokenBatch batch = dataset.batch_at(Split::validation, i);
        val_targets.insert(val_targets.end(), batch.targets.begin(), batch.targets.end());
    }
    CHECK(ints(file, "inputs") == inputs);
    CHECK(ints(file, "val_targets") == val_targets);

    // ... whose windows are bench/gpt_torch.py's TextBatches formula, spelled out independently:
    // window b of train batch i starts at random_below(random_bits(seed, "TRAIN" stream,
    // i B + b), tokens - T) of the first 5,400 characters (a..h are ids 0..7).
    const std::vector<std::int32_t> file_inputs = ints(file, "inputs");
    for (std::uint64_t i : {0u, 5u}) {
        for (std::uint64_t b = 0; b < 2; ++b) {
            const std::uint64_t start =
                random_below(random_bits(11, 0x5452'4149'4e00'0000ull, i * 2 + b), 5400 - 64);
            for (std::size_t t = 0; t < 64; ++t) {
                REQUIRE(file_inputs[(i * 2 + b) * 64 + t] == text[start + t] - 'a');
            }
        }
    }

    // Step s trains on batch s mod N: 2 batches cycled equal a file holding them twice over.
    const std::vector<std::int32_t> targets = ints(file, "targets");
    const std::size_t two = 2 * 2 * 64;
    const std::vector<std::int32_t> first_inputs(file_inputs.begin(), file_inputs.begin() + two);
    const std::vector<std::int32_t> first_targets(targets.begin(), targets.begin() + two);
    std::vector<std::int32_t> twice_inputs = first_inputs, twice_targets = first_targets;
    twice_inputs.insert(twice_inputs.end(), first_inputs.begin(), first_inputs.end());
    twice_targets.insert(twice_targets.end(), first_targets.begin(), first_targets.end());
    const SafetensorsMetadata metadata = {{"vocabulary", "[97,98,99,100,101,102,103,104]"}, {"vocab", "8"}};
    write_batches(dir / "two.st", first_inputs, first_targets, {2, 2, 64}, metadata);
    write_batches(dir / "four.st", twice_inputs, twice_targets, {4, 2, 64}, metadata);
    REQUIRE_OK(train({"--batches", dir / "two.st", "--log", dir / "two.jsonl", "--out", dir / "x.st"}));
    REQUIRE_OK(train({"--batches", dir / "four.st", "--log", dir / "four.jsonl", "--out", dir / "x.st"}));
    CHECK(losses(dir / "two.jsonl") == losses(dir / "four.jsonl"));
    CHECK(losses(dir / "two.jsonl").size() == 4);  // no validation batches in the file, no --data: none
}

TEST_CASE("char-gpt: batches and init files that do not fit the run are clear errors") {
    const TempDir dir;
    write_text(dir / "corpus.txt", markov_text(6000, 5));
    write_text(dir / "other.txt", markov_text(6000, 5, 'b'));  // the same chain over b..i
    const std::string corpus = dir / "corpus.txt";
    REQUIRE_OK(train({"--data", corpus, "--steps", "1", "--init-out", dir / "init.st", "--batches-out",
                      dir / "b.st", "--out", dir / "x.st"}));
    const auto fails = [](const CliResult& result, std::initializer_list<std::string> words) {
        INFO("stderr: " << result.err);
        CHECK(result.status == 2);
        CHECK(result.err.starts_with("error: "));
        CHECK(result.err.find('\n') == result.err.size() - 1);
        for (const std::string& word : words) CHECK(result.err.find(word) != std::string::npos);
    };

    // Batches of another vocabulary, context or batch size.
    fails(train({"--data", dir / "other.txt", "--batches", dir / "b.st", "--out", dir / "x.st"}),
          {"--batches " + dir / "b.st", "vocabulary of 8 characters \"abcdefgh\"", "\"bcdefghi\""});
    fails(train({"--data", corpus, "--batches", dir / "b.st", "--preset", "shakespeare-char", "--out",
                 dir / "x.st"}),
          {"windows of 64 tokens", "context is 256"});
    fails(train({"--batches", dir / "b.st", "--batch", "3", "--out", dir / "x.st"}),
          {"batches of 2 sequences", "--batch is 3"});
    // Token ids outside the vocabulary, a wrong dtype, no vocabulary to train with.
    std::vector<std::int32_t> ids(2 * 64, 1);
    ids[70] = 8;
    write_batches(dir / "ids.st", ids, ids, {1, 2, 64}, {{"vocab", "8"}});
    fails(train({"--data", corpus, "--batches", dir / "ids.st", "--out", dir / "x.st"}),
          {"token id 8 at element 70 of 'inputs'", "outside the vocabulary of 8"});
    fails(train({"--batches", dir / "ids.st", "--out", dir / "x.st"}), {"no 'vocabulary'", "--data"});
    fails(train({"--data", corpus, "--batches", dir / "init.st", "--out", dir / "x.st"}),
          {"no tensor 'inputs'"});
    const std::vector<float> reals(2 * 64, 1.0f);
    const SafetensorsTensorBytes wrong[] = {
        {"inputs", DType::f32, {1, 2, 64}, std::as_bytes(std::span(reals))},
        {"targets", DType::f32, {1, 2, 64}, std::as_bytes(std::span(reals))}};
    const std::vector<std::byte> bytes = encode_safetensors(wrong);
    std::ofstream(dir / "f32.st", std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
    fails(train({"--data", corpus, "--batches", dir / "f32.st", "--out", dir / "x.st"}),
          {"'inputs' is F32", "not i32"});

    // Initial parameters of another model: another preset, another vocabulary, a file that is
    // not a model's, parameters of an untied head.
    fails(train({"--data", corpus, "--init", dir / "init.st", "--preset", "shakespeare-char", "--out",
                 dir / "x.st"}),
          {"--init " + dir / "init.st", "another configuration", "gpt.layers 2 (this run: 6)"});
    fails(train({"--data", dir / "other.txt", "--init", dir / "init.st", "--out", dir / "x.st"}),
          {"vocabulary of 8 characters \"abcdefgh\"", "\"bcdefghi\""});
    fails(train({"--data", corpus, "--init", dir / "b.st", "--out", dir / "x.st"}),
          {"holds 'inputs'", "another model"});
    {
        const SafetensorsFile init = SafetensorsFile::open(dir / "init.st");
        std::map<std::string, Tensor> parameters = init.load_all(Device::cpu());
        parameters["lm_head.weight"] = parameters.at("wte.weight");
        save_safetensors(dir / "untied.st", parameters);  // no metadata: the tensors tell
    }
    fails(train({"--data", corpus, "--init", dir / "untied.st", "--out", dir / "x.st"}),
          {"holds 'lm_head.weight'"});
    fails(
        train({"--data", corpus, "--init", dir / "init.st", "--resume", dir / "x.st", "--out", dir / "x.st"}),
        {"exclude each other"});
    fails(train({"--batches", dir / "b.st", "--batches-out", dir / "y.st", "--out", dir / "x.st"}),
          {"--data"});
}

TEST_CASE("CharCorpus splits and draws as TextDataset (and so as bench/gpt_torch.py --data)") {
    const Device device = Device::cpu();
    for (const std::size_t length : {1001u, 4000u}) {  // 1001: floor(100.1) validation tokens
        const std::string text = markov_text(length, length);
        for (const double fraction : {0.1, 0.25}) {
            const CharCorpus corpus(text, fraction);
            const std::size_t batch = 3, context = 16;
            for (const std::uint64_t seed : {0u, 7u}) {
                const TextDataset dataset(
                    text,
                    {.context = context, .batch_size = batch, .validation_fraction = fraction, .seed = seed});
                CHECK(corpus.train_tokens() == dataset.tokens(Split::train).size());
                CHECK(corpus.validation_tokens() == dataset.tokens(Split::validation).size());
                for (const Split split : {Split::train, Split::validation}) {
                    for (const std::uint64_t index : {0u, 1u, 12u}) {
                        const Batch ours =
                            corpus.batch(device, split == Split::validation, index, batch, context, seed);
                        const TokenBatch theirs = dataset.batch_at(split, index);
                        CAPTURE(length);
                        CAPTURE(fraction);
                        CAPTURE(index);
                        CHECK(ours.inputs.shape() == Shape{batch, context});
                        CHECK(ours.inputs.to_bytes() ==
                              std::vector<std::byte>(reinterpret_cast<const std::byte*>(theirs.inputs.data()),
                                                     reinterpret_cast<const std::byte*>(
                                                         theirs.inputs.data() + theirs.inputs.size())));
                        CHECK(ours.targets.to_bytes() ==
                              std::vector<std::byte>(
                                  reinterpret_cast<const std::byte*>(theirs.targets.data()),
                                  reinterpret_cast<const std::byte*>(theirs.targets.data() +
                                                                     theirs.targets.size())));
                    }
                }
            }
        }
    }
}
