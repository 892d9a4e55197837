#include "tapevm/nn/layers.hpp"

#include <atomic>
#include <cmath>

#include "counter_random.hpp"
#include "tapevm/error.hpp"
#include "tapevm/var.hpp"

namespace tapevm::nn {
namespace {

// Streams for the constructors' default initialisation: distinct per layer made in this
// process. Models re-initialise by name (init.hpp) for results independent of build order.
std::uint64_t next_stream() {
    static std::atomic<std::uint64_t> counter{0x5eed};
    return counter.fetch_add(1);
}

DType pick(const Device& device, std::optional<DType> dtype) {
    return dtype.value_or(device.accumulate_dtype());
}

// x [..., n] as [rows][n]; throws naming the layer when the last extent is not n.
Tensor as_rows(const char* layer, const Tensor& x, std::size_t n) {
    if (!x.defined()) throw Error(std::string(layer) + ": x: undefined tensor");
    if (x.rank() == 0 || x.dim(-1) != n) {
        throw Error(std::string(layer) + ": x: " + x.describe() + " has last extent " +
                    (x.rank() == 0 ? std::string("none") : std::to_string(x.dim(-1))) + ", expected " +
                    std::to_string(n));
    }
    return x.reshape({x.size() / n, n});
}

Shape with_last(Shape shape, std::size_t n) {
    shape.back() = n;
    return shape;
}

void require_forward(const char* layer, const Tensor& saved) {
    if (!saved.defined()) throw Error(std::string(layer) + ": backward before forward");
}

}  // namespace

// ---- Linear ---------------------------------------------------------------------------------

Linear::Linear(const Device& device, std::size_t in_features, std::size_t out_features, bool bias,
               std::optional<DType> dtype)
    : weight_(&own_weight_), has_bias_(bias), in_(in_features), out_(out_features) {
    const DType type = pick(device, dtype);
    own_weight_ = make_parameter(device, {out_features, in_features}, type);
    const double bound = 1.0 / std::sqrt(static_cast<double>(in_features));
    const std::uint64_t stream = next_stream();
    init_uniform(own_weight_.value, -bound, bound, 0, stream);
    register_parameter("weight", own_weight_);
    if (bias) {
        bias_ = make_parameter(device, {out_features}, type);
        init_uniform(bias_.value, -bound, bound, 1, stream);
        register_parameter("bias", bias_);
    }
}

Linear::Linear(Parameter& shared, bool bias) : weight_(&shared), has_bias_(bias) {
    if (shared.value.rank() != 2)
        throw Error("Linear: shared weight: " + shared.value.describe() + " is not 2-D");
    out_ = shared.value.dim(0);
    in_ = shared.value.dim(1);
    register_parameter("weight", shared);
    if (bias) {
        bias_ = make_parameter(shared.value.device(), {out_}, shared.value.dtype());
        register_parameter("bias", bias_);
    }
}

Tensor Linear::forward(const Tensor& x) {
    x_ = as_rows("Linear", x, in_);
    const Tensor& w = weight_->weight();
    Tensor y = w.device().empty({x_.dim(0), out_}, w.dtype());
    matmul(x_, w, y, {.transpose_b = true, .bias = has_bias_ ? bias_.weight() : Tensor()});
    return y.reshape(with_last(x.shape(), out_));
}

Tensor Linear::backward(const Tensor& dy) {
    require_forward("Linear", x_);
    const Tensor dy2 = as_rows("Linear backward", dy, out_);
    const Tensor& w = weight_->weight();
    Tensor dx = w.device().empty({dy2.dim(0), in_}, x_.dtype());
    matmul(dy2, w, dx);
    matmul(dy2, x_, weight_->grad, {.transpose_a = true, .beta = 1});
    if (has_bias_) reduce_sum(dy2, bias_.grad, 0, true);
    return dx.reshape(with_last(dy.shape(), in_));
}

// ---- Embedding ------------------------------------------------------------------------------

Embedding::Embedding(const Device& device, std::size_t vocab, std::size_t dim, std::optional<DType> dtype) {
    weight_ = make_parameter(device, {vocab, dim}, pick(device, dtype));
    init_normal(weight_.value, 0, 0.02, 0, next_stream());
    register_parameter("weight", weight_);
}

Tensor Embedding::forward(const Tensor& ids) {
    if (!ids.defined()) throw Error("Embedding: ids: undefined tensor");
    ids_ = ids;
    const Tensor& table = weight_.weight();
    Shape shape = ids.shape();
    shape.push_back(table.dim(1));
    Tensor out = table.device().empty(shape, table.dtype());
    embedding(ids, table, out);
    return out;
}

Tensor Embedding::backward(const Tensor& dout) {
    require_forward("Embedding", ids_);
    embedding_backward(ids_, dout, weight_.grad);
    return {};
}

// ---- LayerNorm, RMSNorm ---------------------------------------------------------------------

LayerNorm::LayerNorm(const Device& device, std::size_t features, bool bias, double eps,
                     std::optional<DType> dtype)
    : has_bias_(bias), eps_(eps) {
    weight_ = make_parameter(device, {features}, pick(device, dtype));
    fill(weight_.value, 1);
    register_parameter("weight", weight_);
    if (bias) {
        bias_ = make_parameter(device, {features}, pick(device, dtype));
        register_parameter("bias", bias_);
    }
}

Tensor LayerNorm::forward(const Tensor& x) {
    const Tensor& gamma = weight_.weight();
    x_ = as_rows("LayerNorm", x, gamma.dim(0));
    const Device device = gamma.device();
    Tensor y = device.empty(x_.shape(), x_.dtype());
    mean_ = device.empty({x_.dim(0)}, device.accumulate_dtype());
    rstd_ = device.empty({x_.dim(0)}, device.accumulate_dtype());
    layer_norm(x_, gamma, has_bias_ ? bias_.weight() : Tensor(), y, mean_, rstd_, eps_);
    return y.reshape(x.shape());
}

Tensor LayerNorm::backward(const Tensor& dy) {
    require_forward("LayerNorm", x_);
    Tensor dx = x_.device().zeros(x_.shape(), x_.dtype());
    layer_norm_backward(dy.reshape(x_.shape()), x_, weight_.weight(), mean_, rstd_, dx, weight_.grad,
                        has_bias_ ? bias_.grad : Tensor());
    return dx.reshape(dy.shape());
}

RMSNorm::RMSNorm(const Device& device, std::size_t features, double eps, std::optional<DType> dtype)
    : eps_(eps) {
    weight_ = make_parameter(device, {features}, pick(device, dtype));
    fill(weight_.value, 1);
    register_parameter("weight", weight_);
}

Tensor RMSNorm::forward(const Tensor& x) {
    const Tensor& gamma = weight_.weight();
    x_ = as_rows("RMSNorm", x, gamma.dim(0));
    const Device device = gamma.device();
    Tensor y = device.empty(x_.shape(), x_.dtype());
    rstd_ = device.empty({x_.dim(0)}, device.accumulate_dtype());
    rms_norm(x_, gamma, y, rstd_, eps_);
    return y.reshape(x.shape());
}

Tensor RMSNorm::backward(const Tensor& dy) {
    require_forward("RMSNorm", x_);
    Tensor dx = x_.device().zeros(x_.shape(), x_.dtype());
    rms_norm_backward(dy.reshape(x_.shape()), x_, weight_.weight(), rstd_, dx, weight_.grad);
    return dx.reshape(dy.shape());
}

// ---- activations ----------------------------------------------------------------------------

Activation::Activation(Tape tape, std::vector<double> params)
    : tape_(std::move(tape)), params_(std::move(params)) {
    if (tape_.input_count() != 1 || tape_.output_count() != 1) {
        throw Error("Activation: tape has " + std::to_string(tape_.input_count()) + " inputs and " +
                    std::to_string(tape_.output_count()) + " outputs, expected 1 and 1");
    }
    if (tape_.param_count() != params_.size()) {
        throw ShapeError("Activation", "params", tape_.param_count(), params_.size());
    }
}

Tensor Activation::forward(const Tensor& x) {
    if (!x.defined()) throw Error("Activation: x: undefined tensor");
    x_ = x;
    Tensor y = x.device().empty(x.shape(), x.dtype());
    elementwise(tape_, std::span<const Tensor>(&x_, 1), std::span<const Tensor>(&y, 1), params_);
    return y;
}

Tensor Activation::backward(const Tensor& dy) {
    require_forward("Activation", x_);
    Tensor dx = x_.device().zeros(x_.shape(), x_.dtype());
    const Tensor grad = dy.reshape(x_.shape());
    elementwise_backward(tape_, std::span<const Tensor>(&x_, 1), std::span<const Tensor>(&grad, 1),
                         std::span<const Tensor>(&dx, 1), params_);
    return dx;
}

const Tape& relu_tape() {
    static const Tape tape =
        record(1, [](std::span<const Var> x) { return select(x[0] > 0.0, x[0], Var(0.0)); });
    return tape;
}

const Tape& gelu_tape() {
    static const Tape tape = record(1, [](std::span<const Var> x) {
        const Var& v = x[0];
        const double c = std::sqrt(2.0 / 3.14159265358979323846);
        return 0.5 * v * (1.0 + tanh(c * (v + 0.044715 * v * v * v)));
    });
    return tape;
}

const Tape& silu_tape() {
    static const Tape tape = record(1, [](std::span<const Var> x) { return x[0] / (1.0 + exp(-x[0])); });
    return tape;
}

const Tape& tanh_tape() {
    static const Tape tape = record(1, [](std::span<const Var> x) { return tanh(x[0]); });
    return tape;
}

const Tape& activation_tape(const std::string& name) {
    if (name == "relu") return relu_tape();
    if (name == "gelu") return gelu_tape();
    if (name == "silu") return silu_tape();
    if (name == "tanh") return tanh_tape();
    throw Error("activation_tape: unknown activation '" + name + "' (relu, gelu, silu, tanh)");
}

// ---- Dropout --------------------------------------------------------------------------------

Dropout::Dropout(double p, std::uint64_t seed) : p_(p), seed_(seed) {
    if (!(p >= 0 && p < 1)) throw Error("Dropout: p = " + std::to_string(p) + " is outside [0, 1)");
}

Tensor Dropout::forward(const Tensor& x) {
    if (!training() || p_ == 0) {
        masked_ = false;
        return x;
    }
    // The mask is a pure function of (seed, call, index) on the device (nn::dropout): the
    // backward pass recomputes it, nothing is stored.
    stream_ = counter_++;
    masked_ = true;
    Tensor y = x.device().empty(x.shape(), x.dtype());
    dropout(x, y, p_, seed_, stream_);
    return y;
}

Tensor Dropout::backward(const Tensor& dy) {
    if (!masked_) return dy;
    Tensor dx = dy.device().empty(dy.shape(), dy.dtype());
    dropout(dy, dx, p_, seed_, stream_);
    return dx;
}

// ---- Sequential, MLP ------------------------------------------------------------------------

Module& Sequential::add(std::unique_ptr<Module> module) {
    if (!module) throw Error("Sequential::add: null module");
    modules_.push_back(std::move(module));
    register_module(std::to_string(modules_.size() - 1), *modules_.back());
    return *modules_.back();
}

Tensor Sequential::forward(const Tensor& x) {
    Tensor y = x;
    for (auto& module : modules_) y = module->forward(y);
    return y;
}

Tensor Sequential::backward(const Tensor& dy) {
    Tensor d = dy;
    for (auto it = modules_.rbegin(); it != modules_.rend(); ++it) d = (*it)->backward(d);
    return d;
}

MLP::MLP(const Device& device, std::size_t dim, std::size_t hidden, const Tape& activation, bool bias,
         std::optional<DType> dtype)
    : fc_(device, dim, hidden, bias, dtype), act_(activation), proj_(device, hidden, dim, bias, dtype) {
    register_module("fc", fc_);
    register_module("proj", proj_);
}

Tensor MLP::forward(const Tensor& x) { return proj_.forward(act_.forward(fc_.forward(x))); }

Tensor MLP::backward(const Tensor& dy) { return fc_.backward(act_.backward(proj_.backward(dy))); }

// ---- attention ------------------------------------------------------------------------------

CausalSelfAttention::CausalSelfAttention(const Device& device, std::size_t dim, std::size_t heads,
                                         std::size_t kv_heads, bool bias, std::optional<DType> dtype)
    : device_(device), heads_(heads), kv_heads_(kv_heads), head_dim_(heads == 0 ? 0 : dim / heads),
      q_(device, dim, heads_ * head_dim_, bias, dtype), k_(device, dim, kv_heads_ * head_dim_, bias, dtype),
      v_(device, dim, kv_heads_ * head_dim_, bias, dtype),
      proj_(device, heads_ * head_dim_, dim, bias, dtype) {
    if (heads == 0 || kv_heads == 0 || dim % heads != 0 || heads % kv_heads != 0) {
        throw Error("CausalSelfAttention: dim " + std::to_string(dim) + ", heads " + std::to_string(heads) +
                    ", kv_heads " + std::to_string(kv_heads) +
                    ": heads must divide dim and kv_heads must divide heads");
    }
    register_module("q", q_);
    register_module("k", k_);
    register_module("v", v_);
    register_module("proj", proj_);
}

Tensor CausalSelfAttention::forward(const Tensor& x) {
    if (!x.defined() || x.rank() != 3) {
        throw Error("CausalSelfAttention: x: expected [batch][time][dim], got " +
                    (x.defined() ? x.describe() : std::string("undefined")));
    }
    const std::size_t b = x.dim(0), t = x.dim(1);
    qt_ = q_.forward(x).reshape({b, t, heads_, head_dim_});
    kt_ = k_.forward(x).reshape({b, t, kv_heads_, head_dim_});
    vt_ = v_.forward(x).reshape({b, t, kv_heads_, head_dim_});
    out_ = device_.empty({b, t, heads_, head_dim_}, qt_.dtype());
    lse_ = device_.empty({b, heads_, t}, device_.accumulate_dtype());
    attention(qt_, kt_, vt_, out_, lse_);
    return proj_.forward(out_.reshape({b, t, heads_ * head_dim_}));
}

Tensor CausalSelfAttention::backward(const Tensor& dy) {
    require_forward("CausalSelfAttention", out_);
    const std::size_t b = out_.dim(0), t = out_.dim(1);
    const Tensor dout = proj_.backward(dy).reshape(out_.shape());
    Tensor dq = device_.zeros(qt_.shape(), qt_.dtype());
    Tensor dk = device_.zeros(kt_.shape(), kt_.dtype());
    Tensor dv = device_.zeros(vt_.shape(), vt_.dtype());
    attention_backward(qt_, kt_, vt_, out_, lse_, dout, dq, dk, dv);
    Tensor dx = q_.backward(dq.reshape({b, t, heads_ * head_dim_}));
    add_assign(dx, k_.backward(dk.reshape({b, t, kv_heads_ * head_dim_})));
    add_assign(dx, v_.backward(dv.reshape({b, t, kv_heads_ * head_dim_})));
    return dx;
}

KvCache CausalSelfAttention::make_cache(std::size_t batch, std::size_t positions) {
    const DType dtype = q_.weight().weight().dtype();
    return {device_.zeros({batch, positions, kv_heads_, head_dim_}, dtype),
            device_.zeros({batch, positions, kv_heads_, head_dim_}, dtype)};
}

Tensor CausalSelfAttention::decode(const Tensor& x, KvCache& cache, std::size_t past) {
    if (!x.defined() || x.rank() != 3)
        throw Error("CausalSelfAttention::decode: x: expected [batch][time][dim]");
    const std::size_t b = x.dim(0), t = x.dim(1);
    if (!cache.k.defined() || cache.k.rank() != 4 || cache.k.dim(0) != b) {
        throw Error("CausalSelfAttention::decode: cache: not made for batch " + std::to_string(b));
    }
    const std::size_t positions = cache.k.dim(1);
    if (past + t > positions) {
        throw Error("CausalSelfAttention::decode: past " + std::to_string(past) + " + " + std::to_string(t) +
                    " tokens exceed the cache's " + std::to_string(positions) + " positions");
    }
    const Tensor q = q_.forward(x).reshape({b, t, heads_, head_dim_});
    const Tensor k = k_.forward(x).reshape({b * t, kv_heads_ * head_dim_});
    const Tensor v = v_.forward(x).reshape({b * t, kv_heads_ * head_dim_});
    // Writes rows past .. past + t - 1 of each sequence: the cache's rows are zero until
    // written once, so embedding_backward's scatter-add stores them exactly.
    std::vector<std::int32_t> rows(b * t);
    for (std::size_t i = 0; i < b; ++i) {
        for (std::size_t j = 0; j < t; ++j)
            rows[i * t + j] = static_cast<std::int32_t>(i * positions + past + j);
    }
    const Tensor ids = device_.upload({b * t}, std::span<const std::int32_t>(rows));
    embedding_backward(ids, k, cache.k.reshape({b * positions, kv_heads_ * head_dim_}));
    embedding_backward(ids, v, cache.v.reshape({b * positions, kv_heads_ * head_dim_}));
    Tensor out = device_.empty({b, t, heads_, head_dim_}, q.dtype());
    kv_attention(q, cache.k, cache.v, out, past);
    return proj_.forward(out.reshape({b, t, heads_ * head_dim_}));
}

// ---- TransformerBlock -----------------------------------------------------------------------

namespace {
std::unique_ptr<Module> make_norm(const Device& device, const BlockConfig& config,
                                  std::optional<DType> dtype) {
    if (config.rms_norm) return std::make_unique<RMSNorm>(device, config.dim, 1e-6, dtype);
    return std::make_unique<LayerNorm>(device, config.dim, config.bias, 1e-5, dtype);
}
}  // namespace

TransformerBlock::TransformerBlock(const Device& device, const BlockConfig& config,
                                   std::optional<DType> dtype)
    : ln_1_(make_norm(device, config, dtype)),
      attn_(device, config.dim, config.heads, config.kv_heads, config.bias, dtype),
      attn_drop_(config.dropout, config.seed * 2 + 0), ln_2_(make_norm(device, config, dtype)),
      mlp_(device, config.dim, config.mlp_hidden, activation_tape(config.activation), config.bias, dtype),
      mlp_drop_(config.dropout, config.seed * 2 + 1) {
    register_module("ln_1", *ln_1_);
    register_module("attn", attn_);
    register_module("ln_2", *ln_2_);
    register_module("mlp", mlp_);
    register_module("attn_dropout", attn_drop_);
    register_module("mlp_dropout", mlp_drop_);
}

Tensor TransformerBlock::forward(const Tensor& x) {
    // The attention and MLP outputs are fresh tensors nothing else keeps: the residual sums
    // are added into them in place.
    Tensor h = attn_drop_.forward(attn_.forward(ln_1_->forward(x)));
    add_assign(h, x);
    Tensor y = mlp_drop_.forward(mlp_.forward(ln_2_->forward(h)));
    add_assign(y, h);
    return y;
}

Tensor TransformerBlock::backward(const Tensor& dy) {
    Tensor dh = ln_2_->backward(mlp_.backward(mlp_drop_.backward(dy)));
    add_assign(dh, dy);
    Tensor dx = ln_1_->backward(attn_.backward(attn_drop_.backward(dh)));
    add_assign(dx, dh);
    return dx;
}

Tensor TransformerBlock::decode(const Tensor& x, KvCache& cache, std::size_t past) {
    Tensor h = attn_.decode(ln_1_->forward(x), cache, past);
    add_assign(h, x);
    Tensor y = mlp_.forward(ln_2_->forward(h));
    add_assign(y, h);
    return y;
}

}  // namespace tapevm::nn
