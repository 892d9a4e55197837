#include "backend.hpp"

#include <string>

#include "arguments.hpp"
#include "tapevm/reference.hpp"

namespace tapevm::cli {

Backend parse_backend(std::string_view name) {
    if (name == "reference") return Backend::reference;
    if (name == "cpu" || name == "gpu") {
        throw UsageError("backend '" + std::string(name) +
                         "' is not available in this build (available: reference)");
    }
    throw UsageError("unknown backend '" + std::string(name) + "' (known: reference, cpu, gpu)");
}

Precision parse_precision(std::string_view name) {
    if (name == "f64") return Precision::f64;
    if (name == "f32") return Precision::f32;
    throw UsageError("unknown precision '" + std::string(name) + "' (known: f64, f32)");
}

std::unique_ptr<Evaluator> make_evaluator(Backend backend, Tape tape, const BackendOptions& /*options*/) {
    switch (backend) {
        case Backend::reference: return std::make_unique<reference::Vm>(std::move(tape));
    }
    return nullptr;
}

}  // namespace tapevm::cli
