// The CPU VM (tapevm::cpu::Vm) in the instruction set named by TAPEVM_CPU_ISA (sse2, avx2,
// avx512; unset: the widest supported). Meson runs this executable once per instruction
// set; one the machine or the build lacks is skipped (exit 77), saying so.
//
// Tolerances (measured on the development machine, AMD EPYC with AVX-512, with every
// instruction set; the CPU VM uses xsimd's vector functions and falls back to the C library
// per lane near their edges):
//   values, double: exact ops 0 ulp (IEEE operations; fma with or without FMA hardware);
//     transcendentals 4 ulp against glibc, Sin, Cos and Tan included: xsimd's argument
//     reduction gave 10 ulp at sin(-3 pi) and 25,000 at cos(29 pi / 2), so the CPU VM redoes
//     results near 0 (and tan's near a pole) with the C library (simd_math.hpp: trig); the
//     test case "sin, cos and tan near multiples of pi/2" below checks it up to k = 2^20.
//   values, float: exact ops 0 ulp; transcendentals 4 ulp.
//   zeros: the reference's sign for every op (no exceptions).
//   derivatives of single ops: relative 1e-14 (double), 4e-6 (float); whole tapes: 1e-12
//     relative + 1e-12 absolute (double), 2e-5 + 2e-5 (float, widened by the float
//     reference's own error where a tape is ill-conditioned: modes.hpp).
#include <cmath>
#include <cstdint>
#include <vector>

#include <doctest/doctest.h>

#include "backend.hpp"
#include "judge.hpp"
#include "tapevm/cpu.hpp"
#include "tapevm/error.hpp"
#include "tapevm/var.hpp"

namespace tapevm::conformance {
namespace {

/// The instruction set TAPEVM_CPU_ISA names (automatic when unset), or nothing when it names
/// none the CPU VM knows.
std::optional<cpu::Isa> requested_isa() {
    const char* text = std::getenv("TAPEVM_CPU_ISA");
    if (text == nullptr || *text == '\0') return cpu::Isa::automatic;
    for (const cpu::Isa isa : {cpu::Isa::sse2, cpu::Isa::avx2, cpu::Isa::avx512}) {
        if (cpu::isa_name(isa) == text) return isa;
    }
    return std::nullopt;
}

/// Why the requested instruction set cannot run here, or nothing.
std::optional<std::string> unavailable(cpu::Isa isa) {
    if (isa == cpu::Isa::automatic) return std::nullopt;
    std::string list;
    for (const cpu::Isa supported : cpu::supported_isas()) {
        if (supported == isa) return std::nullopt;
        list += ' ';
        list += cpu::isa_name(supported);
    }
    std::string reason = "this machine (or build) lacks ";
    reason += cpu::isa_name(isa);
    reason += "; it supports";
    return reason + list;
}

}  // namespace

BackendUnderTest backend_under_test() {
    BackendUnderTest b;
    const auto requested = requested_isa();
    // A name the CPU VM does not know is a mistake in the test setup: fail, do not skip.
    if (!requested)
        throw Error("TAPEVM_CPU_ISA=" + std::string(std::getenv("TAPEVM_CPU_ISA")) +
                    " names no instruction set of the CPU VM (sse2, avx2, avx512)");
    const cpu::Isa isa = *requested;
    b.name = "cpu (";
    b.name += cpu::isa_name(isa);
    b.name += ')';
    b.unavailable = [isa] { return unavailable(isa); };
    b.make = [isa](const Tape& tape) -> std::unique_ptr<Evaluator> {
        cpu::Options options;
        options.isa = isa;
        return std::make_unique<cpu::Vm>(tape, options);
    };
    b.f64.arithmetic_ulp = 0;
    b.f64.transcendental_ulp = 4;
    b.f64.derivatives = {1e-14, 0};
    b.f64.tapes = {1e-12, 1e-12};
    b.f32.arithmetic_ulp = 0;
    b.f32.transcendental_ulp = 4;
    b.f32.derivatives = {4e-6, 0};
    b.f32.tapes = {2e-5, 2e-5};
    return b;
}

namespace {

// The suite runs the instruction set it was asked for, not the widest one.
TEST_CASE("the CPU VM runs the instruction set TAPEVM_CPU_ISA names") {
    const cpu::Isa isa = requested_isa().value_or(cpu::Isa::automatic);
    const Tape tape = record(1, [](std::span<const Var> x) { return x[0] * 2.0; });
    const cpu::Vm vm(tape, cpu::Options{0, isa, 0});
    if (isa == cpu::Isa::automatic) {
        CHECK(vm.isa() == cpu::supported_isas().back());
    } else {
        CHECK(vm.isa() == isa);
        CHECK(vm.name().find(std::string(cpu::isa_name(isa))) != std::string::npos);
    }
}

// Finding 2 of the differential fuzzing (bench/RESULTS.md): xsimd's argument reduction is
// many ulp off where the result is tiny (sin and tan at k pi, cos at (k + 1/2) pi) or huge
// (tan at (k + 1/2) pi). Every such double and float near k pi/2, for k up to 2^20 and both
// signs, and its neighbours, in one batch (so lanes of every kind share a vector), against
// the C library within the stated bound.
template <class Real> void check_near_multiples_of_half_pi() {
    const BackendUnderTest& b = backend();
    const Tape tape = record(std::vector<double>{1.0}, [](std::span<const Var> x) {
        return std::vector<Var>{sin(x[0]), cos(x[0]), tan(x[0])};
    });
    std::vector<Real> xs;
    std::vector<double> ks;
    for (double k = 1; k <= 64; ++k) ks.push_back(k);
    for (double k = 128; k <= 1 << 20; k *= 2) ks.push_back(k - 1);
    ks.push_back(1 << 20);
    for (const double k : ks)
        for (const double half : {0.0, 0.5})
            for (const double sign : {1.0, -1.0}) {
                Real x = static_cast<Real>(sign * (k + half) * 3.14159265358979323846);
                for (int step = 0; step < 3; ++step) x = std::nextafter(x, Real(0));
                for (int step = 0; step < 7; ++step, x = std::nextafter(x, sign * Real(1e30)))
                    xs.push_back(x);
            }
    std::vector<Real> got(xs.size() * 3);
    const auto evaluator = b.make(tape);
    evaluator->forward(Batch<Real>{xs.size(), xs, {}}, got);
    const auto& tol = std::is_same_v<Real, double> ? b.f64 : b.f32;
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < xs.size(); ++i) {
        const Real x = xs[i];
        const Real want[3] = {std::sin(x), std::cos(x), std::tan(x)};
        const Op ops[3] = {Op::Sin, Op::Cos, Op::Tan};
        for (int j = 0; j < 3; ++j) {
            const double bound = tol.value_ulp_for(ops[j]);
            const double ulps = ulp_distance<Real>(got[i * 3 + j], want[j]);
            if (!(ulps <= bound) && ++wrong <= 10)
                MESSAGE(info(ops[j]).name << "(" << show(x) << ") = " << show(got[i * 3 + j])
                                          << ", the C library " << show(want[j]) << ": " << ulps
                                          << " ulp, bound " << bound);
        }
    }
    INFO(b.name << ": " << wrong << " of " << xs.size() * 3 << " values beyond the bound");
    CHECK(wrong == 0);
}

TEST_CASE("sin, cos and tan near multiples of pi/2 are within the stated bound (double)") {
    check_near_multiples_of_half_pi<double>();
}
TEST_CASE("sin, cos and tan near multiples of pi/2 are within the stated bound (float)") {
    check_near_multiples_of_half_pi<float>();
}

}  // namespace
}  // namespace tapevm::conformance
