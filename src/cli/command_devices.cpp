// tapevm devices: the Vulkan devices the GPU VM can use, with what it needs to know of them.
#include <cstdio>
#include <string>

#include "arguments.hpp"
#include "commands.hpp"
#include "tapevm/error.hpp"
#include "tapevm/gpu.hpp"

namespace tapevm::cli {
namespace {

constexpr std::string_view help = R"(usage: tapevm devices

Lists the Vulkan devices (index, name, type, memory, float64 support, the limits that size
the GPU VM's chunks, whether subnormal numbers are kept or may flush to zero, driver and API
version) and which one the GPU backend uses: the one
TAPEVM_DEVICE names (an index or a part of the name), else the first discrete GPU, else the
first device. Exits with status 1 when there is no Vulkan loader or device, saying why.
)";

constexpr OptionSpec options[] = {{"--help", false}};

std::string mebibytes(std::uint64_t bytes) {
    char text[32];
    std::snprintf(text, sizeof text, "%.0f MiB", static_cast<double>(bytes) / (1 << 20));
    return text;
}

int run(std::span<const std::string_view> args, std::ostream& out, std::ostream& err) {
    const Arguments arguments = parse_arguments("devices", args, options);
    if (arguments.answered_help(help, out)) return 0;
    arguments.expect_positional(0, 0, "no arguments");
    std::vector<gpu::DeviceInfo> devices;
    try {
        devices = gpu::devices();
    } catch (const DeviceUnavailable& error) {
        err << "tapevm devices: " << error.what() << '\n';
        return 1;
    }
    if (devices.empty()) {
        err << "tapevm devices: the Vulkan loader found no device\n";
        return 1;
    }
    for (const auto& device : devices) {
        out << device.index << ": " << device.name << " (" << device.type << ")\n"
            << "   memory " << mebibytes(device.memory_bytes) << ", float64 "
            << (device.float64 ? "yes" : "no") << ", max storage buffer "
            << mebibytes(device.max_storage_buffer_range) << ", workgroups " << device.max_workgroup_count_x
            << " x " << device.max_workgroup_size_x << ", shared memory "
            << device.max_shared_memory_bytes / 1024 << " KiB, subgroup " << device.subgroup_size << "\n"
            << "   subnormals kept (DenormPreserve): float "
            << (device.subnormals_float ? "yes" : "no, may flush") << ", double "
            << (device.subnormals_double ? "yes"
                : device.float64         ? "no, may flush"
                                         : "-")
            << '\n'
            << "   Vulkan " << device.api_version << ", driver " << device.driver << '\n';
    }
    try {
        const gpu::Vm vm(Tape{});
        out << "the GPU backend uses device " << vm.device().index << " (" << vm.device().name << ")\n";
    } catch (const DeviceUnavailable& error) {
        out << "the GPU backend cannot use any: " << error.what() << '\n';
        return 1;
    }
    return 0;
}

}  // namespace

Command devices_command() {
    return {"devices", "list the Vulkan devices the GPU backend can use (TAPEVM_DEVICE picks one)", help,
            run};
}

}  // namespace tapevm::cli
