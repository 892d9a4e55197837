// main() of the nn conformance suite.
//
//   test_nn_conformance [--devices cpu,gpu] [--sweep] [--coverage FILE] [--verbose] [doctest options]
//
// --devices   the devices under test (default cpu); with gpu, the validation layer is on and any
//             message it reports fails the run; no Vulkan device: exit 77 (Meson's "skipped")
//             when gpu is the only device, else gpu is left out with a SKIPPED line.
// --sweep     the full shape table (also TAPEVM_NN_SWEEP=1); default: the CI subset.
// --coverage  writes the kernel x device x dtype table as markdown (docs/nn_coverage.md).
// TAPEVM_NN_TOLERANCE_SCALE=x multiplies every bound (0.001: a check that the comparison bites).
// A summary table (passed/failed/skipped per kernel, device and dtype) is printed at the end.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include "../../keep_driver_loaded.hpp"
#include "harness.hpp"
#include "tapevm/error.hpp"
#include "tapevm/gpu.hpp"

namespace {

std::vector<std::string> split(std::string_view text) {
    std::vector<std::string> parts;
    std::size_t start = 0;
    while (start <= text.size()) {
        const std::size_t comma = text.find(',', start);
        const std::size_t end = comma == std::string_view::npos ? text.size() : comma;
        if (end > start) parts.emplace_back(text.substr(start, end - start));
        start = end + 1;
    }
    return parts;
}

}  // namespace

int main(int argc, char** argv) {
    using namespace tapevm::nn::conformance;
    tapevm::test::keep_vulkan_driver_loaded();
    Settings& config = settings();
    config.devices = {"cpu"};
    std::string coverage;
    std::string command = "test_nn_conformance";
    std::vector<char*> rest = {argv[0]};
    for (int i = 1; i < argc; ++i) {
        const std::string_view arg = argv[i];
        const auto value = [&](std::string_view name) -> std::string {
            if (arg.size() > name.size() && arg.substr(0, name.size() + 1) == std::string(name) + "=")
                return std::string(arg.substr(name.size() + 1));
            if (i + 1 >= argc) {
                std::fprintf(stderr, "%s needs a value\n", std::string(name).c_str());
                std::exit(2);
            }
            return argv[++i];
        };
        if (arg == "--sweep") {
            config.sweep = true;
        } else if (arg == "--verbose") {
            config.verbose = true;
        } else if (arg.starts_with("--devices")) {
            const std::string list = value("--devices");
            config.devices = split(list);
            command += " --devices " + list;
        } else if (arg.starts_with("--coverage")) {
            coverage = value("--coverage");
        } else {
            rest.push_back(argv[i]);
        }
    }
    if (const char* sweep = std::getenv("TAPEVM_NN_SWEEP");
        sweep != nullptr && std::string_view(sweep) == "1")
        config.sweep = true;
    if (config.sweep) command += " --sweep";
    if (const char* scale = std::getenv("TAPEVM_NN_TOLERANCE_SCALE"))
        config.tolerance_scale = std::atof(scale);

    bool gpu = false;
    for (const std::string& device : config.devices) gpu = gpu || device == "gpu";
    if (gpu) {
        setenv("TAPEVM_VULKAN_VALIDATION", "1", 0);
        bool available = false;
        try {
            available = tapevm::nn::Device::gpu_available();
        } catch (const tapevm::Error& error) {
            std::printf("gpu: %s\n", error.what());
        }
        if (!available) {
            if (config.devices.size() == 1) {
                std::printf("SKIPPED: no Vulkan device, so the GPU conformance cases cannot run\n");
                return 77;
            }
            std::printf("SKIPPED: no Vulkan device: the gpu cases are left out\n");
            std::erase(config.devices, std::string("gpu"));
            gpu = false;
        }
    }
    for (const auto& device : devices_under_test())
        std::printf("device under test: %s\n", device.name().c_str());

    doctest::Context context(static_cast<int>(rest.size()), rest.data());
    int result = context.run();
    release_devices();
    if (context.shouldExit()) return result;
    print_summary(std::cout);
    std::cout.flush();
    if (gpu) {
        const auto messages = tapevm::gpu::validation_messages();
        for (const auto& message : messages) std::printf("validation layer: %s\n", message.c_str());
        if (!messages.empty()) {
            std::printf("FAILED: %zu validation messages\n", messages.size());
            result = 1;
        }
    }
    if (!coverage.empty()) {
        std::ofstream file(coverage);
        write_coverage(file, command + " --coverage " + coverage);
        if (!file) {
            std::fprintf(stderr, "cannot write %s\n", coverage.c_str());
            return 2;
        }
        std::printf("wrote the coverage table to %s\n", coverage.c_str());
    }
    return result;
}
