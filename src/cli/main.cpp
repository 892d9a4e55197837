#include <cstdlib>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include <unistd.h>

#include "cli.hpp"
#if TAPEVM_CLI_NN
#include "cpu/blas_core.hpp"
#endif

namespace {

/// OpenBLAS picks its kernels as it loads: where it took generic ones on a CPU with AVX2 or
/// AVX-512 (src/nn/cpu/blas_core.hpp), set OPENBLAS_CORETYPE and start this program again, once.
void restart_for_openblas([[maybe_unused]] char** argv) {
#if TAPEVM_CLI_NN
    if (std::getenv("TAPEVM_OPENBLAS_RESTARTED") != nullptr) return;
    const std::string core = tapevm::nn::detail::openblas_core_advice();
    if (core.empty()) return;
    setenv("OPENBLAS_CORETYPE", core.c_str(), 1);
    setenv("TAPEVM_OPENBLAS_RESTARTED", "1", 1);
    execv("/proc/self/exe", argv);  // returns only on failure: carry on with the generic kernels
#endif
}

}  // namespace

int main(int argc, char** argv) {
    restart_for_openblas(argv);
    std::vector<std::string_view> args(argv + 1, argv + argc);
    return tapevm::cli::run(args, std::cout, std::cerr);
}
