// fuzz_tape: the .tape loader (tapevm::from_bytes, tape_file.hpp) past its checksum.
//
// The target stores the CRC-32 of the mutated image in its last 4 bytes before loading, so
// mutations reach the header, size and instruction checks instead of stopping at the
// checksum (the loader reads the checksum only where the header's counts put it: the last 4
// bytes of the file). Properties checked, each a finding when broken:
//   - the loader throws FormatError and nothing else (any other exception aborts);
//   - a loaded tape saves back to exactly the image it was loaded from;
//   - a loaded tape is safe to evaluate: the reference VM runs every mode on it at two points
//     (small tapes only: counts are not bounded by the file's size) without a sanitizer report
//     or an exception, so find_defect() misses no invariant the evaluators rely on.
#include <algorithm>
#include <vector>

#include "fuzz_support.hpp"
#include "tapevm/error.hpp"
#include "tapevm/reference.hpp"
#include "tapevm/tape_file.hpp"

namespace {

using tapevm::fuzz::require;

// Inputs, parameters and outputs above this are not evaluated (a 44-byte file may declare
// 2^32 - 1 inputs); instructions are bounded by the input's size already.
constexpr std::uint32_t most_values = 64;

template <class Real> std::vector<Real> pattern(std::size_t count, double start) {
    std::vector<Real> values(count);
    for (std::size_t k = 0; k < count; ++k)
        values[k] = static_cast<Real>(start + 0.375 * double(k % 11) - 1.5);
    return values;
}

template <class Real> void evaluate(const tapevm::reference::Vm& vm) {
    const tapevm::Tape& tape = vm.tape();
    constexpr std::size_t points = 2;
    const std::size_t n = tape.input_count(), m = tape.output_count();
    const auto inputs = pattern<Real>(points * n, 0.25);
    const auto params = pattern<Real>(points * tape.param_count(), -0.5);
    const tapevm::Batch<Real> batch{points, inputs, params};
    const auto values = vm.forward(batch).values;
    require(values.size() == points * m, "forward gives points x outputs values");
    if (m == 1)
        require(vm.gradient(batch).values.size() == points * n, "gradient gives points x inputs values");
    for (const auto mode : {tapevm::JacobianMode::forward, tapevm::JacobianMode::reverse})
        require(vm.jacobian(batch, mode).values.size() == points * m * n,
                "jacobian gives points x m x n values");
    const auto tangent_values = pattern<Real>(points * n, 1.0);
    const auto cotangent_values = pattern<Real>(points * m, 0.75);
    const std::span<const Real> tangents(tangent_values), cotangents(cotangent_values);
    require(vm.jvp(batch, tangents).values.size() == points * m, "jvp gives points x outputs values");
    require(vm.vjp(batch, cotangents).values.size() == points * n, "vjp gives points x inputs values");
    require(vm.hvp(batch, cotangents, tangents).values.size() == points * n,
            "hvp gives points x inputs values");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::vector<std::byte> image(tapevm::fuzz::bytes_of(data, size).begin(),
                                 tapevm::fuzz::bytes_of(data, size).end());
    if (image.size() >= 4) {
        const std::uint32_t crc = tapevm::crc32(std::span<const std::byte>(image).first(image.size() - 4));
        for (std::size_t k = 0; k < 4; ++k) image[image.size() - 4 + k] = std::byte((crc >> (8 * k)) & 0xFF);
    }
    tapevm::Tape tape;
    try {
        tape = tapevm::from_bytes(image);
    } catch (const tapevm::FormatError&) {
        return 0;
    }
    require(tapevm::to_bytes(tape) == image, "a loaded tape saves back to the image it came from");
    if (std::max({tape.input_count(), tape.param_count(), tape.output_count()}) > most_values) return 0;
    const tapevm::reference::Vm vm(tape);
    evaluate<double>(vm);
    evaluate<float>(vm);
    return 0;
}
