// The CPU VM (tapevm::cpu::Vm) in the instruction set named by TAPEVM_CPU_ISA (sse2, avx2,
// avx512; unset: the widest supported). Meson runs this executable once per instruction
// set; one the machine or the build lacks is skipped (exit 77), saying so.
//
// Tolerances (measured on the development machine, AMD EPYC with AVX-512, with every
// instruction set; the CPU VM uses xsimd's vector functions and falls back to the C library
// per lane near their edges):
//   values, double: exact ops 0 ulp (IEEE operations; fma with or without FMA hardware);
//     transcendentals 4 ulp against glibc, except Sin and Cos, 8 ulp, and Tan, 16 ulp: xsimd's
//     argument reduction gives 7 ulp on the tiny results at multiples of pi/2 (sin(pi)) and
//     11 ulp on tan's huge result at pi/2.
//   values, float: exact ops 0 ulp; transcendentals 4 ulp.
//   zeros: the reference's sign for every op (no exceptions).
//   derivatives of single ops: relative 1e-14 (double), 4e-6 (float); whole tapes: 1e-12
//     relative + 1e-12 absolute (double), 2e-5 + 2e-5 (float, widened by the float
//     reference's own error where a tape is ill-conditioned: modes.hpp).
#include <doctest/doctest.h>

#include "backend.hpp"
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
    for (const Op op : {Op::Sin, Op::Cos}) b.f64.value_ulp[op] = 8;
    b.f64.value_ulp[Op::Tan] = 16;
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

}  // namespace
}  // namespace tapevm::conformance
