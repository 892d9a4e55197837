// Helpers of the cpu device's tests: one kernel call ("case") written once as a function of
// an environment (device, dtype), run on the reference device (f64, inputs rounded to the
// dtype under test so both devices see the same values) and on the cpu device with 1 and 2
// threads; check_case compares the cpu's outputs with the reference's within a tolerance and
// requires bitwise equality between cpu runs (twice with 2 threads, once with 1).
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "tapevm/nn/device.hpp"
#include "tapevm/nn/kernels.hpp"
#include "tapevm/nn/tensor.hpp"

namespace tapevm::nn::test {

/// Where a case runs: the device, and the dtype under test (the reference stores f64
/// values rounded to that dtype).
struct Env {
    Device device;
    DType dtype;

    bool reference() const { return device.kind() == DeviceKind::reference; }
    DType storage() const { return reference() ? DType::f64 : dtype; }

    /// Values rounded to `rounding`, stored in f64 on the reference device, else in `stored`.
    Tensor upload_as(const Shape& shape, std::vector<double> values, DType rounding, DType stored) const {
        for (double& v : values) v = round_to(rounding, v);
        return device.upload(shape, std::span<const double>(values), reference() ? DType::f64 : stored);
    }
    /// A float tensor of the dtype under test holding `values`.
    Tensor values(const Shape& shape, std::vector<double> values) const {
        return upload_as(shape, std::move(values), dtype, dtype);
    }
    /// Uniform values in [low, high) from `seed`.
    Tensor random(const Shape& shape, std::uint64_t seed, double low = -1, double high = 1) const {
        std::mt19937_64 rng(seed);
        std::uniform_real_distribution<double> uniform(low, high);
        std::vector<double> v(element_count(shape));
        for (double& x : v) x = uniform(rng);
        return values(shape, std::move(v));
    }
    /// Statistics (accumulate dtype) holding random values in [low, high).
    Tensor random_stats(const Shape& shape, std::uint64_t seed, double low, double high) const {
        std::mt19937_64 rng(seed);
        std::uniform_real_distribution<double> uniform(low, high);
        std::vector<double> v(element_count(shape));
        for (double& x : v) x = uniform(rng);
        return upload_as(shape, std::move(v), DType::f32, device.accumulate_dtype());
    }
    Tensor zeros(const Shape& shape) const { return device.zeros(shape, storage()); }
    Tensor stats(const Shape& shape) const { return device.zeros(shape, device.accumulate_dtype()); }
    Tensor ids(const Shape& shape, const std::vector<std::int32_t>& values) const {
        return device.upload(shape, std::span<const std::int32_t>(values));
    }
};

/// `n` ids in [0, vocabulary) from `seed`.
inline std::vector<std::int32_t> random_ids(std::size_t n, std::int32_t vocabulary, std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::uniform_int_distribution<std::int32_t> uniform(0, vocabulary - 1);
    std::vector<std::int32_t> ids(n);
    for (std::int32_t& id : ids) id = uniform(rng);
    return ids;
}

/// One kernel call: runs it on `env` and returns the tensors to compare.
using CaseRun = std::function<std::vector<Tensor>(const Env& env)>;

/// Unit roundoff of a dtype's storage (what rounding one result on store may cost).
inline double unit_roundoff(DType dtype) {
    switch (dtype) {
        case DType::f16: return std::ldexp(1.0, -11);
        case DType::bf16: return std::ldexp(1.0, -8);
        case DType::f32: return std::ldexp(1.0, -24);
        default: return 0;
    }
}

inline Device cpu_device(unsigned threads) { return Device::cpu(CpuOptions{threads}); }

/// Runs `run` on the reference device and on the cpu device (2 threads twice, 1 thread once).
/// Each cpu value must lie within `tolerance` * max(1, |expected|) + a few units of roundoff
/// of the output's dtype times |expected| (f16/bf16: the tolerance is scaled by `narrow_factor`
/// for the rounded intermediates); cpu runs must agree bit for bit.
inline void check_case(const std::string& name, DType dtype, double tolerance, const CaseRun& run,
                       double narrow_factor = 4) {
    CAPTURE(name);
    CAPTURE(dtype_name(dtype));
    const std::vector<Tensor> expected = run(Env{Device::reference(), dtype});
    const std::vector<Tensor> actual = run(Env{cpu_device(2), dtype});
    const std::vector<Tensor> again = run(Env{cpu_device(2), dtype});
    const std::vector<Tensor> single = run(Env{cpu_device(1), dtype});
    REQUIRE(expected.size() == actual.size());
    const double tol = dtype == DType::f32 ? tolerance : tolerance * narrow_factor;
    for (std::size_t t = 0; t < expected.size(); ++t) {
        CAPTURE(t);
        const std::vector<double> e = expected[t].to_double();
        const std::vector<double> a = actual[t].to_double();
        REQUIRE(a.size() == e.size());
        const double u = 2 * unit_roundoff(actual[t].dtype());
        std::size_t failures = 0;
        for (std::size_t i = 0; i < e.size(); ++i) {
            const bool both_nan = std::isnan(e[i]) && std::isnan(a[i]);
            const bool same_inf = std::isinf(e[i]) && a[i] == e[i];
            const double bound = tol * std::fmax(1.0, std::fabs(e[i])) + u * std::fabs(e[i]);
            if (!both_nan && !same_inf && !(std::fabs(a[i] - e[i]) <= bound) && failures++ < 5) {
                FAIL_CHECK(name << " output " << t << " [" << i << "]: cpu " << a[i] << ", reference " << e[i]
                                << " (bound " << bound << ")");
            }
        }
        CHECK(failures == 0);
        CHECK_MESSAGE(actual[t].to_bytes() == again[t].to_bytes(),
                      name << " output " << t << ": not repeatable");
        CHECK_MESSAGE(actual[t].to_bytes() == single[t].to_bytes(),
                      name << " output " << t << ": 1 and 2 threads differ");
    }
}

}  // namespace tapevm::nn::test
