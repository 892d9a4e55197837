// Tuning knobs of the GPU VM, read once from the environment (like TAPEVM_CPU_ISA and
// TAPEVM_CPU_BLOCK_LANES on the CPU): for measuring variants side by side, not for users.
//   TAPEVM_GPU_INTERPRETER=auto|local|compact|slots
//                                         the forward and reverse kernels, all on the compact
//                                         program (compact.hpp) but slots. local: its homes
//                                         in per-invocation local memory, for calls needing at
//                                         most TAPEVM_GPU_LOCAL_HOMES homes per point and one
//                                         dispatch per chunk, else compact: the homes in the
//                                         work buffer. auto (the default): local on GPUs
//                                         (faster on the H100 for every workload measured,
//                                         bench/RESULTS.md), compact on CPU devices (lavapipe
//                                         compiles each local pipeline for seconds). slots: a
//                                         work row per slot and plane, shaders/forward.comp
//                                         and reverse.comp
//   TAPEVM_GPU_OP_SET=auto|tape|all       the ops the compact and local kernels' pipelines handle
//                                         (kernels.hpp: OpSet). tape: only the tape's (a
//                                         pipeline per op set, the others' cases compiled out),
//                                         and in reverse mode the call's seeds K fixed too.
//                                         auto (the default): tape on GPUs; on CPU devices
//                                         (lavapipe takes seconds per pipeline) all but the
//                                         special functions the tape does not use
//   TAPEVM_GPU_LOCAL_HOMES=N              the most homes per point (values + seeds x adjoints)
//                                         the local kernels take, 1 to 65536 (default 512)
//   TAPEVM_GPU_WORKGROUP=N                invocations per workgroup, a power of two from 32 to
//                                         1024 (default 64)
//   TAPEVM_GPU_CHUNK_POINTS=N             points per chunk when Options::chunk_points is 0
//   TAPEVM_GPU_COMPILE_STAGING=0|1        the tape compiler's kernels stage inputs and results
//                                         through shared memory (default 1, codegen.hpp)
//   TAPEVM_GPU_MODULE_IDENTIFIERS=0|1     compiled kernels' pipelines are made from the driver's
//                                         pipeline cache by their shader module's identifier
//                                         (VK_EXT_shader_module_identifier, where offered), so
//                                         a cache hit reads and passes no SPIR-V (default 1)
//   TAPEVM_GPU_GLSLANG_WARM_UP=0|1        a Vm with the compiled engine sets glslang up on a
//                                         background thread while the device starts
//                                         (glsl_compiler.hpp; default 1)
//   TAPEVM_GPU_PIPELINE_STATS=1           print each pipeline's statistics (registers, ...)
//                                         to stderr where VK_KHR_pipeline_executable_properties
//                                         is offered
// A value that is not understood throws tapevm::Error naming the variable.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tapevm::gpu::detail {

/// Which kernels run forward and reverse calls (TAPEVM_GPU_INTERPRETER); local falls back
/// to compact where a call does not fit it.
enum class Interpreter { automatic, local, compact, slots };
/// Which ops the compact and local pipelines handle (TAPEVM_GPU_OP_SET).
enum class OpSetChoice { automatic, tape, all };

struct Tuning {
    Interpreter interpreter = Interpreter::automatic;
    OpSetChoice op_set = OpSetChoice::automatic;
    std::uint32_t local_homes = 512;
    std::uint32_t workgroup_size = 64;
    std::size_t chunk_points = 0;
    bool pipeline_stats = false;
    bool compile_staging = true;
    bool module_identifiers = true;
    bool glslang_warm_up = true;
};

/// The environment's tuning, read at the first call.
const Tuning& tuning();
/// The environment's tuning as it is now (what tuning() read once).
Tuning read_tuning();

}  // namespace tapevm::gpu::detail
