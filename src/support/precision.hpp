// The precisions the programs name (tapevm eval, inspect, demo; tapevm-bench bench and adbench):
// one enum and one spelling for all of them. Internal: not installed (the library itself is
// templated on float and double).
#pragma once

#include <optional>
#include <string_view>

namespace tapevm::support {

enum class Precision { f64, f32 };

/// "f64" or "f32".
constexpr std::string_view precision_name(Precision precision) {
    return precision == Precision::f32 ? "f32" : "f64";
}

/// The precision spelled `name` ("f64", "f32"); nullopt for any other text.
constexpr std::optional<Precision> find_precision(std::string_view name) {
    if (name == "f64") return Precision::f64;
    if (name == "f32") return Precision::f32;
    return std::nullopt;
}

}  // namespace tapevm::support
