#include "isa.hpp"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <string>

#include <unistd.h>

#include "tapevm/error.hpp"

namespace tapevm::cpu {

std::string_view isa_name(Isa isa) {
    switch (isa) {
        case Isa::automatic: return "automatic";
        case Isa::sse2: return "sse2";
        case Isa::avx2: return "avx2";
        case Isa::avx512: return "avx512";
    }
    return "unknown";
}

// __builtin_cpu_supports also checks that the OS saves the registers (XCR0), which xsimd
// 8.1's available_architectures() does not. An instruction set left out of the build
// (-Dcpu_isas, src/vm_cpu/meson.build) is not offered, whatever the processor has.
std::vector<Isa> supported_isas() {
    std::vector<Isa> isas{Isa::sse2};
    const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    if (avx2 && TAPEVM_CPU_BUILT_AVX2) isas.push_back(Isa::avx2);
    if (avx2 && TAPEVM_CPU_BUILT_AVX512 && __builtin_cpu_supports("avx512f") &&
        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl")) {
        isas.push_back(Isa::avx512);
    }
    return isas;
}

namespace detail {
namespace {

std::string supported_list() {
    std::string text;
    for (const Isa isa : supported_isas()) text += (text.empty() ? "" : ", ") + std::string(isa_name(isa));
    return text;
}

}  // namespace

Isa resolve_isa(Isa requested) {
    const std::vector<Isa> supported = supported_isas();
    std::string source = "Options::isa";
    if (requested == Isa::automatic) {
        const char* variable = std::getenv("TAPEVM_CPU_ISA");
        if (variable == nullptr || *variable == '\0') return supported.back();
        const std::string name(variable);
        source = "TAPEVM_CPU_ISA";
        if (name == "sse2") {
            requested = Isa::sse2;
        } else if (name == "avx2") {
            requested = Isa::avx2;
        } else if (name == "avx512") {
            requested = Isa::avx512;
        } else {
            throw Unsupported("cpu: TAPEVM_CPU_ISA='" + name +
                              "' names no instruction set (known: sse2, avx2, avx512; supported here: " +
                              supported_list() + ")");
        }
    }
    const bool built = requested == Isa::sse2 || (requested == Isa::avx2 && TAPEVM_CPU_BUILT_AVX2) ||
                       (requested == Isa::avx512 && TAPEVM_CPU_BUILT_AVX512);
    if (!built) {
        throw Unsupported("cpu: instruction set " + std::string(isa_name(requested)) + " (from " + source +
                          ") was left out of this build of tapevm (Meson option cpu_isas; built: " +
                          supported_list() + " where the processor has them)");
    }
    if (std::find(supported.begin(), supported.end(), requested) == supported.end()) {
        throw Unsupported("cpu: instruction set " + std::string(isa_name(requested)) + " (from " + source +
                          ") is not supported on this machine (supported: " + supported_list() + ")");
    }
    return requested;
}

namespace {

/// sysconf(name), else /sys/devices/system/cpu/cpu0/cache/<index>/size, else `otherwise`.
std::size_t cache_bytes(int name, const char* index, std::size_t otherwise) {
    const long bytes = sysconf(name);
    if (bytes > 0) return static_cast<std::size_t>(bytes);
    std::ifstream file(std::string("/sys/devices/system/cpu/cpu0/cache/") + index + "/size");
    std::size_t size = 0;
    char unit = 0;
    if (file >> size >> unit && size > 0) {
        if (unit == 'K') return size * 1024;
        if (unit == 'M') return size * 1024 * 1024;
    }
    return otherwise;
}

}  // namespace

std::size_t l1_data_cache_bytes() {
    return cache_bytes(_SC_LEVEL1_DCACHE_SIZE, "index0", std::size_t{32} * 1024);
}

std::size_t l2_cache_bytes() { return cache_bytes(_SC_LEVEL2_CACHE_SIZE, "index2", std::size_t{512} * 1024); }

}  // namespace detail
}  // namespace tapevm::cpu
