#include "tapevm/nn/module.hpp"

#include <algorithm>
#include <unordered_set>

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

void init_normal(const Tensor& x, double mean, double stddev, std::uint64_t seed, std::uint64_t stream) {
    std::vector<double> values(x.size());
    for (std::size_t i = 0; i < values.size(); ++i) {
        values[i] = mean + stddev * detail::counter_normal(seed, stream, i);
    }
    x.assign(values);
}

void init_uniform(const Tensor& x, double low, double high, std::uint64_t seed, std::uint64_t stream) {
    std::vector<double> values(x.size());
    for (std::size_t i = 0; i < values.size(); ++i) {
        values[i] = low + (high - low) * detail::counter_uniform(seed, stream, i);
    }
    x.assign(values);
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
