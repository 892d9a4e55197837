#include "spirv_calls.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <set>
#include <string>

namespace tapevm::gpu::detail {

namespace {

constexpr std::uint32_t op_name = 5;
constexpr std::uint32_t op_function = 54;
constexpr std::uint32_t dont_inline = 0x2;
constexpr std::uint32_t inline_mask = 0x1;

// The functions of shaders/lib with a range reduction or a polynomial: tens of instructions
// each, where a call's cost is small beside the body.
constexpr std::array<std::string_view, 31> called = {
    "tv_sin",  "tv_cos",   "tv_tan",   "tv_sincos", "tv_asin",  "tv_acos",  "tv_atan",   "tv_atan2",
    "tv_exp",  "tv_exp2",  "tv_expm1", "tv_log",    "tv_log2",  "tv_log10", "tv_log1p",  "tv_pow",
    "tv_sinh", "tv_cosh",  "tv_tanh",  "tv_asinh",  "tv_acosh", "tv_atanh", "tv_cbrt",   "tv_hypot",
    "tv_fmod", "tv_powi",  "tv_fma",   "tv_div",    "tv_sqrt",  "tv_round", "tv_reduce_large"};

}  // namespace

bool is_called_library_function(std::string_view name) {
    return std::find(called.begin(), called.end(), name) != called.end();
}

std::vector<std::uint32_t> with_library_calls(std::span<const std::uint32_t> spirv, std::size_t& marked) {
    std::vector<std::uint32_t> out(spirv.begin(), spirv.end());
    marked = 0;
    if (out.size() < 5) return out;
    std::set<std::uint32_t> ids;
    for (std::size_t at = 5; at < out.size();) {
        const std::uint32_t words = out[at] >> 16, opcode = out[at] & 0xffffu;
        if (words == 0 || at + words > out.size()) return std::vector<std::uint32_t>(spirv.begin(), spirv.end());
        if (opcode == op_name && words >= 3) {
            const char* text = reinterpret_cast<const char*>(&out[at + 2]);
            const std::size_t limit = (words - 2) * 4;
            const std::string name(text, strnlen(text, limit));
            if (is_called_library_function(name.substr(0, name.find('(')))) ids.insert(out[at + 1]);
        } else if (opcode == op_function && words == 5 && ids.count(out[at + 2]) != 0) {
            out[at + 3] = (out[at + 3] & ~inline_mask) | dont_inline;
            ++marked;
        }
        at += words;
    }
    return out;
}

}  // namespace tapevm::gpu::detail
