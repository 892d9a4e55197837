// main() of the fault-injection suites (tests/gpu_test_env.hpp): fault injection enabled before
// any device exists (so every device gets the counting hooks, src/vm_gpu/fault_injection.hpp);
// skipped (exit 77) when there is no Vulkan device; the validation layer on, and any message it
// reports fails the run (an error path that misuses Vulkan is a failure like a wrong result).
#include "../gpu_test_env.hpp"
#include "fault_injection.hpp"

int main(int argc, char** argv) {
    tapevm::test::prepare_gpu_test_environment();
    tapevm::gpu::detail::enable_fault_injection();
    if (!tapevm::test::vulkan_device_present("the fault tests")) return tapevm::test::skipped_exit_status;
    return tapevm::test::run_gpu_tests(argc, argv);
}
