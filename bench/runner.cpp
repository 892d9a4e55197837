#include "runner.hpp"

#include <cmath>
#include <fstream>
#include <string>

namespace tapevm::bench {

std::size_t result_width(const Tape& tape, Mode mode) {
    switch (mode) {
        case Mode::forward: return tape.output_count();
        case Mode::gradient: return tape.input_count();
        case Mode::jacobian: return std::size_t{tape.output_count()} * tape.input_count();
    }
    return 0;
}

std::string Runner::device() const { return cpu_model_name(); }

double Runner::device_seconds() const { return std::nan(""); }

std::string cpu_model_name() {
    static const std::string name = [] {
        std::ifstream cpuinfo("/proc/cpuinfo");
        std::string line;
        while (std::getline(cpuinfo, line)) {
            if (!line.starts_with("model name")) continue;
            const auto colon = line.find(':');
            if (colon == std::string::npos) break;
            const auto start = line.find_first_not_of(" \t", colon + 1);
            if (start != std::string::npos) return line.substr(start);
        }
        return std::string("cpu");
    }();
    return name;
}

Points rounded_to(const Points& points, Precision precision) {
    if (precision == Precision::f64) return points;
    Points rounded = points;
    for (double& value : rounded.inputs) value = static_cast<float>(value);
    for (double& value : rounded.params) value = static_cast<float>(value);
    return rounded;
}

}  // namespace tapevm::bench
