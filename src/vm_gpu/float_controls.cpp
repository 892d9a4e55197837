#include "float_controls.hpp"

#include <algorithm>
#include <stdexcept>
#include <string_view>
#include <utility>

namespace tapevm::gpu::detail {
namespace {

// SPIR-V numbers (SPIR-V specification, unified headers).
constexpr std::uint32_t magic = 0x07230203;
constexpr std::uint32_t header_words = 5;
constexpr std::uint32_t op_extension = 10;
constexpr std::uint32_t op_entry_point = 15;
constexpr std::uint32_t op_execution_mode = 16;
constexpr std::uint32_t op_capability = 17;
constexpr std::uint32_t op_execution_mode_id = 331;
constexpr std::uint32_t capability_denorm_preserve = 4464;
constexpr std::uint32_t capability_inf_nan_preserve = 4466;  // SignedZeroInfNanPreserve
constexpr std::uint32_t mode_denorm_preserve = 4459;
constexpr std::uint32_t mode_inf_nan_preserve = 4461;
constexpr std::uint32_t version_1_4 = 0x00010400;  // float controls are core from SPIR-V 1.4
constexpr std::string_view extension_name = "SPV_KHR_float_controls";

std::uint32_t instruction(std::uint32_t words, std::uint32_t opcode) { return words << 16 | opcode; }

// A literal string as SPIR-V holds it: UTF-8, NUL-terminated, little-endian in words.
std::vector<std::uint32_t> literal_string(std::string_view text) {
    std::vector<std::uint32_t> words(text.size() / 4 + 1, 0);
    for (std::size_t k = 0; k < text.size(); ++k) {
        words[k / 4] |= std::uint32_t{static_cast<unsigned char>(text[k])} << (8 * (k % 4));
    }
    return words;
}

std::string_view string_at(std::span<const std::uint32_t> words) {
    const auto* bytes = reinterpret_cast<const char*>(words.data());
    const std::size_t size = words.size() * 4;
    return std::string_view(bytes, std::find(bytes, bytes + size, '\0') - bytes);
}

}  // namespace

std::vector<std::uint32_t> denorm_preserve_widths(const FloatControls& controls, bool double_precision) {
    using Independence = FloatControls::Independence;
    std::vector<std::uint32_t> widths;
    switch (controls.denorm_independence) {
        case Independence::all:
            if (controls.preserve32) widths.push_back(32);
            if (double_precision && controls.preserve64) widths.push_back(64);
            break;
        case Independence::only_32_bit:
            // 32 on its own; 64 only together with 16 (their modes must be the same).
            if (double_precision && controls.preserve64 && controls.preserve16) widths.push_back(16);
            if (controls.preserve32) widths.push_back(32);
            if (double_precision && controls.preserve64 && controls.preserve16) widths.push_back(64);
            break;
        case Independence::none:
            // One mode for every width: all three or nothing.
            if (controls.preserve16 && controls.preserve32 && controls.preserve64) widths = {16, 32, 64};
            break;
    }
    return widths;
}

bool preserves(const std::vector<std::uint32_t>& widths, std::uint32_t width) {
    return std::find(widths.begin(), widths.end(), width) != widths.end();
}

namespace {

// OpCapability `capability` and OpExecutionMode <entry> `mode` <width> per width (each only
// when not there yet), with the extension where the module predates SPIR-V 1.4.
std::vector<std::uint32_t> with_float_mode(std::span<const std::uint32_t> spirv,
                                           const std::vector<std::uint32_t>& widths, std::uint32_t capability,
                                           std::uint32_t mode) {
    if (spirv.size() < header_words || spirv[0] != magic)
        throw std::invalid_argument("with_denorm_preserve: not a SPIR-V module");
    // Where the new instructions go: after the last capability, extension, execution mode.
    std::size_t capabilities_end = header_words, extensions_end = 0, modes_end = 0, entry_end = 0;
    std::uint32_t entry_point = 0;
    bool has_capability = false, has_extension = false;
    std::vector<std::uint32_t> existing_modes;
    for (std::size_t at = header_words; at < spirv.size();) {
        const std::uint32_t words = spirv[at] >> 16;
        const std::uint32_t opcode = spirv[at] & 0xffff;
        if (words == 0 || at + words > spirv.size())
            throw std::invalid_argument("with_denorm_preserve: a malformed SPIR-V instruction");
        const auto operands = spirv.subspan(at + 1, words - 1);
        const std::size_t end = at + words;
        if (opcode == op_capability) {
            capabilities_end = end;
            has_capability = has_capability || (words >= 2 && operands[0] == capability);
        } else if (opcode == op_extension) {
            extensions_end = end;
            has_extension = has_extension || string_at(operands) == extension_name;
        } else if (opcode == op_entry_point && words >= 3) {
            if (entry_end == 0) entry_point = operands[1];
            entry_end = end;
        } else if (opcode == op_execution_mode || opcode == op_execution_mode_id) {
            modes_end = end;
            if (opcode == op_execution_mode && words >= 4 && operands[0] == entry_point &&
                operands[1] == mode)
                existing_modes.push_back(operands[2]);
        }
        at = end;
    }
    if (entry_end == 0) throw std::invalid_argument("with_denorm_preserve: the module has no entry point");
    std::vector<std::uint32_t> out(spirv.begin(), spirv.end());
    if (widths.empty()) return out;

    // Insertions in increasing position; at one position, in the order listed.
    std::vector<std::pair<std::size_t, std::vector<std::uint32_t>>> insertions;
    if (!has_capability) {
        insertions.push_back({capabilities_end, {instruction(2, op_capability), capability}});
    }
    if (!has_extension && spirv[1] < version_1_4) {
        std::vector<std::uint32_t> extension = literal_string(extension_name);
        extension.insert(extension.begin(),
                         instruction(static_cast<std::uint32_t>(extension.size() + 1), op_extension));
        insertions.push_back({std::max(capabilities_end, extensions_end), std::move(extension)});
    }
    for (const std::uint32_t width : widths) {
        if (preserves(existing_modes, width)) continue;
        insertions.push_back({modes_end != 0 ? modes_end : entry_end,
                              {instruction(4, op_execution_mode), entry_point, mode, width}});
    }
    // Apply from the back so earlier positions stay valid; same position: last listed first.
    std::stable_sort(insertions.begin(), insertions.end(),
                     [](const auto& x, const auto& y) { return x.first < y.first; });
    for (auto it = insertions.rbegin(); it != insertions.rend(); ++it) {
        out.insert(out.begin() + static_cast<std::ptrdiff_t>(it->first), it->second.begin(),
                   it->second.end());
    }
    return out;
}

}  // namespace

std::vector<std::uint32_t> with_denorm_preserve(std::span<const std::uint32_t> spirv,
                                                const std::vector<std::uint32_t>& widths) {
    return with_float_mode(spirv, widths, capability_denorm_preserve, mode_denorm_preserve);
}

std::vector<std::uint32_t> inf_nan_preserve_widths(const FloatControls& controls, bool double_precision) {
    std::vector<std::uint32_t> widths;
    if (controls.inf_nan32) widths.push_back(32);
    if (double_precision && controls.inf_nan64) widths.push_back(64);
    return widths;
}

std::vector<std::uint32_t> with_inf_nan_preserve(std::span<const std::uint32_t> spirv,
                                                 const std::vector<std::uint32_t>& widths) {
    return with_float_mode(spirv, widths, capability_inf_nan_preserve, mode_inf_nan_preserve);
}

}  // namespace tapevm::gpu::detail
