// The compile pool: a few threads shared by every Vm of the process, on which the tape
// compiler's kernels are built in the background (CompileWait::background), so that several
// tapes' kernels compile at once while their first calls run on the interpreter.
//
// Threads: min(hardware threads, 4), or TAPEVM_GPU_COMPILE_THREADS (1-64), started on the first
// job. A job owns what it uses (shared pointers to the device, the tape and its KernelBuild), so
// its Vm may be destroyed while it runs. At exit the pool drops the jobs not started and joins
// the running ones (the process waits for a kernel being compiled; nothing is torn down under it).
#pragma once

#include <functional>

namespace tapevm::gpu::detail {

/// Queues `job` on the pool (first in, first out). Never throws from the job: it must catch
/// its own errors. Throws std::system_error when no thread can be started and none runs.
void submit_compile_job(std::function<void()> job);

/// Waits until no job is queued or running (for tests: the builds of destroyed Vms finish
/// before a test removes the cache folder they write to).
void wait_for_compile_pool_idle();

/// Threads the pool may run: TAPEVM_GPU_COMPILE_THREADS, else min(hardware threads, 4).
unsigned compile_pool_threads();

}  // namespace tapevm::gpu::detail
