#include "config.hpp"

#include <algorithm>
#include <charconv>
#include <thread>

#include "backends.hpp"
#include "tapevm/error.hpp"
#include "workloads.hpp"

namespace tapevm::bench {
namespace {

constexpr std::size_t most_points = 1ull << 28;
constexpr unsigned most_threads = 1024;
constexpr unsigned most_repeats = 1000;

// "a,b,c" -> {"a", "b", "c"}; an empty item is an error.
std::vector<std::string_view> split(std::string_view option, std::string_view text) {
    std::vector<std::string_view> items;
    for (;;) {
        const auto comma = text.find(',');
        const std::string_view item = text.substr(0, comma);
        if (item.empty()) throw Error(std::string(option) + ": empty item in '" + std::string(text) + "'");
        items.push_back(item);
        if (comma == std::string_view::npos) return items;
        text.remove_prefix(comma + 1);
    }
}

std::size_t number(std::string_view option, std::string_view text, std::size_t minimum, std::size_t maximum) {
    std::size_t value = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc() || end != text.data() + text.size() || value < minimum || value > maximum)
        throw Error(std::string(option) + ": '" + std::string(text) + "' is not a whole number from " +
                    std::to_string(minimum) + " to " + std::to_string(maximum));
    return value;
}

template <class T> void add_unique(std::vector<T>& list, const T& item) {
    if (std::find(list.begin(), list.end(), item) == list.end()) list.push_back(item);
}

Mode parse_mode(std::string_view text) {
    if (text == "forward") return Mode::forward;
    if (text == "gradient") return Mode::gradient;
    if (text == "jacobian") return Mode::jacobian;
    throw Error("--mode: unknown mode '" + std::string(text) +
                "' (known: auto, forward, gradient, jacobian, all)");
}

}  // namespace

std::string_view mode_name(Mode mode) {
    switch (mode) {
        case Mode::forward: return "forward";
        case Mode::gradient: return "gradient";
        case Mode::jacobian: return "jacobian";
    }
    return "?";
}

Config parse_config(const ConfigText& text) {
    Config config;
    for (const std::string_view name : split("--workload", text.workload)) {
        if (name == "all") {
            for (const std::string_view w : workload_names()) add_unique(config.workloads, std::string(w));
            continue;
        }
        const auto& names = workload_names();
        if (std::find(names.begin(), names.end(), name) == names.end())
            workload(name);  // throws, naming them
        add_unique(config.workloads, std::string(name));
    }
    for (const std::string_view name : split("--mode", text.mode)) {
        if (name == "auto") continue;  // an empty list: each workload's own mode
        if (name == "all") {
            for (const Mode mode : {Mode::forward, Mode::gradient, Mode::jacobian})
                add_unique(config.modes, mode);
            continue;
        }
        add_unique(config.modes, parse_mode(name));
    }
    for (const std::string_view name : split("--backend", text.backend)) {
        if (name == "all") {
            for (const BackendInfo& info : backends())
                if (info.available()) add_unique(config.backends, std::string(info.name));
            continue;
        }
        const BackendInfo& info = backend(name);
        if (!info.available())
            throw Error("--backend " + std::string(name) + ": " + std::string(info.unavailable));
        add_unique(config.backends, std::string(name));
    }
    for (const std::string_view name : split("--precision", text.precision)) {
        if (name == "all" || name == "f64") add_unique(config.precisions, Precision::f64);
        if (name == "all" || name == "f32") add_unique(config.precisions, Precision::f32);
        if (name != "all" && name != "f64" && name != "f32")
            throw Error("--precision: unknown precision '" + std::string(name) + "' (known: f32, f64, all)");
    }
    for (const std::string_view item : split("--threads", text.threads)) {
        unsigned threads = static_cast<unsigned>(number("--threads", item, 0, most_threads));
        if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
        add_unique(config.threads, threads);
    }
    for (const std::string_view item : split("--points", text.points))
        add_unique(config.points, number("--points", item, 1, most_points));
    config.repeats = static_cast<unsigned>(number("--repeats", text.repeats, 1, most_repeats));
    return config;
}

}  // namespace tapevm::bench
