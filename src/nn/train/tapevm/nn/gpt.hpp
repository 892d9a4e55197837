// GPT: token and position embeddings, pre-norm transformer blocks, a final norm and a
// linear head (optionally tied to the token embedding), as in GPT-2 / nanoGPT.
//
// Parameter names: wte.weight, wpe.weight, blocks.<i>.{ln_1,attn.{q,k,v,proj},ln_2,
// mlp.{fc,proj}}.{weight,bias}, ln_f.{weight,bias}, lm_head.weight (absent when tied: the
// head then reads wte.weight).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tapevm/nn/layers.hpp"
#include "tapevm/nn/loss.hpp"
#include "tapevm/nn/module.hpp"

namespace tapevm::nn {

struct GPTConfig {
    std::size_t vocab = 65;
    std::size_t context = 256;
    std::size_t layers = 6;
    std::size_t heads = 6;
    std::size_t kv_heads = 0;  // 0: heads (plain multi-head attention)
    std::size_t dim = 384;
    std::size_t mlp_hidden = 0;  // 0: 4 dim
    bool bias = true;
    bool rms_norm = false;
    bool tie_weights = true;
    std::string activation = "gelu";
    double dropout = 0;
    std::uint64_t seed = 1337;  // initialisation and dropout
};

class GPT : public Module {
public:
    GPT(const Device& device, const GPTConfig& config, std::optional<DType> dtype = {});

    /// ids i32 [B][T] (T <= context) -> logits [B][T][vocab].
    Tensor forward(const Tensor& ids) override;
    /// From dL/dlogits; adds into every gradient; returns an undefined tensor.
    Tensor backward(const Tensor& dlogits) override;

    /// forward + mean cross-entropy against targets [B][T] (rows with pad_id excluded); keeps
    /// the logits' gradient (times grad_scale) for backward_loss(). Returns the one-element loss.
    Tensor loss(const Tensor& ids, const Tensor& targets, std::int32_t pad_id = -1, double grad_scale = 1);
    /// backward from the last loss().
    void backward_loss();

    /// Decoding over key/value caches (one per block, from make_caches): ids [B][Tq] at
    /// positions past .. past + Tq - 1 (< context) -> logits [B][Tq][vocab]. Forward only.
    Tensor decode(const Tensor& ids, std::vector<KvCache>& caches, std::size_t past);
    std::vector<KvCache> make_caches(std::size_t batch);

    /// GPT-2's initialisation from `seed`, by parameter name: every weight matrix and
    /// embedding normal(0, 0.02), the residual projections (attn.proj, mlp.proj) normal(0,
    /// 0.02 / sqrt(2 layers)), biases 0, norm weights 1. The same seed gives the same model
    /// on every device.
    void init_weights(std::uint64_t seed);

    const GPTConfig& config() const { return config_; }
    Device device() const { return device_; }
    DType dtype() const { return dtype_; }
    std::vector<TransformerBlock*> blocks();

private:
    Tensor position_ids(std::size_t batch, std::size_t time, std::size_t past);

    Device device_;
    GPTConfig config_;
    DType dtype_;
    Embedding wte_;
    Embedding wpe_;
    std::vector<std::unique_ptr<TransformerBlock>> blocks_;
    std::unique_ptr<Module> ln_f_;
    std::unique_ptr<Linear> lm_head_;
    Tensor dlogits_;
};

/// The built-in presets: "tiny" (2 layers, d 64, 4 heads, context 64: trains in seconds on a
/// CPU) and "shakespeare-char" (nanoGPT's: 6 layers, 6 heads, d 384, context 256, dropout
/// 0.2). vocab is left to the caller. tapevm::Error for another name.
GPTConfig gpt_preset(const std::string& name);

/// The configuration as checkpoint metadata ("gpt.vocab", "gpt.layers", ...) and back;
/// gpt_config_from_metadata throws tapevm::Error naming a missing or malformed key.
std::vector<std::pair<std::string, std::string>> gpt_config_metadata(const GPTConfig& config);
GPTConfig gpt_config_from_metadata(const std::map<std::string, std::string>& metadata);

}  // namespace tapevm::nn
