#include "backend.hpp"

#include <string>

#include "arguments.hpp"
#include "tapevm/cpu.hpp"
#include "tapevm/gpu.hpp"
#include "tapevm/reference.hpp"

namespace tapevm::cli {

Backend parse_backend(std::string_view name) {
    if (name == "reference") return Backend::reference;
    if (name == "cpu") return Backend::cpu;
    if (name == "gpu") return Backend::gpu;
    if (name == "compiled") return Backend::compiled;
    throw UsageError("unknown backend '" + std::string(name) + "' (known: reference, cpu, gpu, compiled)");
}

Precision parse_precision(std::string_view name) {
    if (const auto precision = support::find_precision(name)) return *precision;
    throw UsageError("unknown precision '" + std::string(name) + "' (known: f64, f32)");
}

std::unique_ptr<Evaluator> make_evaluator(Backend backend, Tape tape, const BackendOptions& options) {
    switch (backend) {
        case Backend::reference: return std::make_unique<reference::Vm>(std::move(tape));
        case Backend::cpu: {
            cpu::Options cpu_options;
            cpu_options.threads = options.threads;
            return std::make_unique<cpu::Vm>(std::move(tape), cpu_options);
        }
        case Backend::gpu:
        case Backend::compiled: {
            gpu::Options gpu_options;
            gpu_options.device = options.device;
            if (backend == Backend::compiled) gpu_options.engine = gpu::Engine::compiled;
            return std::make_unique<gpu::Vm>(std::move(tape), gpu_options);
        }
    }
    return nullptr;
}

}  // namespace tapevm::cli
