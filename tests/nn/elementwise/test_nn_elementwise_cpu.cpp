// nn::elementwise and elementwise_backward on the cpu device (the CPU VM over tensor
// bindings): elementwise_cases.hpp against the reference device and the reference VM, and
// the same bits whatever the thread count.
#include "elementwise_cases.hpp"

using namespace elementwise_test;

namespace {
Device cpu() { return Device::cpu({.threads = 2}); }
}  // namespace

TEST_SUITE("nn_elementwise_cpu") {
    TEST_CASE("GELU (tanh form) and SiLU, forward and backward, f32 f16 bf16") { activations(cpu()); }

    TEST_CASE("broadcasting: scalar, row, column, rank 2 and 3, two outputs") {
        for (const DType dtype : all_dtypes) {
            CAPTURE(tapevm::nn::dtype_name(dtype));
            broadcasting(cpu(), dtype);
        }
    }

    TEST_CASE("a tape with parameters (AdamW-like update)") {
        for (const DType dtype : all_dtypes) {
            CAPTURE(tapevm::nn::dtype_name(dtype));
            with_params(cpu(), dtype);
        }
    }

    TEST_CASE("outputs in place") {
        for (const DType dtype : all_dtypes) {
            CAPTURE(tapevm::nn::dtype_name(dtype));
            in_place(cpu(), dtype);
        }
    }

    TEST_CASE("backward against the reference VM's vjp") { against_reference_vm(cpu()); }

    TEST_CASE("deterministic: twice, and with 1 and 2 threads, the same bits") {
        deterministic(cpu());
        const auto one = backward_bits(Device::cpu({.threads = 1}), DType::f32);
        const auto two = backward_bits(Device::cpu({.threads = 2}), DType::f32);
        for (std::size_t i = 0; i < one.size(); ++i)
            CHECK_MESSAGE(same_bits(one[i], two[i]), "input_grads[" << i << "]");
    }

    TEST_CASE("f16 and bf16 stores and loads: the host's conversions, bit for bit") { conversions(cpu()); }

    TEST_CASE("bad input: typed errors naming the kernel and the argument") { bad_input(cpu()); }
}
