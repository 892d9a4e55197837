#include "tapevm/nn/gpt.hpp"

#include <cmath>

#include "tapevm/error.hpp"
#include "tapevm/nn/kernels.hpp"

namespace tapevm::nn {
namespace {

GPTConfig checked(GPTConfig config) {
    if (config.kv_heads == 0) config.kv_heads = config.heads;
    if (config.mlp_hidden == 0) config.mlp_hidden = 4 * config.dim;
    if (config.vocab == 0 || config.context == 0 || config.dim == 0 || config.heads == 0) {
        throw Error("GPT: vocab, context, dim and heads must be positive");
    }
    return config;
}

std::unique_ptr<Module> make_norm(const Device& device, const GPTConfig& config, DType dtype) {
    if (config.rms_norm) return std::make_unique<RMSNorm>(device, config.dim, 1e-6, dtype);
    return std::make_unique<LayerNorm>(device, config.dim, config.bias, 1e-5, dtype);
}

bool ends_with(const std::string& text, const std::string& suffix) {
    return text.size() >= suffix.size() &&
           text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

GPT::GPT(const Device& device, const GPTConfig& config, std::optional<DType> dtype)
    : device_(device), config_(checked(config)), dtype_(dtype.value_or(device.accumulate_dtype())),
      wte_(device, config_.vocab, config_.dim, dtype_), wpe_(device, config_.context, config_.dim, dtype_) {
    register_module("wte", wte_);
    register_module("wpe", wpe_);
    for (std::size_t i = 0; i < config_.layers; ++i) {
        BlockConfig block;
        block.dim = config_.dim;
        block.heads = config_.heads;
        block.kv_heads = config_.kv_heads;
        block.mlp_hidden = config_.mlp_hidden;
        block.bias = config_.bias;
        block.rms_norm = config_.rms_norm;
        block.activation = config_.activation;
        block.dropout = config_.dropout;
        block.seed = config_.seed * 1000 + i;
        blocks_.push_back(std::make_unique<TransformerBlock>(device, block, dtype_));
        register_module("blocks." + std::to_string(i), *blocks_.back());
    }
    ln_f_ = make_norm(device, config_, dtype_);
    register_module("ln_f", *ln_f_);
    if (config_.tie_weights) {
        lm_head_ = std::make_unique<Linear>(wte_.weight(), false);
    } else {
        lm_head_ = std::make_unique<Linear>(device, config_.dim, config_.vocab, false, dtype_);
    }
    register_module("lm_head", *lm_head_);
    init_weights(config_.seed);
}

void GPT::init_weights(std::uint64_t seed) {
    const double residual =
        0.02 / std::sqrt(2.0 * static_cast<double>(std::max<std::size_t>(config_.layers, 1)));
    for (const NamedParameter& p : parameters()) {
        const Tensor& value = p.parameter->value;
        const bool norm = p.name.find("ln_") != std::string::npos;
        if (norm) {
            fill(value, ends_with(p.name, ".weight") ? 1.0 : 0.0);
        } else if (ends_with(p.name, ".bias")) {
            fill(value, 0.0);
        } else if (ends_with(p.name, "attn.proj.weight") || ends_with(p.name, "mlp.proj.weight")) {
            init_normal(value, 0, residual, seed, name_hash(p.name));
        } else {
            init_normal(value, 0, 0.02, seed, name_hash(p.name));
        }
        if (p.parameter->compute.defined()) copy(value, p.parameter->compute);
    }
}

std::vector<TransformerBlock*> GPT::blocks() {
    std::vector<TransformerBlock*> out;
    for (auto& block : blocks_) out.push_back(block.get());
    return out;
}

Tensor GPT::position_ids(std::size_t batch, std::size_t time, std::size_t past) {
    std::vector<std::int32_t> ids(batch * time);
    for (std::size_t b = 0; b < batch; ++b) {
        for (std::size_t t = 0; t < time; ++t) ids[b * time + t] = static_cast<std::int32_t>(past + t);
    }
    return device_.upload({batch, time}, std::span<const std::int32_t>(ids));
}

Tensor GPT::forward(const Tensor& ids) {
    if (!ids.defined() || ids.rank() != 2 || ids.dtype() != DType::i32) {
        throw Error("GPT: ids: expected i32 [batch][time], got " +
                    (ids.defined() ? ids.describe() : "undefined"));
    }
    const std::size_t b = ids.dim(0), t = ids.dim(1);
    if (t > config_.context) {
        throw Error("GPT: ids: " + std::to_string(t) + " tokens exceed the context of " +
                    std::to_string(config_.context));
    }
    Tensor x = wte_.forward(ids);
    add_assign(x, wpe_.forward(position_ids(b, t, 0)));
    for (auto& block : blocks_) x = block->forward(x);
    return lm_head_->forward(ln_f_->forward(x));
}

Tensor GPT::backward(const Tensor& dlogits) {
    Tensor dx = ln_f_->backward(lm_head_->backward(dlogits));
    for (auto it = blocks_.rbegin(); it != blocks_.rend(); ++it) dx = (*it)->backward(dx);
    wpe_.backward(dx);
    wte_.backward(dx);
    return {};
}

Tensor GPT::loss(const Tensor& ids, const Tensor& targets, std::int32_t pad_id, double grad_scale) {
    const Tensor logits = forward(ids);
    LossOutput out = cross_entropy_loss(logits, targets, pad_id, grad_scale);
    dlogits_ = out.grad;
    return out.loss;
}

void GPT::backward_loss() {
    if (!dlogits_.defined()) throw Error("GPT::backward_loss: no loss() before it");
    backward(dlogits_);
    dlogits_ = Tensor();
}

std::vector<KvCache> GPT::make_caches(std::size_t batch) {
    std::vector<KvCache> caches;
    for (auto& block : blocks_) caches.push_back(block->attn().make_cache(batch, config_.context));
    return caches;
}

Tensor GPT::decode(const Tensor& ids, std::vector<KvCache>& caches, std::size_t past) {
    if (!ids.defined() || ids.rank() != 2 || ids.dtype() != DType::i32) {
        throw Error("GPT::decode: ids: expected i32 [batch][time]");
    }
    if (caches.size() != blocks_.size())
        throw ShapeError("GPT::decode", "caches", blocks_.size(), caches.size());
    const std::size_t b = ids.dim(0), t = ids.dim(1);
    if (past + t > config_.context) {
        throw Error("GPT::decode: positions up to " + std::to_string(past + t) + " exceed the context of " +
                    std::to_string(config_.context));
    }
    Tensor x = wte_.forward(ids);
    add_assign(x, wpe_.forward(position_ids(b, t, past)));
    for (std::size_t i = 0; i < blocks_.size(); ++i) x = blocks_[i]->decode(x, caches[i], past);
    return lm_head_->forward(ln_f_->forward(x));
}

GPTConfig gpt_preset(const std::string& name) {
    GPTConfig config;
    if (name == "tiny") {
        config.layers = 2;
        config.heads = 4;
        config.dim = 64;
        config.context = 64;
        config.dropout = 0;
    } else if (name == "shakespeare-char") {
        config.layers = 6;
        config.heads = 6;
        config.dim = 384;
        config.context = 256;
        config.dropout = 0.2;
    } else {
        throw Error("gpt_preset: unknown preset '" + name + "' (tiny, shakespeare-char)");
    }
    return config;
}

std::vector<std::pair<std::string, std::string>> gpt_config_metadata(const GPTConfig& config) {
    const GPTConfig c = checked(config);
    return {{"gpt.vocab", std::to_string(c.vocab)},
            {"gpt.context", std::to_string(c.context)},
            {"gpt.layers", std::to_string(c.layers)},
            {"gpt.heads", std::to_string(c.heads)},
            {"gpt.kv_heads", std::to_string(c.kv_heads)},
            {"gpt.dim", std::to_string(c.dim)},
            {"gpt.mlp_hidden", std::to_string(c.mlp_hidden)},
            {"gpt.bias", c.bias ? "1" : "0"},
            {"gpt.rms_norm", c.rms_norm ? "1" : "0"},
            {"gpt.tie_weights", c.tie_weights ? "1" : "0"},
            {"gpt.activation", c.activation}};
}

GPTConfig gpt_config_from_metadata(const std::map<std::string, std::string>& metadata) {
    const auto text = [&](const std::string& key) -> const std::string& {
        const auto it = metadata.find(key);
        if (it == metadata.end())
            throw Error("gpt_config_from_metadata: '" + key + "' missing (not a GPT checkpoint?)");
        return it->second;
    };
    const auto count = [&](const std::string& key) -> std::size_t {
        const std::string& value = text(key);
        std::size_t used = 0;
        unsigned long long parsed = 0;
        try {
            parsed = std::stoull(value, &used);
        } catch (const std::exception&) {
            used = 0;
        }
        if (used == 0 || used != value.size()) {
            throw Error("gpt_config_from_metadata: '" + key + "' = '" + value + "' is not a count");
        }
        return static_cast<std::size_t>(parsed);
    };
    GPTConfig config;
    config.vocab = count("gpt.vocab");
    config.context = count("gpt.context");
    config.layers = count("gpt.layers");
    config.heads = count("gpt.heads");
    config.kv_heads = count("gpt.kv_heads");
    config.dim = count("gpt.dim");
    config.mlp_hidden = count("gpt.mlp_hidden");
    config.bias = count("gpt.bias") != 0;
    config.rms_norm = count("gpt.rms_norm") != 0;
    config.tie_weights = count("gpt.tie_weights") != 0;
    config.activation = text("gpt.activation");
    config.dropout = 0;
    return checked(config);
}

}  // namespace tapevm::nn
