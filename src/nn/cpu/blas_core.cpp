#include "blas_core.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "cblas.hpp"

namespace tapevm::nn::detail {

std::string suggested_openblas_core(std::string_view corename, const std::vector<cpu::Isa>& isas) {
    std::string name(corename);
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
    // OpenBLAS's x86-64 fallbacks for a CPU it does not recognise.
    constexpr std::array<std::string_view, 8> generic = {"prescott", "core2",  "penryn",  "dunnington",
                                                         "nehalem",  "katmai", "unknown", "atom"};
    if (std::find(generic.begin(), generic.end(), name) == generic.end()) return {};
    const auto has = [&](cpu::Isa isa) { return std::find(isas.begin(), isas.end(), isa) != isas.end(); };
    if (has(cpu::Isa::avx512)) return "SkylakeX";
    if (has(cpu::Isa::avx2)) return "Haswell";
    return {};
}

std::string openblas_core_advice() {
    if (std::getenv("OPENBLAS_CORETYPE") != nullptr) return {};
    const char* corename = openblas_get_corename();
    return suggested_openblas_core(corename != nullptr ? corename : "", cpu::supported_isas());
}

void warn_about_openblas_core() {
    static std::once_flag once;
    std::call_once(once, [] {
        const std::string core = openblas_core_advice();
        if (core.empty()) return;
        std::fprintf(
            stderr,
            "nn cpu: OpenBLAS chose its generic %s kernels on a CPU with %s (a virtual machine hiding "
            "the CPU model?): matmul runs several times faster with OPENBLAS_CORETYPE=%s set before "
            "the program starts\n",
            openblas_get_corename(), core == "SkylakeX" ? "AVX-512" : "AVX2", core.c_str());
    });
}

}  // namespace tapevm::nn::detail
