// The row primitives in the build's baseline instruction set, and the choice of table.
#include <cstdlib>
#include <cstring>

#include "cpu/row_kernels_impl.hpp"

namespace tapevm::nn::detail {

const RowFunctions& row_functions_baseline() { return row_functions_here; }

const RowFunctions& row_functions() {
    static const RowFunctions& chosen = []() -> const RowFunctions& {
#if defined(TAPEVM_NN_CPU_AVX2)
        const char* isa = std::getenv("TAPEVM_CPU_ISA");
        const bool forced_baseline = isa != nullptr && std::strcmp(isa, "sse2") == 0;
        if (!forced_baseline && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
            return row_functions_avx2();
        }
#endif
        return row_functions_baseline();
    }();
    return chosen;
}

}  // namespace tapevm::nn::detail
