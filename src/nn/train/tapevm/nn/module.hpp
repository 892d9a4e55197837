// Modules: the layers a model is made of, with autograd at module granularity.
//
//   Linear fc(device, 64, 32, {.name_hint = ...});
//   Tensor y = fc.forward(x);          // keeps x for backward
//   Tensor dx = fc.backward(dy);       // dW += dy^T x, db += sum dy; returns dx (fresh)
//
// A Module's `forward` keeps what its `backward` needs (one forward, then one backward: the
// usual training step; several forward/backward pairs in a row accumulate gradients, which is
// how micro-batches sum). `backward` ADDS into the parameters' gradients and returns a new
// tensor dL/dx (undefined for inputs without a gradient, such as token ids).
//
// Parameters and children are registered by name in the constructor, PyTorch style, so a
// parameter's full name is its path: `blocks.0.attn.q.weight`. `parameters()` walks them in
// registration order (the order optimizers, clipping and checkpoints use); a parameter shared
// by two modules (weight tying) appears once, under the name it was first registered with.
//
// Modules are neither copyable nor movable (children point at their parents' members); make
// them in place or hold them in std::unique_ptr.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tapevm/nn/device.hpp"
#include "tapevm/nn/tensor.hpp"

namespace tapevm::nn {

/// A trainable tensor and its gradient (same shape; the gradient's dtype is the value's).
/// `compute`, when defined, is a lower-precision copy the forward and backward passes use
/// (mixed precision: `value` stays the f32 master and `grad` has compute's dtype).
struct Parameter {
    Tensor value;
    Tensor grad;
    Tensor compute;

    /// The tensor kernels read: `compute` when defined, else `value`.
    const Tensor& weight() const { return compute.defined() ? compute : value; }
};

/// A named parameter of a module tree: `name` is the full dotted path.
struct NamedParameter {
    std::string name;
    Parameter* parameter = nullptr;
};

class Module {
public:
    Module() = default;
    Module(const Module&) = delete;
    Module& operator=(const Module&) = delete;
    virtual ~Module() = default;

    /// y = f(x); keeps what backward needs.
    virtual Tensor forward(const Tensor& x) = 0;
    /// Adds dL/dparameters into the gradients and returns dL/dx for the last forward's x.
    virtual Tensor backward(const Tensor& dy) = 0;

    /// Every parameter of this module and its children, depth first in registration order,
    /// each once (shared ones under their first name), named from `prefix`.
    std::vector<NamedParameter> parameters(const std::string& prefix = "");
    /// This module and every descendant with its full dotted name ("" for this one), depth
    /// first in registration order.
    std::vector<std::pair<std::string, Module*>> modules(const std::string& prefix = "");
    /// Sum of the parameters' element counts.
    std::size_t parameter_count();
    /// Sets every gradient to 0.
    void zero_grad();

    /// Training mode (dropout active) or evaluation mode; applies to the children.
    void train(bool on = true);
    void eval() { train(false); }
    bool training() const { return training_; }

protected:
    /// Registers a parameter owned by this module (kept by pointer: it must outlive the module).
    void register_parameter(std::string name, Parameter& parameter);
    /// Registers a child module (kept by pointer: it must outlive this module).
    void register_module(std::string name, Module& child);
    /// Called by train(); modules with a mode of their own override it.
    virtual void on_train(bool) {}

private:
    std::vector<std::pair<std::string, Parameter*>> parameters_;
    std::vector<std::pair<std::string, Module*>> children_;
    bool training_ = true;
};

/// A parameter of `shape` and `dtype` on `device`, its gradient zeroed, its value zeroed
/// (initialisers overwrite it).
Parameter make_parameter(const Device& device, const Shape& shape, DType dtype);

/// Deterministic initialisers (counter-based, independent of thread count and device): the
/// values depend only on (seed, stream, index), so the same seed gives the same model on
/// every device. `stream` tells tensors apart (a hash of the parameter's name works).
void init_normal(const Tensor& x, double mean, double stddev, std::uint64_t seed, std::uint64_t stream);
void init_uniform(const Tensor& x, double low, double high, std::uint64_t seed, std::uint64_t stream);
void init_constant(const Tensor& x, double value);

/// A 64-bit hash of a string (FNV-1a), for initialiser streams.
std::uint64_t name_hash(std::string_view name);

}  // namespace tapevm::nn
