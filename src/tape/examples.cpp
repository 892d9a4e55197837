#include "tapevm/examples.hpp"

#include "tapevm/error.hpp"
#include "tapevm/var.hpp"

namespace tapevm::examples {
namespace {

constexpr ExampleInfo list[] = {
    {"ba", "ADBench bundle-adjustment residual, R^15 -> R^2, feature of test.txt as constants"},
    {"ba-param", "ADBench bundle-adjustment residual, R^15 -> R^2, feature as 2 parameters"},
    {"rosenbrock16", "sum_{i<15} 100 (x[i+1] - x[i]^2)^2 + (1 - x[i])^2, R^16 -> R"},
    {"trig16", "sum_{i<16} sin(x[i]) exp(cos(x[i-1 mod 16])) + tanh(x[i]^2) / (1 + x[i]^2), R^16 -> R"},
};

std::vector<double> rosenbrock_point() {
    std::vector<double> x(16);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = 0.5 + 0.03 * static_cast<double>(i);
    return x;
}

}  // namespace

std::span<const ExampleInfo> example_list() { return list; }

Tape example_tape(std::string_view name) {
    Tape tape;
    if (name == "ba") {
        tape = record(std::span<const double>(ba_test_inputs), [](std::span<const Var> x) {
            auto r = ba_residual<Var, double>(x, ba_test_feature.data());
            return std::vector<Var>{r[0], r[1]};
        });
    } else if (name == "ba-param") {
        tape = record(std::span<const double>(ba_test_inputs), std::span<const double>(ba_test_feature),
                      [](std::span<const Var> x, std::span<const Var> feature) {
                          auto r = ba_residual<Var, Var>(x, feature.data());
                          return std::vector<Var>{r[0], r[1]};
                      });
    } else if (name == "rosenbrock16") {
        const auto x = rosenbrock_point();
        tape =
            record(std::span<const double>(x), [](std::span<const Var> v) { return rosenbrock16<Var>(v); });
    } else if (name == "trig16") {
        const auto x = rosenbrock_point();
        tape = record(std::span<const double>(x), [](std::span<const Var> v) { return trig16<Var>(v); });
    } else {
        std::string names;
        for (const auto& example : list)
            names += std::string(names.empty() ? "" : ", ") + std::string(example.name);
        throw Error("unknown example '" + std::string(name) + "' (known: " + names + ")");
    }
    tape.optimize();
    return tape;
}

Tape bratu_tape(std::size_t unknowns) {
    if (unknowns == 0) throw Error("bratu_tape: needs at least one unknown");
    const std::vector<double> at(unknowns, 0.1);
    const std::vector<double> lambda = {1.0};
    return record(std::span<const double>(at), std::span<const double>(lambda),
                  [unknowns](std::span<const Var> x, std::span<const Var> p) {
                      const double n1 = static_cast<double>(unknowns + 1);
                      const double h2 = 1.0 / (n1 * n1);
                      std::vector<Var> r;
                      r.reserve(unknowns);
                      for (std::size_t i = 0; i < unknowns; ++i) {
                          Var ri = -2.0 * x[i] + h2 * p[0] * exp(x[i]);
                          if (i > 0) ri = ri + x[i - 1];
                          if (i + 1 < unknowns) ri = ri + x[i + 1];
                          r.push_back(ri);
                      }
                      return r;
                  });
}

}  // namespace tapevm::examples
