// The evaluation backends and precisions the command line can name, and the one place that
// turns a backend name into an Evaluator.
//
// The command line knows the names "reference", "cpu", "gpu" (the GPU interpreter) and
// "compiled" (the GPU VM with the tape compiler, gpu::Engine::compiled). A backend this build lacks
// is an error (exit 2) rather than a silent fallback to the reference. When a backend lands,
// add it to Backend, to parse_backend() and to make_evaluator().
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "precision.hpp"
#include "tapevm/evaluator.hpp"
#include "tapevm/tape.hpp"

namespace tapevm::cli {

enum class Backend { reference, cpu, gpu, compiled };
using Precision = support::Precision;  // the one enum of the programs (src/support/precision.hpp)

/// Settings a backend may take from the command line.
struct BackendOptions {
    /// CPU worker threads; 0 means all hardware threads.
    unsigned threads = 0;
    /// GPU device (index or name substring); "" = TAPEVM_DEVICE, else the default device.
    std::string device;
};

/// The backend named `name`; throws UsageError for an unknown name and for a backend this
/// build does not contain ("backend 'gpu' is not available in this build").
Backend parse_backend(std::string_view name);

/// The precision named `name` ("f64", "f32"); throws UsageError for any other name.
Precision parse_precision(std::string_view name);

/// An evaluator of `tape` on `backend`.
std::unique_ptr<Evaluator> make_evaluator(Backend backend, Tape tape, const BackendOptions& options = {});

}  // namespace tapevm::cli
