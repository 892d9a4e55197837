// SimdReal<Batch>: an xsimd batch that the example templates (tapevm/examples.hpp, mlp.hpp)
// accept as their number type T, so the native-simd baseline is the very same template
// vectorised over points. It adds what xsimd's batch lacks for that: arithmetic with double
// constants in either precision, and comparisons usable as a C++ bool.
//
// A comparison used as a bool holds when it holds on every lane. ba_residual branches on
// |r|^2 != 0; the benchmark's points never have r = 0, and every record is checked against
// the reference VM, which would catch a lane taking the other branch.
#pragma once

#include <xsimd/xsimd.hpp>

namespace tapevm::bench {

template <class Batch> class SimdReal {
public:
    using value_type = typename Batch::value_type;

    /// The lanes of a comparison; as a bool, true when every lane holds.
    struct Lanes {
        typename Batch::batch_bool_type mask;
        explicit operator bool() const { return xsimd::all(mask); }
    };

    SimdReal() = default;
    SimdReal(double constant) : lanes_(static_cast<value_type>(constant)) {}  // NOLINT: constants broadcast
    explicit SimdReal(const Batch& lanes) : lanes_(lanes) {}

    const Batch& lanes() const { return lanes_; }

    friend SimdReal operator+(const SimdReal& a, const SimdReal& b) { return SimdReal(a.lanes_ + b.lanes_); }
    friend SimdReal operator-(const SimdReal& a, const SimdReal& b) { return SimdReal(a.lanes_ - b.lanes_); }
    friend SimdReal operator*(const SimdReal& a, const SimdReal& b) { return SimdReal(a.lanes_ * b.lanes_); }
    friend SimdReal operator/(const SimdReal& a, const SimdReal& b) { return SimdReal(a.lanes_ / b.lanes_); }
    friend SimdReal operator-(const SimdReal& a) { return SimdReal(-a.lanes_); }
    friend Lanes operator!=(const SimdReal& a, const SimdReal& b) { return {a.lanes_ != b.lanes_}; }
    friend Lanes operator==(const SimdReal& a, const SimdReal& b) { return {a.lanes_ == b.lanes_}; }

    friend SimdReal sqrt(const SimdReal& a) { return SimdReal(xsimd::sqrt(a.lanes_)); }
    friend SimdReal sin(const SimdReal& a) { return SimdReal(xsimd::sin(a.lanes_)); }
    friend SimdReal cos(const SimdReal& a) { return SimdReal(xsimd::cos(a.lanes_)); }
    friend SimdReal exp(const SimdReal& a) { return SimdReal(xsimd::exp(a.lanes_)); }
    friend SimdReal tanh(const SimdReal& a) { return SimdReal(xsimd::tanh(a.lanes_)); }

private:
    Batch lanes_;
};

}  // namespace tapevm::bench
