// Subnormal numbers: which DenormPreserve widths the kernels request for a device's float
// controls, the SPIR-V patch that requests them (checked by spirv-val when it is installed),
// and what the device then computes on subnormal inputs.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "float_controls.hpp"
#include "gpu_support.hpp"
#include "kernels.hpp"

namespace tapevm::test {
namespace {

using gpu::detail::denorm_preserve_widths;
using gpu::detail::FloatControls;
using gpu::detail::Kernel;
using gpu::detail::with_denorm_preserve;
using gpu::detail::with_inf_nan_preserve;
using Widths = std::vector<std::uint32_t>;
using Independence = FloatControls::Independence;

FloatControls controls(Independence independence, bool p16, bool p32, bool p64) {
    FloatControls c;
    c.denorm_independence = independence;
    c.preserve16 = p16;
    c.preserve32 = p32;
    c.preserve64 = p64;
    return c;
}

TEST_CASE("DenormPreserve widths follow the device's float controls and independence rules") {
    // Every width independent: what the kernel computes in and the device preserves.
    CHECK(denorm_preserve_widths(controls(Independence::all, false, true, true), false) == Widths{32});
    CHECK(denorm_preserve_widths(controls(Independence::all, false, true, true), true) == Widths{32, 64});
    CHECK(denorm_preserve_widths(controls(Independence::all, false, false, true), true) == Widths{64});
    CHECK(denorm_preserve_widths(controls(Independence::all, false, false, false), true).empty());
    // lavapipe (Mesa 22.3): independence ALL, nothing preserved.
    CHECK(denorm_preserve_widths(controls(Independence::all, false, false, false), false).empty());
    // 32 bits alone; 16 and 64 only together.
    CHECK(denorm_preserve_widths(controls(Independence::only_32_bit, true, true, true), false) == Widths{32});
    CHECK(denorm_preserve_widths(controls(Independence::only_32_bit, true, true, true), true) ==
          Widths{16, 32, 64});
    CHECK(denorm_preserve_widths(controls(Independence::only_32_bit, false, true, true), true) == Widths{32});
    CHECK(denorm_preserve_widths(controls(Independence::only_32_bit, true, false, true), true) ==
          Widths{16, 64});
    // One mode for all widths: all three or none.
    CHECK(denorm_preserve_widths(controls(Independence::none, true, true, true), false) ==
          Widths{16, 32, 64});
    CHECK(denorm_preserve_widths(controls(Independence::none, false, true, true), false).empty());
    CHECK(denorm_preserve_widths(controls(Independence::none, true, true, false), true).empty());
}

// The instructions of a module with `opcode`, each as its words.
std::vector<std::vector<std::uint32_t>> instructions(const std::vector<std::uint32_t>& spirv,
                                                     std::uint32_t opcode) {
    std::vector<std::vector<std::uint32_t>> found;
    for (std::size_t at = 5; at < spirv.size();) {
        const std::uint32_t words = spirv[at] >> 16;
        if (words == 0 || at + words > spirv.size()) {
            FAIL_CHECK("malformed SPIR-V at word " << at);
            break;
        }
        if ((spirv[at] & 0xffff) == opcode)
            found.emplace_back(spirv.begin() + at, spirv.begin() + at + words);
        at += words;
    }
    return found;
}

// Every kernel of the interpreter (kernels.hpp), the compact and local builds included.
std::vector<Kernel> all_kernels() {
    std::vector<Kernel> kernels;
    for (std::size_t k = 0; k < gpu::detail::kernel_count; ++k) kernels.push_back(static_cast<Kernel>(k));
    return kernels;
}

constexpr std::uint32_t op_extension = 10, op_entry_point = 15, op_execution_mode = 16, op_capability = 17;

TEST_CASE("the DenormPreserve patch adds the capability and one execution mode per width") {
    for (const Kernel kernel : all_kernels()) {
        for (const bool double_precision : {false, true}) {
            CAPTURE(gpu::detail::kernel_name(kernel));
            CAPTURE(double_precision);
            const auto code = gpu::detail::embedded_spirv(kernel, double_precision);
            const std::vector<std::uint32_t> original(code.begin(), code.end());
            CHECK(with_denorm_preserve(code, {}) == original);
            const auto patched = with_denorm_preserve(code, {32, 64});
            const std::uint32_t entry = instructions(patched, op_entry_point).at(0).at(2);
            const auto modes = instructions(patched, op_execution_mode);
            CHECK(modes.size() == instructions(original, op_execution_mode).size() + 2);
            CHECK(std::count(modes.begin(), modes.end(),
                             std::vector<std::uint32_t>{4 << 16 | 16, entry, 4459, 32}) == 1);
            CHECK(std::count(modes.begin(), modes.end(),
                             std::vector<std::uint32_t>{4 << 16 | 16, entry, 4459, 64}) == 1);
            const auto capabilities = instructions(patched, op_capability);
            CHECK(std::count(capabilities.begin(), capabilities.end(),
                             std::vector<std::uint32_t>{2 << 16 | 17, 4464}) == 1);
            CHECK(patched.size() == original.size() + 2 + 2 * 4);       // SPIR-V 1.5: no extension needed
            CHECK(with_denorm_preserve(patched, {32, 64}) == patched);  // idempotent
        }
    }
}

TEST_CASE("the SignedZeroInfNanPreserve patch, on top of DenormPreserve's, adds its capability and modes") {
    for (const bool double_precision : {false, true}) {
        CAPTURE(double_precision);
        const auto code = gpu::detail::embedded_spirv(Kernel::reverse_compact, double_precision);
        const auto denorm = with_denorm_preserve(code, {32, 64});
        CHECK(with_inf_nan_preserve(denorm, {}) == denorm);
        const auto patched = with_inf_nan_preserve(denorm, {32, 64});
        const std::uint32_t entry = instructions(patched, op_entry_point).at(0).at(2);
        const auto modes = instructions(patched, op_execution_mode);
        for (const std::uint32_t width : {32u, 64u}) {
            CHECK(std::count(modes.begin(), modes.end(),
                             std::vector<std::uint32_t>{4 << 16 | 16, entry, 4461, width}) == 1);
            CHECK(std::count(modes.begin(), modes.end(),
                             std::vector<std::uint32_t>{4 << 16 | 16, entry, 4459, width}) == 1);
        }
        const auto capabilities = instructions(patched, op_capability);
        CHECK(std::count(capabilities.begin(), capabilities.end(),
                         std::vector<std::uint32_t>{2 << 16 | 17, 4466}) == 1);
        CHECK(patched.size() == denorm.size() + 2 + 2 * 4);
        CHECK(with_inf_nan_preserve(patched, {32, 64}) == patched);  // idempotent
    }
    gpu::detail::FloatControls controls;
    CHECK(gpu::detail::inf_nan_preserve_widths(controls, true).empty());
    controls.inf_nan32 = controls.inf_nan64 = true;
    CHECK(gpu::detail::inf_nan_preserve_widths(controls, false) == Widths{32});
    CHECK(gpu::detail::inf_nan_preserve_widths(controls, true) == Widths{32, 64});
}

TEST_CASE("before SPIR-V 1.4 the patch also declares SPV_KHR_float_controls") {
    const auto code = gpu::detail::embedded_spirv(Kernel::forward, false);
    std::vector<std::uint32_t> old(code.begin(), code.end());
    old[1] = 0x00010300;
    const auto patched = with_denorm_preserve(old, {32});
    const auto extensions = instructions(patched, op_extension);
    REQUIRE(!extensions.empty());
    const auto& last = extensions.back();
    CHECK(std::string(reinterpret_cast<const char*>(last.data() + 1)) == "SPV_KHR_float_controls");
    CHECK(with_denorm_preserve(patched, {32}) == patched);
    CHECK_THROWS_AS(with_denorm_preserve(std::vector<std::uint32_t>{1, 2, 3}, {32}), std::invalid_argument);
}

#ifdef TAPEVM_SPIRV_VAL
// spirv-val's verdict on `spirv` ("" when valid, else its message).
std::string spirv_val(const std::vector<std::uint32_t>& spirv, const std::string& name) {
    const auto dir = std::filesystem::temp_directory_path() / ("tapevm-spirv-" + std::to_string(getpid()));
    std::filesystem::create_directories(dir);
    const auto file = dir / (name + ".spv");
    const auto log = dir / (name + ".log");
    std::ofstream(file, std::ios::binary)
        .write(reinterpret_cast<const char*>(spirv.data()), static_cast<std::streamsize>(spirv.size() * 4));
    const std::string command = std::string(TAPEVM_SPIRV_VAL) + " --target-env vulkan1.2 " + file.string() +
                                " > " + log.string() + " 2>&1";
    const int status = std::system(command.c_str());
    std::stringstream text;
    text << std::ifstream(log).rdbuf();
    std::filesystem::remove_all(dir);
    return status == 0 ? "" : "spirv-val failed: " + text.str();
}

TEST_CASE("spirv-val accepts every kernel with every DenormPreserve request") {
    // The path is the build machine's; a machine that runs the binaries elsewhere (the lent
    // GPU machine) may not have it.
    if (!std::filesystem::exists(TAPEVM_SPIRV_VAL)) {
        MESSAGE("spirv-val (" << TAPEVM_SPIRV_VAL
                              << ") is not on this machine: the kernels are not validated here");
        return;
    }
    for (const Kernel kernel : all_kernels()) {
        for (const bool double_precision : {false, true}) {
            for (const Widths& widths : {Widths{}, Widths{32}, Widths{32, 64}, Widths{16, 32, 64}}) {
                const std::string name = std::string(gpu::detail::kernel_name(kernel)) +
                                         (double_precision ? "_f64_" : "_f32_") +
                                         std::to_string(widths.size());
                CAPTURE(name);
                const auto code = gpu::detail::embedded_spirv(kernel, double_precision);
                CHECK(spirv_val(with_denorm_preserve(code, widths), name) == "");
                CHECK(spirv_val(with_inf_nan_preserve(with_denorm_preserve(code, widths), widths), name) ==
                      "");
            }
        }
    }
}
#endif

// y0 = 2x (subnormal for a subnormal x), y1 = sqrt(x) (normal), y2 = x - x * 0.5.
Tape subnormal_tape() {
    TapeParts parts;
    parts.inputs = 1;
    parts.constants = {2.0, 0.5};
    parts.instructions = {{Op::Input, 0, 0, 0}, {Op::Const, 0, 0, 0}, {Op::Const, 1, 0, 0},
                          {Op::Mul, 0, 1, 0},   {Op::Sqrt, 0, 0, 0},  {Op::Mul, 0, 2, 0},
                          {Op::Sub, 0, 5, 0}};
    parts.outputs = {3, 4, 6};
    return Tape(parts);
}

// Every value close to the reference VM's; where the device may flush, a point with a
// subnormal input may also give zeros (its input flushed, or its subnormal results).
template <class Real> void check_subnormals(const gpu::Vm& vm, bool preserved) {
    const Real tiny = std::numeric_limits<Real>::denorm_min() * Real(3);
    const std::vector<Real> inputs = {tiny, -tiny, Real(1)};
    const Batch<Real> batch{inputs.size(), inputs, {}};
    const auto got = vm.forward(batch);
    const auto expected = reference::Vm(vm.tape()).forward(batch);
    REQUIRE(got.values.size() == expected.values.size());
    const std::size_t m = vm.tape().output_count();
    for (std::size_t k = 0; k < got.values.size(); ++k) {
        const Real g = got.values[k];
        const Real e = expected.values[k];
        CAPTURE(k);
        CAPTURE(g);
        CAPTURE(e);
        const bool close = (std::isnan(g) && std::isnan(e)) || std::fabs(g - e) <= Real(1e-6) * std::fabs(e);
        // Flushed: zero, or a subnormal that the device treats as zero (NVIDIA's sqrt of a
        // subnormal returns its flushed-to-zero argument's bits unchanged).
        const bool flushed = !preserved && inputs[k / m] == tiny * (inputs[k / m] < 0 ? -1 : 1) &&
                             std::fabs(g) < std::numeric_limits<Real>::min();
        CHECK((close || flushed));
    }
}

TEST_CASE("subnormal inputs and results: kept where the device preserves them") {
    const gpu::Vm vm(subnormal_tape(), test_options());
    const auto& device = vm.device();
    const auto kept = [](bool yes) { return std::string(yes ? "yes" : "no (may flush)"); };
    MESSAGE(device.name << ": subnormals kept in float: " << kept(device.subnormals_float)
                        << ", in double: " << kept(device.subnormals_double));
    check_subnormals<float>(vm, device.subnormals_float);
    if (device.float64) check_subnormals<double>(vm, device.subnormals_double);
    if (!device.float64) CHECK(!device.subnormals_double);
    check_validation_clean();
}

}  // namespace
}  // namespace tapevm::test
