// The layers: Linear, Embedding, LayerNorm, RMSNorm, activations (elementwise tapes),
// Dropout, Sequential, MLP, CausalSelfAttention (grouped-query), TransformerBlock.
// module.hpp has the forward/backward contract and the parameter naming.
//
// Every layer keeps its parameters in the dtype it was made with (`dtype`, default the
// device's accumulate dtype: f64 on the reference device, f32 elsewhere); inputs must share
// it. Inputs are [..., features]: all leading axes are rows.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tapevm/nn/kernels.hpp"
#include "tapevm/nn/module.hpp"
#include "tapevm/tape.hpp"

namespace tapevm::nn {

/// y = x W^T + b, W [out][in] (PyTorch's layout), b [out]. Parameters `weight`, `bias`.
/// Initialised to normal(0, 0.02) and zero bias (GPT-2); re-initialise with init_* at will.
class Linear : public Module {
public:
    Linear(const Device& device, std::size_t in_features, std::size_t out_features, bool bias = true,
           std::optional<DType> dtype = {});
    /// A Linear whose weight is `shared` (weight tying: [out][in]); registers only its bias.
    Linear(Parameter& shared, bool bias = false);

    Tensor forward(const Tensor& x) override;
    Tensor backward(const Tensor& dy) override;

    Parameter& weight() { return *weight_; }
    /// Null without a bias.
    Parameter* bias() { return has_bias_ ? &bias_ : nullptr; }
    std::size_t in_features() const { return in_; }
    std::size_t out_features() const { return out_; }

private:
    Parameter own_weight_;
    Parameter bias_;
    Parameter* weight_;
    bool has_bias_;
    std::size_t in_ = 0;
    std::size_t out_ = 0;
    Tensor x_;
};

/// out = table[ids]: ids i32 of any shape, table [vocab][dim] (parameter `weight`,
/// normal(0, 0.02)); out [..ids.., dim]. backward adds into the table's gradient and returns
/// an undefined tensor (ids have no gradient).
class Embedding : public Module {
public:
    Embedding(const Device& device, std::size_t vocab, std::size_t dim, std::optional<DType> dtype = {});
    Tensor forward(const Tensor& ids) override;
    Tensor backward(const Tensor& dout) override;
    Parameter& weight() { return weight_; }

private:
    Parameter weight_;
    Tensor ids_;
};

/// Layer normalisation over the last axis; parameters `weight` (ones) and `bias` (zeros,
/// optional).
class LayerNorm : public Module {
public:
    LayerNorm(const Device& device, std::size_t features, bool bias = true, double eps = 1e-5,
              std::optional<DType> dtype = {});
    Tensor forward(const Tensor& x) override;
    Tensor backward(const Tensor& dy) override;

private:
    Parameter weight_;
    Parameter bias_;
    bool has_bias_;
    double eps_;
    Tensor x_, mean_, rstd_;
};

/// RMS normalisation over the last axis; parameter `weight` (ones).
class RMSNorm : public Module {
public:
    RMSNorm(const Device& device, std::size_t features, double eps = 1e-6, std::optional<DType> dtype = {});
    Tensor forward(const Tensor& x) override;
    Tensor backward(const Tensor& dy) override;

private:
    Parameter weight_;
    double eps_;
    Tensor x_, rstd_;
};

/// An activation: a tape of one input and one output run elementwise (any function recorded
/// with tapevm::record: "bring your own activation"); its backward is the tape's vjp. The
/// tape's parameters, if any, are `params`.
class Activation : public Module {
public:
    explicit Activation(Tape tape, std::vector<double> params = {});
    Tensor forward(const Tensor& x) override;
    Tensor backward(const Tensor& dy) override;
    const Tape& tape() const { return tape_; }

private:
    Tape tape_;
    std::vector<double> params_;
    Tensor x_;
};

/// The activation tapes: max(x, 0); GELU in its tanh form (GPT-2's); x sigmoid(x); tanh x.
const Tape& relu_tape();
const Tape& gelu_tape();
const Tape& silu_tape();
const Tape& tanh_tape();
/// "relu", "gelu", "silu", "tanh" -> its tape (tapevm::Error for another name).
const Tape& activation_tape(const std::string& name);

/// Inverted dropout: in training mode each element is kept with probability 1 - p and scaled
/// by 1 / (1 - p); in evaluation mode (or p = 0) the identity. The mask of call n is a pure
/// function of (seed, n, element index): deterministic, and resumable through counter().
class Dropout : public Module {
public:
    Dropout(double p, std::uint64_t seed);
    Tensor forward(const Tensor& x) override;
    Tensor backward(const Tensor& dy) override;
    /// Forward calls made in training mode so far (the RNG state).
    std::uint64_t counter() const { return counter_; }
    void set_counter(std::uint64_t counter) { counter_ = counter; }
    std::uint64_t seed() const { return seed_; }
    void set_seed(std::uint64_t seed) { seed_ = seed; }
    double p() const { return p_; }

private:
    double p_;
    std::uint64_t seed_;
    std::uint64_t counter_ = 0;
    std::uint64_t stream_ = 0;  // the last masked forward's RNG stream (its counter)
    bool masked_ = false;       // false when the last forward was the identity
};

/// Modules applied in order, named "0", "1", ...
class Sequential : public Module {
public:
    Sequential() = default;
    /// Appends `module` (owned) and returns it.
    Module& add(std::unique_ptr<Module> module);
    template <class M, class... Args> M& emplace(Args&&... args) {
        auto module = std::make_unique<M>(std::forward<Args>(args)...);
        M& ref = *module;
        add(std::move(module));
        return ref;
    }
    Tensor forward(const Tensor& x) override;
    Tensor backward(const Tensor& dy) override;
    std::size_t size() const { return modules_.size(); }
    Module& operator[](std::size_t i) { return *modules_[i]; }

private:
    std::vector<std::unique_ptr<Module>> modules_;
};

/// fc (d -> hidden), activation, proj (hidden -> d): children `fc`, `proj`.
class MLP : public Module {
public:
    MLP(const Device& device, std::size_t dim, std::size_t hidden, const Tape& activation, bool bias = true,
        std::optional<DType> dtype = {});
    Tensor forward(const Tensor& x) override;
    Tensor backward(const Tensor& dy) override;
    Linear& fc() { return fc_; }
    Linear& proj() { return proj_; }

private:
    Linear fc_;
    Activation act_;
    Linear proj_;
};

/// One layer's keys and values for decoding: [batch][max_positions][kv_heads][head_dim].
struct KvCache {
    Tensor k;
    Tensor v;
};

/// Causal self-attention with grouped-query heads: separate projections `q` (d -> heads *
/// head_dim), `k` and `v` (d -> kv_heads * head_dim), the attention kernel, and `proj`
/// (heads * head_dim -> d). x [B][T][d].
class CausalSelfAttention : public Module {
public:
    CausalSelfAttention(const Device& device, std::size_t dim, std::size_t heads, std::size_t kv_heads,
                        bool bias = true, std::optional<DType> dtype = {});
    Tensor forward(const Tensor& x) override;
    Tensor backward(const Tensor& dy) override;
    /// Forward only over a key/value cache: x [B][Tq][d] at positions past .. past + Tq - 1;
    /// writes this call's keys and values into `cache` (zeroed before the first call).
    Tensor decode(const Tensor& x, KvCache& cache, std::size_t past);
    /// A zeroed cache for `batch` sequences of up to `positions` tokens.
    KvCache make_cache(std::size_t batch, std::size_t positions);

    Linear& q() { return q_; }
    Linear& k() { return k_; }
    Linear& v() { return v_; }
    Linear& proj() { return proj_; }

private:
    Device device_;
    std::size_t heads_, kv_heads_, head_dim_;
    Linear q_, k_, v_, proj_;
    Tensor qt_, kt_, vt_, out_, lse_;
};

struct BlockConfig {
    std::size_t dim = 64;
    std::size_t heads = 4;
    std::size_t kv_heads = 4;
    std::size_t mlp_hidden = 256;
    bool bias = true;
    bool rms_norm = false;  // RMSNorm instead of LayerNorm
    std::string activation = "gelu";
    double dropout = 0;      // after attention and after the MLP (residual dropout)
    std::uint64_t seed = 0;  // dropout's RNG
};

/// Pre-norm transformer block: h = x + attn(ln_1(x)); y = h + mlp(ln_2(h)). Children `ln_1`,
/// `attn`, `ln_2`, `mlp`.
class TransformerBlock : public Module {
public:
    TransformerBlock(const Device& device, const BlockConfig& config, std::optional<DType> dtype = {});
    Tensor forward(const Tensor& x) override;
    Tensor backward(const Tensor& dy) override;
    Tensor decode(const Tensor& x, KvCache& cache, std::size_t past);
    CausalSelfAttention& attn() { return attn_; }
    MLP& mlp() { return mlp_; }
    Dropout& attn_dropout() { return attn_drop_; }
    Dropout& mlp_dropout() { return mlp_drop_; }

private:
    std::unique_ptr<Module> ln_1_;
    CausalSelfAttention attn_;
    Dropout attn_drop_;
    std::unique_ptr<Module> ln_2_;
    MLP mlp_;
    Dropout mlp_drop_;
};

}  // namespace tapevm::nn
