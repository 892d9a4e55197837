// main() of every conformance executable. Exits 77 (Meson's "skipped"), saying why, when the
// backend cannot run on this machine (an instruction set the CPU lacks, no Vulkan device);
// leaves the double cases out, saying so, when the backend has no float64 (the suite then
// checks that double requests throw Unsupported); fails the run on any problem the backend
// reports after the tests (validation-layer messages).
#define DOCTEST_CONFIG_IMPLEMENT
#include <cstdio>
#include <exception>

#include <doctest/doctest.h>

#include "backend.hpp"
#include "tapevm/error.hpp"
#include "tapevm/var.hpp"

namespace {

constexpr int skipped = 77;

}  // namespace

int main(int argc, char** argv) {
    using tapevm::conformance::backend;
    std::string name = "backend";
    try {
        name = backend().name;
        if (backend().unavailable) {
            if (const auto reason = backend().unavailable()) {
                std::printf("SKIPPED: conformance of %s: %s\n", name.c_str(), reason->c_str());
                return skipped;
            }
        }
        // A first evaluator: DeviceUnavailable here means the backend cannot run at all.
        const tapevm::Tape probe =
            tapevm::record(1, [](std::span<const tapevm::Var> x) { return x[0] + 1.0; });
        tapevm::conformance::make_evaluator(probe);
    } catch (const tapevm::DeviceUnavailable& error) {
        std::printf("SKIPPED: conformance of %s: no device: %s\n", name.c_str(), error.what());
        return skipped;
    } catch (const std::exception& error) {
        std::printf("FAILED: conformance of %s: setting up the backend threw: %s\n", name.c_str(),
                    error.what());
        return 1;
    }
    std::printf("conformance of %s against the reference VM\n", name.c_str());

    doctest::Context context(argc, argv);
    if (!backend().has_f64) {
        std::printf(
            "%s has no float64: the double cases are skipped (double requests must throw Unsupported)\n",
            name.c_str());
        context.addFilter("test-case-exclude", "*<double>*");
    }
    const int result = context.run();
    if (context.shouldExit()) return result;
    if (backend().problems_after_run) {
        const auto problems = backend().problems_after_run();
        for (const auto& problem : problems) std::printf("%s: %s\n", name.c_str(), problem.c_str());
        if (!problems.empty()) {
            std::printf("FAILED: %zu problems reported by %s after the tests\n", problems.size(),
                        name.c_str());
            return 1;
        }
    }
    return result;
}
