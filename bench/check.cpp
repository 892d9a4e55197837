#include "check.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "tapevm/reference.hpp"

namespace tapevm::bench {

double tolerance(Precision precision) { return precision == Precision::f64 ? 1e-9 : 1e-2; }

std::vector<std::size_t> sample_points(std::size_t points, std::size_t sample) {
    sample = std::min(sample, points);
    std::vector<std::size_t> chosen(sample);
    for (std::size_t s = 0; s < sample; ++s) chosen[s] = sample == 1 ? 0 : s * (points - 1) / (sample - 1);
    return chosen;
}

double max_error(const std::vector<double>& values, const std::vector<double>& reference) {
    if (values.size() != reference.size()) return std::numeric_limits<double>::infinity();
    double scale = 0;
    for (double r : reference)
        if (std::isfinite(r)) scale = std::max(scale, std::fabs(r));
    double worst = 0;
    for (std::size_t i = 0; i < values.size(); ++i) {
        const double value = values[i];
        const double expected = reference[i];
        if (std::isnan(expected) || std::isnan(value)) {
            if (std::isnan(expected) != std::isnan(value)) return std::numeric_limits<double>::infinity();
            continue;
        }
        if (std::isinf(expected) || std::isinf(value)) {
            if (value != expected) return std::numeric_limits<double>::infinity();
            continue;
        }
        const double floor = std::max(1e-3 * scale, std::numeric_limits<double>::min());
        worst = std::max(worst, std::fabs(value - expected) / std::max(std::fabs(expected), floor));
    }
    return worst;
}

CheckResult check_against_reference(const Workload& workload, Precision precision, const Points& points,
                                    const Runner& runner, std::size_t sample) {
    const Tape& tape = workload.tape;
    const std::size_t n = tape.input_count();
    const std::size_t p = tape.param_count();
    const std::vector<std::size_t> chosen = sample_points(points.count, sample);
    std::vector<double> inputs, params, values;
    for (const std::size_t point : chosen) {
        inputs.insert(inputs.end(), points.inputs.begin() + static_cast<std::ptrdiff_t>(point * n),
                      points.inputs.begin() + static_cast<std::ptrdiff_t>((point + 1) * n));
        if (p > 0)
            params.insert(params.end(), points.params.begin() + static_cast<std::ptrdiff_t>(point * p),
                          points.params.begin() + static_cast<std::ptrdiff_t>((point + 1) * p));
        const std::vector<double> result = runner.result(point);
        values.insert(values.end(), result.begin(), result.end());
    }
    const reference::Vm vm(tape);
    const Batch<double> batch{chosen.size(), inputs, params};
    std::vector<double> expected;
    switch (runner.mode()) {
        case Mode::forward: expected = vm.forward(batch).values; break;
        case Mode::gradient: expected = vm.gradient(batch).values; break;
        case Mode::jacobian: expected = vm.jacobian(batch).values; break;
    }
    return {max_error(values, expected), tolerance(precision), chosen.size()};
}

}  // namespace tapevm::bench
