// OpenBLAS's kernel choice. Debian's OpenBLAS picks its kernels at load time from the CPU's
// family and model; virtual machines that hide the model (the GPU machine's host reports a bare
// "Intel(R) Xeon(R) Processor" with AVX-512) get its generic "Prescott" kernels, 4-5x slower
// than its SkylakeX ones there (bench/RESULTS.md). OpenBLAS reads OPENBLAS_CORETYPE only as it
// loads, so the fix is that variable set before the process starts: the cpu device says so
// once on stderr, and the tapevm program sets it and starts itself again (src/cli/main.cpp).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "tapevm/cpu.hpp"

namespace tapevm::nn::detail {

/// The OPENBLAS_CORETYPE to use when OpenBLAS chose generic kernels (`corename`, as
/// openblas_get_corename() says) on a CPU with wider instruction sets (`isas`): "SkylakeX" with
/// AVX-512, "Haswell" with AVX2; "" when its choice stands.
std::string suggested_openblas_core(std::string_view corename, const std::vector<cpu::Isa>& isas);

/// suggested_openblas_core() for this process's OpenBLAS and CPU; "" when OPENBLAS_CORETYPE is
/// set already.
std::string openblas_core_advice();

/// openblas_core_advice(), said once on stderr (by the first cpu device).
void warn_about_openblas_core();

}  // namespace tapevm::nn::detail
