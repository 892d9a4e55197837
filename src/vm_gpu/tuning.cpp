#include "tuning.hpp"

#include <algorithm>
#include <cstdlib>
#include <iterator>
#include <utility>
#include <string>

#include "tapevm/error.hpp"

namespace tapevm::gpu::detail {

namespace {

// The whole number in `name`, `fallback` when unset; throws unless it lies in [low, high].
std::size_t whole_number(const char* name, std::size_t fallback, std::size_t low, std::size_t high) {
    const char* text = std::getenv(name);
    if (text == nullptr || *text == '\0') return fallback;
    char* end = nullptr;
    const unsigned long long value = std::strtoull(text, &end, 10);
    if (*end != '\0' || *text == '-' || value < low || value > high) {
        throw Error(std::string(name) + " must be a whole number from " + std::to_string(low) + " to " +
                    std::to_string(high) + ", not '" + text + "'");
    }
    return static_cast<std::size_t>(value);
}

// The choice named in variable `name` among `names` (`fallback` when unset); throws naming
// the variable and every choice otherwise.
template <class Choice, std::size_t count>
Choice choice(const char* name, const std::pair<const char*, Choice> (&names)[count], Choice fallback) {
    const char* text = std::getenv(name);
    if (text == nullptr || *text == '\0') return fallback;
    const std::string value = text;
    const auto* found = std::find_if(std::begin(names), std::end(names),
                                     [&](const auto& entry) { return value == entry.first; });
    if (found != std::end(names)) return found->second;
    std::string listed;
    for (std::size_t i = 0; i < count; ++i)
        listed += std::string(i == 0 ? "" : (i + 1 == count ? " or " : ", ")) + "'" + names[i].first + "'";
    throw Error(std::string(name) + " must be " + listed + ", not '" + value + "'");
}

}  // namespace

Tuning read_tuning() {
    Tuning tuning;
    constexpr std::pair<const char*, Interpreter> interpreters[] = {{"auto", Interpreter::automatic},
                                                                    {"local", Interpreter::local},
                                                                    {"compact", Interpreter::compact},
                                                                    {"slots", Interpreter::slots}};
    tuning.interpreter = choice("TAPEVM_GPU_INTERPRETER", interpreters, Interpreter::automatic);
    constexpr std::pair<const char*, OpSetChoice> op_sets[] = {
        {"auto", OpSetChoice::automatic}, {"tape", OpSetChoice::tape}, {"all", OpSetChoice::all}};
    tuning.op_set = choice("TAPEVM_GPU_OP_SET", op_sets, OpSetChoice::automatic);
    tuning.local_homes = static_cast<std::uint32_t>(whole_number("TAPEVM_GPU_LOCAL_HOMES", 512, 1, 65536));
    tuning.workgroup_size = static_cast<std::uint32_t>(whole_number("TAPEVM_GPU_WORKGROUP", 64, 32, 1024));
    if ((tuning.workgroup_size & (tuning.workgroup_size - 1)) != 0)
        throw Error("TAPEVM_GPU_WORKGROUP must be a power of two, not " +
                    std::to_string(tuning.workgroup_size));
    tuning.chunk_points = whole_number("TAPEVM_GPU_CHUNK_POINTS", 0, 1, std::size_t{1} << 32);
    tuning.pipeline_stats = whole_number("TAPEVM_GPU_PIPELINE_STATS", 0, 0, 1) == 1;
    tuning.compile_staging = whole_number("TAPEVM_GPU_COMPILE_STAGING", 1, 0, 1) == 1;
    tuning.module_identifiers = whole_number("TAPEVM_GPU_MODULE_IDENTIFIERS", 1, 0, 1) == 1;
    tuning.glslang_warm_up = whole_number("TAPEVM_GPU_GLSLANG_WARM_UP", 1, 0, 1) == 1;
    return tuning;
}

const Tuning& tuning() {
    static const Tuning value = read_tuning();
    return value;
}

}  // namespace tapevm::gpu::detail
