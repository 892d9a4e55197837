#include "workloads.hpp"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <iterator>
#include <map>
#include <mutex>
#include <string>

#include "mlp.hpp"
#include "split_mix64.hpp"
#include "tapevm/error.hpp"
#include "tapevm/examples.hpp"
#include "tapevm/var.hpp"

namespace tapevm::bench {

using support::SplitMix64;

namespace {

constexpr std::string_view names[] = {"ba", "rosenbrock16", "trig16", "mlp", "mlp16"};

// The MLP workloads (mlp.hpp): the network's hidden width, the seed its weights are drawn from
// and the seed of its points (uniform in [-1, 1)). mlp's seeds are those it has always had.
struct MlpSpec {
    WorkloadKind kind;
    std::string_view name;
    std::string_view description;
    std::size_t hidden;
    std::uint64_t weight_seed;
    std::uint64_t point_seed;
};
constexpr MlpSpec mlp_specs[] = {
    {WorkloadKind::mlp, names[3], "16 -> 64 -> 64 -> 1 tanh network per point", 64, 7, 64},
    {WorkloadKind::mlp16, names[4], "16 -> 16 -> 16 -> 1 tanh network per point", 16, 1607, 1664},
};

static_assert(std::size(mlp_specs) == 2 && mlp_specs[0].hidden == 64 && mlp_specs[1].hidden == 16,
              "mlp() (mlp.hpp) is compiled for these widths");

const MlpSpec& mlp_spec(WorkloadKind kind) {
    for (const MlpSpec& spec : mlp_specs)
        if (spec.kind == kind) return spec;
    std::abort();  // only the MLP kinds ask
}

// ADBench's test observation, each value (inputs and feature) multiplied by 1 + u with u
// uniform in [-3%, 3%): the same points as `tapevm demo` (seed and order as in
// src/cli/demo_workload.cpp).
constexpr double ba_spread = 0.03;
constexpr std::uint64_t ba_seed = 20240501;

Points ba_points(std::size_t count) {
    using examples::ba_inputs;
    Points points{count, std::vector<double>(count * ba_inputs), std::vector<double>(count * 2)};
    SplitMix64 generator(ba_seed);
    const auto perturbed = [&](double value) {
        return value * (1.0 + ba_spread * (2.0 * generator.uniform() - 1.0));
    };
    for (std::size_t point = 0; point < count; ++point) {
        for (std::size_t i = 0; i < ba_inputs; ++i)
            points.inputs[point * ba_inputs + i] = perturbed(examples::ba_test_inputs[i]);
        for (std::size_t k = 0; k < 2; ++k)
            points.params[point * 2 + k] = perturbed(examples::ba_test_feature[k]);
    }
    return points;
}

Points uniform_points(std::size_t count, std::size_t inputs, double low, double high, std::uint64_t seed) {
    Points points{count, std::vector<double>(count * inputs), {}};
    SplitMix64 generator(seed);
    for (double& value : points.inputs) value = generator.uniform(low, high);
    return points;
}

Tape record_mlp(const MlpModel& model) {
    const std::vector<double> origin(mlp_inputs, 0.0);
    Tape tape = record(std::span<const double>(origin),
                       [&model](std::span<const Var> x) { return mlp<Var>(x, model); });
    tape.optimize();
    return tape;
}

// The weights of a network of width spec.hidden from spec.weight_seed.
MlpModel draw_mlp_model(const MlpSpec& spec) {
    MlpModel m;
    m.hidden = spec.hidden;
    SplitMix64 generator(spec.weight_seed);
    const auto layer = [&](std::vector<double>& weights, std::vector<double>& biases, std::size_t out,
                           std::size_t in) {
        const double scale = 1.0 / std::sqrt(static_cast<double>(in));
        weights.resize(out * in);
        for (double& w : weights) w = generator.uniform(-scale, scale) * std::sqrt(3.0);
        biases.resize(out);
        for (double& b : biases) b = generator.uniform(-0.1, 0.1);
    };
    layer(m.weights1, m.biases1, m.hidden, mlp_inputs);
    layer(m.weights2, m.biases2, m.hidden, m.hidden);
    std::vector<double> bias3;
    layer(m.weights3, bias3, 1, m.hidden);
    m.bias3 = bias3[0];
    return m;
}

Workload make_workload(std::string_view name) {
    if (name == "ba")
        return {WorkloadKind::ba, names[0],
                "ADBench bundle adjustment residual, 2x15 Jacobian per observation",
                examples::example_tape("ba-param"), Mode::jacobian};
    if (name == "rosenbrock16")
        return {WorkloadKind::rosenbrock16, names[1], "Rosenbrock function of 16 variables",
                examples::example_tape("rosenbrock16"), Mode::gradient};
    if (name == "trig16")
        return {WorkloadKind::trig16, names[2], "sums of sin, exp, cos, tanh of 16 variables",
                examples::example_tape("trig16"), Mode::gradient};
    for (const MlpSpec& spec : mlp_specs) {
        if (name != spec.name) continue;
        const MlpModel& model = mlp_model(spec.hidden);
        return {spec.kind, spec.name, spec.description, record_mlp(model), Mode::gradient, &model};
    }
    std::string known;
    for (std::string_view n : names) known += (known.empty() ? "" : ", ") + std::string(n);
    throw Error("unknown workload '" + std::string(name) + "' (known: " + known + ")");
}

}  // namespace

const MlpModel& mlp_model(std::size_t hidden) {
    static const std::vector<MlpModel> models = [] {
        std::vector<MlpModel> drawn;
        for (const MlpSpec& spec : mlp_specs) drawn.push_back(draw_mlp_model(spec));
        return drawn;
    }();
    for (const MlpModel& model : models)
        if (model.hidden == hidden) return model;
    std::string known;
    for (const MlpSpec& spec : mlp_specs) known += (known.empty() ? "" : ", ") + std::to_string(spec.hidden);
    throw Error("no MLP of hidden width " + std::to_string(hidden) + " (known: " + known + ")");
}

Points Workload::make_points(std::size_t points) const {
    switch (kind) {
        case WorkloadKind::ba: return ba_points(points);
        case WorkloadKind::rosenbrock16: return uniform_points(points, 16, -2.0, 2.0, 16);
        case WorkloadKind::trig16: return uniform_points(points, 16, -3.0, 3.0, 1616);
        case WorkloadKind::mlp:
        case WorkloadKind::mlp16:
            return uniform_points(points, mlp_inputs, -1.0, 1.0, mlp_spec(kind).point_seed);
    }
    return {};
}

std::span<const std::string_view> workload_names() { return names; }

const Workload& workload(std::string_view name) {
    static std::mutex mutex;
    static std::map<std::string, Workload, std::less<>> recorded;
    const std::lock_guard lock(mutex);
    auto found = recorded.find(name);
    if (found == recorded.end()) found = recorded.emplace(std::string(name), make_workload(name)).first;
    return found->second;
}

}  // namespace tapevm::bench
