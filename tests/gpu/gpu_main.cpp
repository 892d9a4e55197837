// main() of the GPU test executables (tests/gpu_test_env.hpp): skipped (exit 77) when there is
// no Vulkan device, saying why; the validation layer on and any message it reports fails the run.
#include "../gpu_test_env.hpp"

int main(int argc, char** argv) {
    tapevm::test::prepare_gpu_test_environment();
    if (!tapevm::test::vulkan_device_present("the GPU tests")) return tapevm::test::skipped_exit_status;
    return tapevm::test::run_gpu_tests(argc, argv);
}
