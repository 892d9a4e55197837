// The evaluation backends and precisions the command line can name.
//
// The command line knows the names "reference", "cpu" and "gpu"; only the reference VM is
// in this build, and naming another is an error (exit 2) rather than a silent fallback to
// the reference. When a backend lands, add it to Backend, to parse_backend() and to the
// dispatch in command_eval.cpp.
#pragma once

#include <string_view>

namespace tapevm::cli {

enum class Backend { reference };
enum class Precision { f64, f32 };

/// The backend named `name`; throws UsageError for an unknown name and for a backend this
/// build does not contain ("backend 'gpu' is not available in this build").
Backend parse_backend(std::string_view name);

/// The precision named `name` ("f64", "f32"); throws UsageError for any other name.
Precision parse_precision(std::string_view name);

}  // namespace tapevm::cli
