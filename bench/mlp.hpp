// The large-tape workload: a per-point multilayer perceptron 16 -> 64 -> 64 -> 1 with tanh
// activations, its weights fixed constants. Written once as a template like the examples in
// tapevm/examples.hpp: with T = Var it records a tape of about 15,000 instructions (weights
// become constants on the tape), with T = double or a SIMD batch it is the native baseline.
#pragma once

#include <array>
#include <cmath>
#include <cstddef>
#include <span>
#include <vector>

namespace tapevm::bench {

inline constexpr std::size_t mlp_inputs = 16;
inline constexpr std::size_t mlp_hidden = 64;

/// The weights: layer1 [64][16], layer2 [64][64], layer3 [64], biases per layer, in W.
template <class W> struct BasicMlpModel {
    std::vector<W> weights1, biases1, weights2, biases2, weights3;
    W bias3 = 0;

    /// The same weights rounded to V (the float baselines compute in float throughout).
    template <class V> BasicMlpModel<V> converted() const {
        const auto to = [](const std::vector<W>& v) { return std::vector<V>(v.begin(), v.end()); };
        return {to(weights1), to(biases1), to(weights2), to(biases2), to(weights3), static_cast<V>(bias3)};
    }
};
using MlpModel = BasicMlpModel<double>;

/// The fixed model every backend evaluates (drawn once from a fixed seed, scaled by
/// 1/sqrt(fan-in) so the activations stay away from tanh's flat tails).
const MlpModel& mlp_model();

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

template <class T, class W> T mlp(std::span<const T> x, const BasicMlpModel<W>& model) {
    std::array<T, mlp_hidden> first;
    std::array<T, mlp_hidden> second;
    dense_tanh<T, mlp_hidden, mlp_inputs>(x.data(), model.weights1.data(), model.biases1.data(), first);
    dense_tanh<T, mlp_hidden, mlp_hidden>(first.data(), model.weights2.data(), model.biases2.data(), second);
    T sum = model.bias3;
    for (std::size_t j = 0; j < mlp_hidden; ++j) {
        const T term = second[j] * model.weights3[j];
        sum = sum + term;
    }
    return sum;
}

}  // namespace tapevm::bench
