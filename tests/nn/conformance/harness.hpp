// The nn conformance harness (ggml test-backend-ops style): one table of cases, written once,
// run on every device under test against the f64 reference device.
//
// A Case runs one kernel on a Context (a device and the dtype under test) and returns its
// outputs downloaded as doubles. The harness runs each case on Device::reference() (f64
// tensors holding the same inputs, rounded to the dtype under test) and twice on the device
// under test (the two runs must agree bitwise: determinism), then compares element by element:
//
//   |device - reference| <= tolerance * (depth * u_f32 + store_roundings * u_dtype) * scale
//                           + u_stored * |reference| + half a subnormal step  (when stored in f16 or bf16)
//
// where the case gives, per output, `scale` (per element: |A||B| for matmul, a row's scale for
// row kernels), `depth` (roundings the f32 arithmetic may accumulate: K for matmul, about
// log2(row length) for rows) and `store_roundings` (intermediate roundings to the storage dtype,
// e.g. attention's probabilities on tensor cores). Exact outputs (copies, gathers) must equal
// the reference rounded to the stored dtype. A combination the device lacks (supports(),
// supports_kernel() false, or Unsupported thrown) is SKIPPED and counted as such.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <map>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "backend.hpp"
#include "tapevm/nn/device.hpp"
#include "tapevm/nn/kernels.hpp"
#include "tapevm/nn/tensor.hpp"

namespace tapevm::nn::conformance {

using detail::KernelId;

/// One output tensor of a case, downloaded. Tolerance fields are read from the reference run.
struct Output {
    std::string name;
    std::vector<double> values;
    DType stored = DType::f64;  // the tensor's dtype on the device that ran it
    std::vector<double> scale;  // per element; empty: |reference value|
    double depth = 1;
    double store_roundings = 0;
    bool exact = false;
};

/// Where a case runs: a device, the dtype under test, and a deterministic source of inputs.
/// On the reference device float tensors are f64 but hold values rounded to the dtype under
/// test, so both runs see the same numbers.
class Context {
public:
    Context(Device device, DType tested, std::uint64_t seed);

    const Device& device() const { return device_; }
    bool is_reference() const { return device_.kind() == DeviceKind::reference; }
    /// The dtype under test (f32, f16, bf16).
    DType tested() const { return tested_; }
    /// The device's dtype for a tensor that the device under test stores as `dtype`.
    DType storage(DType dtype) const { return is_reference() ? DType::f64 : dtype; }

    /// n values uniform in [lo, hi), rounded to `round` (default: the dtype under test).
    std::vector<double> random(std::size_t n, double lo = -1, double hi = 1);
    std::vector<double> random(std::size_t n, double lo, double hi, DType round);
    /// n ids uniform in [0, count).
    std::vector<std::int32_t> random_ids(std::size_t n, std::int32_t count);

    /// `values` rounded to `dtype` (default: tested) and uploaded in storage(dtype).
    Tensor upload(const Shape& shape, const std::vector<double>& values) const;
    Tensor upload(const Shape& shape, const std::vector<double>& values, DType dtype) const;
    /// Statistics (mean, rstd, lse): rounded to f32, in the device's accumulate dtype.
    Tensor upload_stats(const Shape& shape, const std::vector<double>& values) const;
    Tensor upload_ids(const Shape& shape, const std::vector<std::int32_t>& ids) const;
    Tensor empty(const Shape& shape) const { return device_.empty(shape, storage(tested_)); }
    Tensor empty_stats(const Shape& shape) const { return device_.empty(shape, device_.accumulate_dtype()); }

    /// `tensor` downloaded (waits for the kernels), with the tolerance fields to fill in.
    Output output(std::string name, const Tensor& tensor) const;

private:
    Device device_;
    DType tested_;
    std::uint64_t state_;
};

struct Case {
    KernelId kernel = KernelId::count;
    std::string label;  // "NT 7x65x16 batch 3 alpha 0.5 beta 1"
    std::function<std::vector<Output>(Context&)> run;
    std::vector<DType> dtypes = {DType::f32, DType::f16, DType::bf16};
    double tolerance = 4;  // the constant c of the bound
};

/// The table. `sweep`: the full shape table (1, 7, 16, 63, 64, 65, 127, 129, 384,
/// 385, 1000 per dimension); otherwise a CI subset that still reaches every code path.
void add_memory_cases(std::vector<Case>& cases, bool sweep);
void add_matmul_cases(std::vector<Case>& cases, bool sweep);
void add_row_cases(std::vector<Case>& cases, bool sweep);
void add_token_cases(std::vector<Case>& cases, bool sweep);
void add_attention_cases(std::vector<Case>& cases, bool sweep);
void add_elementwise_cases(std::vector<Case>& cases, bool sweep);
const std::vector<Case>& all_cases(bool sweep);

/// Outcome counts for one kernel x device x dtype.
struct Tally {
    std::size_t passed = 0;
    std::size_t failed = 0;
    std::size_t skipped = 0;
};
using TallyKey = std::tuple<KernelId, std::string, DType>;  // kernel, device kind name, dtype

struct Settings {
    bool sweep = false;
    bool verbose = false;
    std::vector<std::string> devices;  // "cpu", "gpu"
    /// Multiplies every bound (TAPEVM_NN_TOLERANCE_SCALE): 0.001 shows that the comparison bites.
    double tolerance_scale = 1;
};
Settings& settings();
std::map<TallyKey, Tally>& tallies();

/// Runs every case of `kernel` on `device`; returns failure messages (empty: all passed or
/// skipped). Prints SKIPPED and FAILED lines to stdout.
std::vector<std::string> run_kernel_cases(KernelId kernel, const Device& device);

/// The devices under test named by settings().devices (gpu with the validation layer on),
/// made once; release_devices() drops them (before exit: a GPU device must go before the
/// Vulkan context that vm_gpu keeps in a static).
std::vector<Device> devices_under_test();
void release_devices();

/// Summary table (kernel x device x dtype: passed/failed/skipped) for people.
void print_summary(std::ostream& out);
/// The coverage table as markdown (docs/nn_coverage.md).
void write_coverage(std::ostream& out, const std::string& command);

/// Its arguments' text joined (a stream: g++ 12 at -O3 misreports -Wrestrict on "literal" + string).
template <class... Parts> std::string text(const Parts&... parts) {
    std::ostringstream out;
    (out << ... << parts);
    return out.str();
}

/// Small helpers the cases share.
double u_of(DType dtype);
std::size_t ceil_log2(std::size_t n);

}  // namespace tapevm::nn::conformance
