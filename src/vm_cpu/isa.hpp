// Instruction-set choice for the CPU VM: what this machine supports, and which one a Vm
// uses given Options::isa and TAPEVM_CPU_ISA.
#pragma once

#include "tapevm/cpu.hpp"

namespace tapevm::cpu::detail {

/// The instruction set to use: `requested`, or when automatic TAPEVM_CPU_ISA or the widest
/// supported. Throws Unsupported for an unknown name or an unsupported set.
Isa resolve_isa(Isa requested);

/// Bytes of L1 data cache per core (sysconf, then /sys, else 32 KiB).
std::size_t l1_data_cache_bytes();

/// Bytes of L2 cache per core (sysconf, then /sys, else 512 KiB).
std::size_t l2_cache_bytes();

}  // namespace tapevm::cpu::detail
