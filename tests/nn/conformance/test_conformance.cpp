// One doctest case per kernel of the kernel set: every case of the table (harness.hpp) on
// every device under test (main.cpp: --devices) and dtype, against the reference device.
#include <doctest/doctest.h>

#include <string>

#include "harness.hpp"

namespace tapevm::nn::conformance {
namespace {

void check_kernel(KernelId kernel) {
    for (const Device& device : devices_under_test()) {
        const std::vector<std::string> failures = run_kernel_cases(kernel, device);
        for (const std::string& failure : failures) FAIL_CHECK(failure);
        const auto& table = tallies();
        std::size_t ran = 0;
        for (const auto& [key, tally] : table)
            if (std::get<0>(key) == kernel && std::get<1>(key) == device_kind_name(device.kind()))
                ran += tally.passed + tally.failed + tally.skipped;
        CHECK_MESSAGE(ran > 0, "no case of ", detail::kernel_name(kernel), " in the table");
    }
}

}  // namespace

// Every KernelId has a test case here (the static_assert keeps the list complete).
static_assert(static_cast<int>(KernelId::count) == 24,
              "a kernel was added: add its cases and a TEST_CASE here");

TEST_CASE("conformance: zero") { check_kernel(KernelId::zero); }
TEST_CASE("conformance: fill") { check_kernel(KernelId::fill); }
TEST_CASE("conformance: copy") { check_kernel(KernelId::copy); }
TEST_CASE("conformance: matmul") { check_kernel(KernelId::matmul); }
TEST_CASE("conformance: bias_add") { check_kernel(KernelId::bias_add); }
TEST_CASE("conformance: add_assign") { check_kernel(KernelId::add_assign); }
TEST_CASE("conformance: reduce_sum") { check_kernel(KernelId::reduce_sum); }
TEST_CASE("conformance: transpose_2d") { check_kernel(KernelId::transpose_2d); }
TEST_CASE("conformance: softmax") { check_kernel(KernelId::softmax); }
TEST_CASE("conformance: softmax_backward") { check_kernel(KernelId::softmax_backward); }
TEST_CASE("conformance: layer_norm") { check_kernel(KernelId::layer_norm); }
TEST_CASE("conformance: layer_norm_backward") { check_kernel(KernelId::layer_norm_backward); }
TEST_CASE("conformance: rms_norm") { check_kernel(KernelId::rms_norm); }
TEST_CASE("conformance: rms_norm_backward") { check_kernel(KernelId::rms_norm_backward); }
TEST_CASE("conformance: embedding") { check_kernel(KernelId::embedding); }
TEST_CASE("conformance: embedding_backward") { check_kernel(KernelId::embedding_backward); }
TEST_CASE("conformance: cross_entropy") { check_kernel(KernelId::cross_entropy); }
TEST_CASE("conformance: global_norm_squared") { check_kernel(KernelId::global_norm_squared); }
TEST_CASE("conformance: attention") { check_kernel(KernelId::attention); }
TEST_CASE("conformance: attention_backward") { check_kernel(KernelId::attention_backward); }
TEST_CASE("conformance: kv_attention") { check_kernel(KernelId::kv_attention); }
TEST_CASE("conformance: elementwise") { check_kernel(KernelId::elementwise); }
TEST_CASE("conformance: elementwise_backward") { check_kernel(KernelId::elementwise_backward); }
TEST_CASE("conformance: dropout") { check_kernel(KernelId::dropout); }

}  // namespace tapevm::nn::conformance
