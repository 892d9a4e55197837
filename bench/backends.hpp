// The backends `tapevm bench` knows, in the order "all" runs them, and the factory of each.
// A backend that is not in this build (ADOL-C not found, the CPU VM not yet written, no GPU
// VM) is still listed, with the reason, so that asking for it explains itself.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "runner.hpp"

namespace tapevm::bench {

struct BackendInfo {
    std::string_view name;
    std::string_view description;
    /// Builds a runner; throws tapevm::Unsupported for a problem the backend cannot evaluate
    /// (ADOL-C in float). Null when the backend is not in this build.
    std::unique_ptr<Runner> (*make)(const Problem& problem) = nullptr;
    /// Why the backend is not in this build (when make is null).
    std::string_view unavailable;

    bool available() const { return make != nullptr; }
};

/// Every backend, available or not.
std::span<const BackendInfo> backends();
/// The named backend; throws tapevm::Error naming the known ones for an unknown name.
const BackendInfo& backend(std::string_view name);

/// The baseline every ratio is taken against: native-simd's primal.
inline constexpr std::string_view baseline_backend = "native-simd";

// The factories, one per backend_<name>.cpp.
std::unique_ptr<Runner> make_reference_runner(const Problem& problem);
std::unique_ptr<Runner> make_cpu_runner(const Problem& problem);
std::unique_ptr<Runner> make_gpu_runner(const Problem& problem);
std::unique_ptr<Runner> make_gpu_end_to_end_runner(const Problem& problem);
std::unique_ptr<Runner> make_compiled_runner(const Problem& problem);
std::unique_ptr<Runner> make_compiled_end_to_end_runner(const Problem& problem);
std::unique_ptr<Runner> make_native_scalar_runner(const Problem& problem);
std::unique_ptr<Runner> make_native_simd_runner(const Problem& problem);
std::unique_ptr<Runner> make_adolc_runner(const Problem& problem);

}  // namespace tapevm::bench
