// tapevm sample: continue a prompt with a character-level GPT checkpoint written by
// `tapevm train char-gpt`, decoding through the key/value-cache attention kernel.
#include <cmath>
#include <string>

#include "arguments.hpp"
#include "commands.hpp"
#include "tapevm/nn/examples.hpp"
#include "tapevm/nn/gpt.hpp"
#include "tapevm/nn/safetensors.hpp"
#include "tapevm/nn/trainer.hpp"

namespace tapevm::cli {
namespace {

constexpr std::string_view help =
    R"(usage: tapevm sample --checkpoint FILE --prompt TEXT [--tokens N] [--temperature X]
                     [--top-k N] [--seed N] [--device cpu|gpu|reference]

Loads a checkpoint of `tapevm train char-gpt` (the model's configuration and vocabulary are
in its metadata) and prints TEXT followed by N sampled characters. Decoding runs one prefill
over the prompt, then one token at a time through per-layer key/value caches.

options:
  --checkpoint FILE   the .safetensors checkpoint
  --prompt TEXT       the text to continue (its characters must be in the vocabulary)
  --tokens N          characters to sample (200)
  --temperature X     softmax temperature (1; 0 picks the most likely character)
  --top-k N           sample among the N most likely characters only (all)
  --seed N            the sampler's seed (1)
  --device NAME       cpu (default), gpu or reference
)";

constexpr OptionSpec options[] = {{"--checkpoint", true},  {"--prompt", true}, {"--tokens", true},
                                  {"--temperature", true}, {"--top-k", true},  {"--seed", true},
                                  {"--device", true},      {"--help", false}};

nn::Device make_device(std::string_view name) {
    if (name == "cpu") return nn::Device::cpu();
    if (name == "gpu") return nn::Device::gpu();
    if (name == "reference") return nn::Device::reference();
    throw UsageError("sample: --device must be cpu, gpu or reference, not '" + std::string(name) + "'");
}

int run(std::span<const std::string_view> args, std::ostream& out, std::ostream&) {
    const Arguments arguments = parse_arguments("sample", args, options);
    if (arguments.answered_help(help, out)) return 0;
    arguments.expect_positional(0, 0, "no positional arguments");
    const std::string path(arguments.required("--checkpoint", "FILE (a char-gpt checkpoint)"));
    const std::string prompt(arguments.required("--prompt", "TEXT (the text to continue)"));
    if (prompt.empty()) throw UsageError("sample: --prompt is empty");
    nn::SampleOptions sample;
    if (const auto text = arguments.value("--tokens"))
        sample.tokens = parse_count("--tokens", *text, 1, 1 << 24);
    if (const auto text = arguments.value("--top-k"))
        sample.top_k = parse_count("--top-k", *text, 1, 1 << 24);
    if (const auto text = arguments.value("--seed"))
        sample.seed = parse_count("--seed", *text, 0, std::size_t{1} << 62);
    if (const auto text = arguments.value("--temperature")) {
        const std::string copy(*text);
        char* end = nullptr;
        sample.temperature = std::strtod(copy.c_str(), &end);
        if (copy.empty() || end != copy.c_str() + copy.size() || !std::isfinite(sample.temperature) ||
            sample.temperature < 0) {
            throw UsageError("sample: --temperature must be a number >= 0, not '" + copy + "'");
        }
    }
    const nn::Device device = make_device(arguments.value("--device").value_or("cpu"));
    const nn::SafetensorsFile file = nn::SafetensorsFile::open(path);
    const auto chars = file.metadata().find("chars");
    if (chars == file.metadata().end())
        throw Error("sample: " + path + ": no vocabulary ('chars') in the metadata");
    const std::string vocabulary = nn::vocabulary_from_metadata(chars->second);
    nn::GPTConfig config = nn::gpt_config_from_metadata(file.metadata());
    if (config.vocab != vocabulary.size()) {
        throw Error("sample: " + path + ": the vocabulary has " + std::to_string(vocabulary.size()) +
                    " characters, the model " + std::to_string(config.vocab));
    }
    nn::GPT model(device, config);
    nn::load_model(model, path);
    const std::vector<std::int32_t> ids = nn::encode_chars(vocabulary, prompt);
    const std::vector<std::int32_t> produced = nn::sample_tokens(model, ids, sample);
    out << prompt << nn::decode_chars(vocabulary, produced) << '\n';
    return 0;
}

}  // namespace

Command sample_command() {
    return {"sample", "continue a prompt with a char-gpt checkpoint (KV-cache decoding)", help, run};
}

}  // namespace tapevm::cli
