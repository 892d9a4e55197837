// The reference VM against itself: in double every result must be bit for bit the
// reference's (0 ulp, exact derivatives). In float the reference VM runs the same formulas in
// float with the C library's float functions; its values are compared with its own double
// results rounded to float, which bounds glibc's float functions:
//   exact ops 0 ulp except Fma (1 ulp: fmaf rounds once, the double fma rounded to float twice);
//   transcendentals 2 ulp (measured on the edge-case grid and the random points: 1 ulp,
//   except sinhf, 2 ulp at -0.7257541).
// Derivatives in float match the float reference exactly (the same computation).
#include <memory>

#include "backend.hpp"
#include "tapevm/reference.hpp"

namespace tapevm::conformance {

BackendUnderTest backend_under_test() {
    BackendUnderTest b;
    b.name = "reference";
    b.make = [](const Tape& tape) -> std::unique_ptr<Evaluator> {
        return std::make_unique<reference::Vm>(tape);
    };
    b.f64.arithmetic_ulp = 0;
    b.f64.transcendental_ulp = 0;
    b.f64.derivatives = {0, 0};
    b.f64.tapes = {0, 0};
    b.f32.arithmetic_ulp = 0;
    b.f32.value_ulp[Op::Fma] = 1;
    // Digamma is a formula of the op table (recurrence, series, reflection), evaluated in float:
    // within 4 ulp of the double result (tests/gpu_math), not 2.
    b.f32.value_ulp[Op::Digamma] = 4;
    b.f32.transcendental_ulp = 2;
    b.f32.derivatives = {0, 0};
    b.f32.tapes = {0, 0};
    return b;
}

}  // namespace tapevm::conformance
