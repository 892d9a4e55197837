#include "demo_workload.hpp"

#include <algorithm>
#include <array>
#include <cmath>

#include "split_mix64.hpp"
#include "tapevm/examples.hpp"

namespace tapevm::cli {
namespace {

using examples::ba_inputs;

using support::SplitMix64;

std::array<double, 2> native_residual(std::span<const double> inputs, const double* feature) {
    return examples::ba_residual<double, double>(inputs, feature);
}

double relative_error(double value, double expected) {
    return std::fabs(value - expected) / std::fmax(1.0, std::fabs(expected));
}

}  // namespace

BaBatch make_ba_batch(std::size_t points, double spread, std::uint64_t seed) {
    BaBatch batch;
    batch.points = points;
    batch.inputs.resize(points * ba_inputs);
    batch.features.resize(points * 2);
    SplitMix64 generator(seed);
    const auto perturbed = [&](double value) {
        return value * (1.0 + spread * (2.0 * generator.uniform() - 1.0));
    };
    for (std::size_t point = 0; point < points; ++point) {
        for (std::size_t i = 0; i < ba_inputs; ++i) {
            batch.inputs[point * ba_inputs + i] = perturbed(examples::ba_test_inputs[i]);
        }
        for (std::size_t k = 0; k < 2; ++k)
            batch.features[point * 2 + k] = perturbed(examples::ba_test_feature[k]);
    }
    return batch;
}

double max_forward_error(const BaBatch& batch, std::span<const double> outputs) {
    double worst = 0;
    for (std::size_t point = 0; point < batch.points; ++point) {
        const auto inputs = std::span<const double>(batch.inputs).subspan(point * ba_inputs, ba_inputs);
        const auto native = native_residual(inputs, batch.features.data() + point * 2);
        for (std::size_t k = 0; k < 2; ++k) {
            const double error = relative_error(outputs[point * 2 + k], native[k]);
            if (std::isnan(error)) return error;
            worst = std::fmax(worst, error);
        }
    }
    return worst;
}

double max_jacobian_error(const BaBatch& batch, std::span<const double> jacobians, std::size_t sample) {
    sample = std::min(sample, batch.points);
    double worst = 0;
    std::array<double, ba_inputs> x{};
    for (std::size_t s = 0; s < sample; ++s) {
        const std::size_t point = s * batch.points / sample;
        std::copy_n(batch.inputs.begin() + static_cast<std::ptrdiff_t>(point * ba_inputs), ba_inputs,
                    x.begin());
        const double* feature = batch.features.data() + point * 2;
        for (std::size_t i = 0; i < ba_inputs; ++i) {
            // Central difference with a step near the cube root of the double epsilon.
            const double original = x[i];
            const double step = 1e-5 * std::fmax(1.0, std::fabs(original));
            const double above = original + step;
            const double below = original - step;
            x[i] = above;
            const auto up = native_residual(x, feature);
            x[i] = below;
            const auto down = native_residual(x, feature);
            x[i] = original;
            for (std::size_t k = 0; k < 2; ++k) {
                const double difference = (up[k] - down[k]) / (above - below);
                const double error = relative_error(difference, jacobians[(point * 2 + k) * ba_inputs + i]);
                if (std::isnan(error)) return error;
                worst = std::fmax(worst, error);
            }
        }
    }
    return worst;
}

}  // namespace tapevm::cli
