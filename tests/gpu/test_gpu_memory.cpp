// Device memory: bounded by the chunk size, not the batch; out of device memory gives smaller
// chunks, then a clear error, and the Vm works again afterwards. The device's MemoryLedger
// counts every buffer's bytes; its test limit makes allocations fail as on a full device.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "context.hpp"
#include "gpu_support.hpp"
#include "memory.hpp"
#include "tapevm/error.hpp"
#include "tapevm/examples.hpp"

namespace tapevm::test {
namespace {

gpu::detail::MemoryLedger& ledger() {
    static const auto device = gpu::detail::Device::acquire(test_options());  // the Vms' device
    return device->ledger();
}

// Lifts the test limit when the test case ends, however it ends.
struct LimitGuard {
    explicit LimitGuard(std::uint64_t bytes) { ledger().set_limit(bytes); }
    ~LimitGuard() { ledger().set_limit(std::numeric_limits<std::uint64_t>::max()); }
    LimitGuard(const LimitGuard&) = delete;
    LimitGuard& operator=(const LimitGuard&) = delete;
};

// y = 2x + 1: exact in float for the inputs below, so the check needs no tolerance.
Tape affine_tape() {
    TapeParts parts;
    parts.inputs = 1;
    parts.constants = {2.0, 1.0};
    parts.instructions = {{Op::Input, 0, 0, 0},
                          {Op::Const, 0, 0, 0},
                          {Op::Const, 1, 0, 0},
                          {Op::Mul, 0, 1, 0},
                          {Op::Add, 3, 2, 0}};
    parts.outputs = {4};
    return Tape(parts);
}

// Peak device bytes of a forward call over `points` points (above what was live before),
// checking every result.
std::uint64_t forward_peak(const gpu::Vm& vm, std::size_t points) {
    std::vector<float> inputs(points);
    for (std::size_t k = 0; k < points; ++k)
        inputs[k] = static_cast<float>(static_cast<int>(k % 4099) - 2049);
    const std::uint64_t before = ledger().live_bytes();
    ledger().reset_peak();
    const auto out = vm.forward(Batch<float>{points, inputs, {}});
    const std::uint64_t peak = ledger().peak_bytes() - before;
    REQUIRE(out.values.size() == points);
    std::size_t wrong = 0;
    for (std::size_t k = 0; k < points; ++k) wrong += out.values[k] != 2 * inputs[k] + 1 ? 1 : 0;
    CHECK(wrong == 0);
    return peak;
}

TEST_CASE("device memory is bounded by the chunk size, not the batch") {
    const gpu::Vm vm(affine_tape(), test_options(4096));
    const std::uint64_t small = forward_peak(vm, 10'000);
    CHECK(small > 0);
    CHECK(forward_peak(vm, 10'000) == 0);  // the chunk buffers are kept between calls
    // 100 times the batch (250 chunks), the same chunk buffers: nothing more is allocated.
    CHECK(forward_peak(vm, 1'000'000) == 0);
    check_validation_clean();
}

TEST_CASE("a batch of four automatic chunks and a point needs no more memory than one chunk") {
    const gpu::Vm vm(affine_tape(), test_options());
    // The automatic chunk depends on the device (a cache-sized working set): on lavapipe
    // about 2^19 points of this tape, on an H100 a few million.
    const std::size_t chunk = vm.chunk_points<float>("forward");
    CAPTURE(chunk);
    REQUIRE(chunk <= (std::size_t{1} << 24));
    CHECK(forward_peak(vm, chunk) > 0);
    CHECK(forward_peak(vm, 4 * chunk + 1) == 0);
    check_validation_clean();
}

TEST_CASE("out of device memory: smaller chunks, then a clear error; the Vm stays usable") {
    const Tape tape = examples::example_tape("rosenbrock16");
    const std::size_t points = 20'000;
    const auto inputs = random_values<float>(points * tape.input_count(), -2, 2, 7);
    const Batch<float> batch{points, inputs, {}};
    const auto expected = reference::Vm(tape).gradient(batch);

    std::uint64_t need = 0;  // what one call takes with the planned chunks
    {
        const gpu::Vm vm(tape, test_options());
        const std::uint64_t before = ledger().live_bytes();
        ledger().reset_peak();
        check_close(vm.gradient(batch).values, expected.values, "gradient, unlimited", tape.input_count());
        need = ledger().peak_bytes() - before;
    }
    REQUIRE(need > 0);

    const gpu::Vm vm(tape, test_options());
    const std::uint64_t base = ledger().live_bytes();
    {
        // A third of that: the chunks halve until they fit, and the results are the same.
        const LimitGuard limit(base + need / 3);
        ledger().reset_peak();
        const auto got = vm.gradient(batch);
        check_close(got.values, expected.values, "gradient, a third of the memory", tape.input_count());
        CHECK(ledger().peak_bytes() - base <= need / 3);
    }
    {
        // Not even one workgroup fits: OutOfMemory (not DeviceLost: the device is fine),
        // saying so, and the caller's output buffer is left as it was.
        const LimitGuard limit(base + 1024);
        std::vector<float> gradients(points * tape.input_count(), 7.0f);
        try {
            (void)vm.gradient(batch, std::span<float>(gradients));
            FAIL_CHECK("no exception without memory");
        } catch (const OutOfMemory& error) {
            CHECK(std::string(error.what()).find("out of device memory") != std::string::npos);
        }
        CHECK(std::all_of(gradients.begin(), gradients.end(), [](float g) { return g == 7.0f; }));
    }
    // Memory back: the same Vm works again.
    check_close(vm.gradient(batch).values, expected.values, "gradient, after the failure",
                tape.input_count());
    check_validation_clean();
}

}  // namespace
}  // namespace tapevm::test
