#include "tapevm/nn/module.hpp"

#include <algorithm>
#include <thread>
#include <unordered_set>
#include <vector>

#include "counter_random.hpp"
#include "tapevm/error.hpp"
#include "tapevm/nn/kernels.hpp"

namespace tapevm::nn {
void Module::register_parameter(std::string name, Parameter& parameter) {
    for (const auto& [existing, p] : parameters_) {
        if (existing == name) throw Error("Module::register_parameter: duplicate name '" + name + "'");
    }
    parameters_.emplace_back(std::move(name), &parameter);
}

void Module::register_module(std::string name, Module& child) {
    for (const auto& [existing, c] : children_) {
        if (existing == name) throw Error("Module::register_module: duplicate name '" + name + "'");
    }
    children_.emplace_back(std::move(name), &child);
}

std::vector<NamedParameter> Module::parameters(const std::string& prefix) {
    std::vector<NamedParameter> out;
    std::unordered_set<const Parameter*> seen;
    // Depth first, a module's own parameters before its children's.
    struct Walker {
        std::vector<NamedParameter>& out;
        std::unordered_set<const Parameter*>& seen;
        void walk(Module& module, const std::string& path) {
            for (const auto& [name, parameter] : module.parameters_) {
                if (seen.insert(parameter).second) out.push_back({path + name, parameter});
            }
            for (const auto& [name, child] : module.children_) walk(*child, path + name + ".");
        }
    };
    Walker{out, seen}.walk(*this, prefix.empty() ? prefix : prefix + ".");
    return out;
}

std::vector<std::pair<std::string, Module*>> Module::modules(const std::string& prefix) {
    std::vector<std::pair<std::string, Module*>> out{{prefix, this}};
    for (const auto& [name, child] : children_) {
        for (auto& entry : child->modules(prefix.empty() ? name : prefix + "." + name)) out.push_back(entry);
    }
    return out;
}

std::size_t Module::parameter_count() {
    std::size_t count = 0;
    for (const NamedParameter& p : parameters()) count += p.parameter->value.size();
    return count;
}

void Module::zero_grad() {
    for (const NamedParameter& p : parameters()) zero(p.parameter->grad);
}

void Module::train(bool on) {
    training_ = on;
    on_train(on);
    for (const auto& [name, child] : children_) child->train(on);
}

Parameter make_parameter(const Device& device, const Shape& shape, DType dtype) {
    Parameter p;
    p.value = device.zeros(shape, dtype);
    p.grad = device.zeros(shape, dtype);
    return p;
}

namespace {

/// values[i] = value(i) for every i, on all hardware threads for large tensors (each value is a
/// function of its index alone: the same values whatever the thread count).
template <class Value> std::vector<double> counter_values(std::size_t n, Value value) {
    std::vector<double> values(n);
    const auto fill_range = [&](std::size_t begin, std::size_t end) {
        for (std::size_t i = begin; i < end; ++i) values[i] = value(i);
    };
    constexpr std::size_t per_thread = std::size_t{1} << 18;
    const std::size_t threads = std::min<std::size_t>(std::max(1u, std::thread::hardware_concurrency()),
                                                      (n + per_thread - 1) / per_thread);
    if (threads <= 1) {
        fill_range(0, n);
        return values;
    }
    std::vector<std::thread> workers;
    const std::size_t step = (n + threads - 1) / threads;
    for (std::size_t t = 1; t < threads; ++t)
        workers.emplace_back(fill_range, std::min(n, t * step), std::min(n, (t + 1) * step));
    fill_range(0, std::min(n, step));
    for (std::thread& worker : workers) worker.join();
    return values;
}

}  // namespace

void init_normal(const Tensor& x, double mean, double stddev, std::uint64_t seed, std::uint64_t stream) {
    x.assign(counter_values(
        x.size(), [&](std::size_t i) { return mean + stddev * detail::counter_normal(seed, stream, i); }));
}

void init_uniform(const Tensor& x, double low, double high, std::uint64_t seed, std::uint64_t stream) {
    x.assign(counter_values(x.size(), [&](std::size_t i) {
        return low + (high - low) * detail::counter_uniform(seed, stream, i);
    }));
}

void init_constant(const Tensor& x, double value) { fill(x, value); }

std::uint64_t name_hash(std::string_view name) {
    std::uint64_t hash = 0xcbf29ce484222325ULL;
    for (const char c : name) {
        hash ^= static_cast<unsigned char>(c);
        hash *= 0x100000001b3ULL;
    }
    return hash;
}

}  // namespace tapevm::nn
