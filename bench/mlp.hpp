// The large-tape workloads: a per-point multilayer perceptron 16 -> hidden -> hidden -> 1 with
// tanh activations, its weights fixed constants: `mlp` (hidden 64) and `mlp16` (hidden 16).
// Written once as a template like the examples in tapevm/examples.hpp: with T = Var it records
// a tape (weights become constants on the tape: 15,825 instructions at width 64, 1,665 at 16),
// with T = double or a SIMD batch it is the native baseline.
#pragma once

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <span>
#include <vector>

namespace tapevm::bench {

inline constexpr std::size_t mlp_inputs = 16;

/// The network of width `hidden`: layer1 [hidden][16], layer2 [hidden][hidden], layer3
/// [hidden], biases per layer, in W.
template <class W> struct BasicMlpModel {
    std::size_t hidden = 0;
    std::vector<W> weights1, biases1, weights2, biases2, weights3;
    W bias3 = 0;

    /// The same weights rounded to V (the float baselines compute in float throughout).
    template <class V> BasicMlpModel<V> converted() const {
        const auto to = [](const std::vector<W>& v) { return std::vector<V>(v.begin(), v.end()); };
        const V last_bias = static_cast<V>(bias3);
        return {hidden, to(weights1), to(biases1), to(weights2), to(biases2), to(weights3), last_bias};
    }
};
using MlpModel = BasicMlpModel<double>;

/// The fixed model of width `hidden`: 64 (workload mlp) or 16 (mlp16); another width throws
/// tapevm::Error. Each is drawn once from its own fixed seed (workloads.cpp), scaled by
/// 1/sqrt(fan-in) so the activations stay away from tanh's flat tails. Thread-safe; the
/// model lives until the program ends.
const MlpModel& mlp_model(std::size_t hidden);

template <class T, std::size_t Out, std::size_t In, class W>
void dense_tanh(const T* in, const W* weights, const W* biases, std::array<T, Out>& out) {
    using std::tanh;
    for (std::size_t j = 0; j < Out; ++j) {
        T sum = biases[j];
        for (std::size_t i = 0; i < In; ++i) {
            const T term = in[i] * weights[j * In + i];
            sum = sum + term;
        }
        out[j] = tanh(sum);
    }
}

/// The network with its width a compile-time constant (fixed loops, activations on the
/// stack); model.hidden must be Hidden.
template <std::size_t Hidden, class T, class W>
T mlp_of_width(std::span<const T> x, const BasicMlpModel<W>& model) {
    std::array<T, Hidden> first;
    std::array<T, Hidden> second;
    dense_tanh<T, Hidden, mlp_inputs>(x.data(), model.weights1.data(), model.biases1.data(), first);
    dense_tanh<T, Hidden, Hidden>(first.data(), model.weights2.data(), model.biases2.data(), second);
    T sum = model.bias3;
    for (std::size_t j = 0; j < Hidden; ++j) {
        const T term = second[j] * model.weights3[j];
        sum = sum + term;
    }
    return sum;
}

/// The network at one point of mlp_inputs values. model.hidden is a width mlp_model() makes
/// (64 or 16); any other is a broken invariant and aborts.
template <class T, class W> T mlp(std::span<const T> x, const BasicMlpModel<W>& model) {
    switch (model.hidden) {
        case 64: return mlp_of_width<64>(x, model);
        case 16: return mlp_of_width<16>(x, model);
    }
    std::abort();
}

}  // namespace tapevm::bench
