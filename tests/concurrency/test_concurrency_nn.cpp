// The nn layer's thread contract (tapevm/nn/device.hpp, docs/THREADS.md) through its public API:
// one Device handle is used by one thread at a time, and separate handles on separate threads at
// once. Each of 8 threads makes its own cpu handle (all with the same options, so they share one
// thread pool) and, where a Vulkan device exists, its own gpu handle (separate streams on the
// one shared Vulkan device), runs matmul, bias_add and softmax, and must get the bits of a
// serial run. Linked with the GPU suites' main(): skipped (77) without a Vulkan device. Not in
// dev.sh's ThreadSanitizer step, which builds the core libraries only (suite concurrency_nn).
#include <functional>
#include <span>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "concurrency_support.hpp"
#include "tapevm/error.hpp"
#include "tapevm/nn/device.hpp"
#include "tapevm/nn/kernels.hpp"
#include "tapevm/nn/tensor.hpp"

namespace tapevm::test {
namespace {

constexpr std::size_t rows = 9, inner = 13, columns = 11;

std::vector<float> values(std::size_t count, unsigned salt) {
    std::vector<float> out(count);
    for (std::size_t i = 0; i < count; ++i)
        out[i] = static_cast<float>(static_cast<int>((i * 29 + salt * 7) % 23) - 11) / 8.0f;
    return out;
}

// softmax(A B + bias) on `device`, read back.
std::vector<float> step(const nn::Device& device, unsigned salt) {
    const nn::Tensor a = device.upload({rows, inner}, values(rows * inner, salt), nn::DType::f32);
    const nn::Tensor b = device.upload({inner, columns}, values(inner * columns, salt + 1), nn::DType::f32);
    const nn::Tensor bias = device.upload({columns}, values(columns, salt + 2), nn::DType::f32);
    const nn::Tensor c = device.zeros({rows, columns}, nn::DType::f32);
    const nn::Tensor y = device.zeros({rows, columns}, nn::DType::f32);
    nn::matmul(a, b, c);
    nn::bias_add(c, bias);
    nn::softmax(c, y);
    return y.to_float();
}

void check_handles_on_threads(const std::function<nn::Device()>& make, const std::string& kind) {
    std::vector<std::vector<float>> expected;
    {
        const nn::Device device = make();
        for (unsigned salt = 0; salt < concurrent_threads; ++salt) expected.push_back(step(device, salt));
    }
    Mismatches mismatches;
    check_no_errors(run_concurrently([&](unsigned t) {
        const nn::Device device = make();  // this thread's own handle
        for (unsigned round = 0; round < 3; ++round) {
            const unsigned salt = (t + round) % concurrent_threads;
            if (!same_bits(step(device, salt), expected[salt]))
                mismatches.add(kind + " salt " + std::to_string(salt));
        }
    }));
    CHECK_MESSAGE(mismatches.count() == 0, mismatches.count()
                                               << " steps differ, first: " << mismatches.first());
}

TEST_CASE("nn cpu devices, one handle per thread, 8 threads at once: the serial results bit for bit") {
    check_handles_on_threads([] { return nn::Device::cpu({.threads = 2}); }, "cpu");
}

TEST_CASE("nn gpu devices, one handle per thread, 8 threads at once: the serial results bit for bit") {
    check_handles_on_threads([] { return nn::Device::gpu(); }, "gpu");
}

}  // namespace
}  // namespace tapevm::test
