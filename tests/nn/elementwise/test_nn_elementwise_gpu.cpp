// nn::elementwise and elementwise_backward on the gpu device (kernels generated from the tape
// through the tape compiler's code generator): elementwise_cases.hpp against the reference
// device and the reference VM. Exits 77 (skipped) without a Vulkan device (tests/gpu/gpu_main.cpp).
#include "elementwise_cases.hpp"

using namespace elementwise_test;

namespace {
Device gpu() { return Device::gpu(); }
}  // namespace

TEST_SUITE("nn_elementwise_gpu") {
    TEST_CASE("GELU (tanh form) and SiLU, forward and backward, f32 f16 bf16") { activations(gpu()); }

    TEST_CASE("broadcasting: scalar, row, column, rank 2 and 3, two outputs") {
        for (const DType dtype : all_dtypes) {
            if (!gpu().supports(dtype)) continue;
            CAPTURE(tapevm::nn::dtype_name(dtype));
            broadcasting(gpu(), dtype);
        }
    }

    TEST_CASE("a tape with parameters (AdamW-like update), in place") {
        for (const DType dtype : all_dtypes) {
            if (!gpu().supports(dtype)) continue;
            CAPTURE(tapevm::nn::dtype_name(dtype));
            with_params(gpu(), dtype);
            in_place(gpu(), dtype);
        }
    }

    TEST_CASE("backward against the reference VM's vjp") { against_reference_vm(gpu()); }

    TEST_CASE("deterministic: twice the same bits") { deterministic(gpu()); }

    TEST_CASE("f16 and bf16 stores and loads: the host's conversions, bit for bit") { conversions(gpu()); }

    TEST_CASE("bad input: typed errors naming the kernel and the argument") { bad_input(gpu()); }
}
