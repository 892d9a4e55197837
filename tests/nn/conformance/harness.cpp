// The conformance harness's runner: contexts, comparison, tallies and the tables (harness.hpp).
#include "harness.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "tapevm/error.hpp"

namespace tapevm::nn::conformance {

// ---- Context --------------------------------------------------------------------------------

Context::Context(Device device, DType tested, std::uint64_t seed)
    : device_(std::move(device)), tested_(tested),
      state_(seed * 0x9E3779B97F4A7C15ull + 0x2545F4914F6CDD1Dull) {}

namespace {
std::uint64_t next(std::uint64_t& state) {  // splitmix64
    std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
}  // namespace

std::vector<double> Context::random(std::size_t n, double lo, double hi) {
    return random(n, lo, hi, tested_);
}

std::vector<double> Context::random(std::size_t n, double lo, double hi, DType round) {
    std::vector<double> values(n);
    for (double& value : values) {
        const double unit = static_cast<double>(next(state_) >> 11) * 0x1.0p-53;
        value = round_to(round, lo + (hi - lo) * unit);
    }
    return values;
}

std::vector<std::int32_t> Context::random_ids(std::size_t n, std::int32_t count) {
    std::vector<std::int32_t> ids(n);
    for (std::int32_t& id : ids)
        id = static_cast<std::int32_t>(next(state_) % static_cast<std::uint64_t>(count));
    return ids;
}

Tensor Context::upload(const Shape& shape, const std::vector<double>& values) const {
    return upload(shape, values, tested_);
}

Tensor Context::upload(const Shape& shape, const std::vector<double>& values, DType dtype) const {
    std::vector<double> rounded(values.size());
    std::transform(values.begin(), values.end(), rounded.begin(),
                   [&](double v) { return round_to(dtype, v); });
    return device_.upload(shape, std::span<const double>(rounded), storage(dtype));
}

Tensor Context::upload_stats(const Shape& shape, const std::vector<double>& values) const {
    std::vector<double> rounded(values.size());
    std::transform(values.begin(), values.end(), rounded.begin(),
                   [](double v) { return round_to(DType::f32, v); });
    return device_.upload(shape, std::span<const double>(rounded), device_.accumulate_dtype());
}

Tensor Context::upload_ids(const Shape& shape, const std::vector<std::int32_t>& ids) const {
    return device_.upload(shape, std::span<const std::int32_t>(ids), DType::i32);
}

Output Context::output(std::string name, const Tensor& tensor) const {
    Output out;
    out.name = std::move(name);
    out.values = tensor.to_double();
    out.stored = tensor.dtype();
    return out;
}

// ---- settings and tallies ---------------------------------------------------------------------

Settings& settings() {
    static Settings instance;
    return instance;
}

std::map<TallyKey, Tally>& tallies() {
    static std::map<TallyKey, Tally> instance;
    return instance;
}

double u_of(DType dtype) {
    switch (dtype) {
        case DType::f64: return 0x1.0p-53;
        case DType::f32: return 0x1.0p-24;
        case DType::f16: return 0x1.0p-11;
        case DType::bf16: return 0x1.0p-8;
        case DType::i32: return 0;
    }
    return 0;
}

std::size_t ceil_log2(std::size_t n) {
    std::size_t bits = 0;
    while ((std::size_t{1} << bits) < n) ++bits;
    return bits;
}

const std::vector<Case>& all_cases(bool sweep) {
    static const std::vector<Case> ci = [] {
        std::vector<Case> cases;
        add_memory_cases(cases, false);
        add_matmul_cases(cases, false);
        add_row_cases(cases, false);
        add_token_cases(cases, false);
        add_attention_cases(cases, false);
        add_elementwise_cases(cases, false);
        return cases;
    }();
    static const std::vector<Case> full = [] {
        std::vector<Case> cases;
        add_memory_cases(cases, true);
        add_matmul_cases(cases, true);
        add_row_cases(cases, true);
        add_token_cases(cases, true);
        add_attention_cases(cases, true);
        add_elementwise_cases(cases, true);
        return cases;
    }();
    return sweep ? full : ci;
}

namespace {
std::vector<Device>& made_devices() {
    static std::vector<Device> devices;
    return devices;
}
std::vector<std::string>& made_for() {
    static std::vector<std::string> names;
    return names;
}
}  // namespace

void release_devices() {
    made_devices().clear();
    made_for().clear();
}

std::vector<Device> devices_under_test() {
    std::vector<Device>& devices = made_devices();  // made once: a GPU device is expensive to create
    if (!devices.empty() && made_for() == settings().devices) return devices;
    devices.clear();
    made_for() = settings().devices;
    for (const std::string& name : settings().devices) {
        if (name == "cpu") {
            devices.push_back(Device::cpu());
        } else if (name == "gpu") {
            GpuOptions options;
            options.validation = true;
            devices.push_back(Device::gpu(options));
        } else if (name == "reference") {
            devices.push_back(Device::reference());
        } else {
            throw Error("conformance: unknown device '" + name + "' (cpu, gpu, reference)");
        }
    }
    return devices;
}

// ---- comparison -------------------------------------------------------------------------------

namespace {

std::string format(double value) {
    std::ostringstream text;
    text << std::setprecision(9) << value;
    return text.str();
}

/// The rounding error of a result below the dtype's smallest normal number: half the subnormal
/// spacing (f16: 2^-25, where results of 1e-5 have only a few bits).
double subnormal_half_step(DType dtype) {
    switch (dtype) {
        case DType::f16: return 0x1.0p-25;
        case DType::bf16: return 0x1.0p-134;
        default: return 0;
    }
}

/// Empty when `got` matches `want` within the bound, else what differs.
std::string compare(const Output& want, const Output& got, DType tested, double tolerance) {
    if (want.values.size() != got.values.size()) {
        return got.name + ": " + std::to_string(got.values.size()) + " values, reference has " +
               std::to_string(want.values.size());
    }
    const bool low = got.stored == DType::f16 || got.stored == DType::bf16;
    std::size_t bad = 0;
    std::string first;
    double worst_ratio = 0;
    for (std::size_t i = 0; i < want.values.size(); ++i) {
        const double w = want.values[i];
        const double g = got.values[i];
        bool ok;
        double bound = 0;
        if (!std::isfinite(w) || !std::isfinite(g)) {
            ok = (std::isnan(w) && std::isnan(g)) || w == g;
        } else if (want.exact) {
            ok = g == round_to(got.stored, w);
        } else {
            const double scale = want.scale.empty() ? std::fabs(w) : want.scale[i];
            bound = tolerance * settings().tolerance_scale *
                        (want.depth * u_of(DType::f32) + want.store_roundings * u_of(tested)) * scale +
                    (low ? u_of(got.stored) * std::fabs(w) + subnormal_half_step(got.stored) : 0) + 1e-300;
            ok = std::fabs(g - w) <= bound;
            if (bound > 0) worst_ratio = std::max(worst_ratio, std::fabs(g - w) / bound);
        }
        if (!ok) {
            if (bad == 0) {
                std::ostringstream text;  // (a stream: g++ 12's -Wrestrict misfires on "literal" + string)
                text << '[' << i << "] got " << format(g) << ", want " << format(w);
                if (want.exact) {
                    text << " (exact)";
                } else {
                    text << ", bound " << format(bound);
                }
                first = text.str();
            }
            ++bad;
        }
    }
    if (bad == 0) return {};
    std::ostringstream text;
    text << got.name << ": " << bad << " of " << want.values.size() << " elements off; first " << first;
    if (worst_ratio > 0) text << "; worst error/bound " << format(worst_ratio);
    return text.str();
}

bool bitwise_equal(const std::vector<Output>& a, const std::vector<Output>& b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
        if (a[i].values.size() != b[i].values.size()) return false;
        if (!a[i].values.empty() &&
            std::memcmp(a[i].values.data(), b[i].values.data(), a[i].values.size() * sizeof(double)) != 0)
            return false;
    }
    return true;
}

std::uint64_t seed_of(const Case& test_case) {
    std::uint64_t hash = 1469598103934665603ull;
    for (const char c : test_case.label) hash = (hash ^ static_cast<unsigned char>(c)) * 1099511628211ull;
    return hash ^ static_cast<std::uint64_t>(test_case.kernel);
}

}  // namespace

std::vector<std::string> run_kernel_cases(KernelId kernel, const Device& device) {
    std::vector<std::string> failures;
    const std::string device_name = device_kind_name(device.kind());
    const Device reference = Device::reference();
    for (const Case& test_case : all_cases(settings().sweep)) {
        if (test_case.kernel != kernel) continue;
        for (const DType dtype : test_case.dtypes) {
            Tally& tally = tallies()[{kernel, device_name, dtype}];
            const std::string what = std::string(detail::kernel_name(kernel)) + " " + test_case.label +
                                     " on " + device_name + " " + std::string(dtype_name(dtype));
            if (!device.supports(dtype) || !device.backend().supports_kernel(kernel, dtype)) {
                std::cout << "SKIPPED " << what << ": not supported (supports_kernel)\n";
                ++tally.skipped;
                continue;
            }
            std::vector<Output> want, got, again;
            try {
                Context ref_context(reference, dtype, seed_of(test_case));
                want = test_case.run(ref_context);
            } catch (const Unsupported& error) {
                std::cout << "SKIPPED " << what << ": the reference device: " << error.what() << '\n';
                ++tally.skipped;
                continue;
            } catch (const std::exception& error) {
                failures.push_back(what + ": the reference device threw: " + error.what());
                ++tally.failed;
                continue;
            }
            try {
                Context first(device, dtype, seed_of(test_case));
                got = test_case.run(first);
                Context second(device, dtype, seed_of(test_case));
                again = test_case.run(second);
            } catch (const Unsupported& error) {
                std::cout << "SKIPPED " << what << ": " << error.what() << '\n';
                ++tally.skipped;
                continue;
            } catch (const std::exception& error) {
                failures.push_back(what + ": threw: " + error.what());
                ++tally.failed;
                continue;
            }
            std::string message;
            if (want.size() != got.size()) {
                message = "outputs differ in number";
            } else {
                for (std::size_t i = 0; i < want.size(); ++i) {
                    const std::string difference = compare(want[i], got[i], dtype, test_case.tolerance);
                    if (!difference.empty()) message += (message.empty() ? "" : "; ") + difference;
                }
                if (message.empty() && !bitwise_equal(got, again))
                    message = "not deterministic: two runs differ";
            }
            if (message.empty()) {
                ++tally.passed;
                if (settings().verbose) std::cout << "passed  " << what << '\n';
            } else {
                ++tally.failed;
                failures.push_back(what + ": " + message);
            }
        }
    }
    for (const std::string& failure : failures) std::cout << "FAILED  " << failure << '\n';
    std::cout.flush();  // a run stopped by a time limit keeps what it found
    return failures;
}

// ---- tables -------------------------------------------------------------------------------------

namespace {

const DType table_dtypes[] = {DType::f32, DType::f16, DType::bf16};

std::vector<std::string> devices_in_tallies() {
    std::vector<std::string> names;
    for (const auto& [key, tally] : tallies()) {
        const std::string& name = std::get<1>(key);
        if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
    }
    return names;
}

std::string cell(const Tally& tally, bool markdown) {
    if (tally.passed + tally.failed + tally.skipped == 0) return "-";
    std::ostringstream text;
    if (markdown) {
        if (tally.failed > 0) {
            text << "**FAIL " << tally.failed << "**/" << tally.passed + tally.failed;
        } else if (tally.passed == 0) {
            text << "skipped";
        } else {
            text << "ok " << tally.passed;
        }
        if (tally.skipped > 0 && tally.passed + tally.failed > 0)
            text << " (" << tally.skipped << " skipped)";
    } else {
        text << tally.passed << "/" << tally.failed << "/" << tally.skipped;
    }
    return text.str();
}

}  // namespace

void print_summary(std::ostream& out) {
    const std::vector<std::string> devices = devices_in_tallies();
    out << "\nnn conformance summary (passed/failed/skipped)" << (settings().sweep ? ", full sweep" : "")
        << "\n";
    out << std::left << std::setw(22) << "kernel";
    for (const std::string& device : devices)
        for (const DType dtype : table_dtypes)
            out << std::setw(13) << (device + " " + std::string(dtype_name(dtype)));
    out << '\n';
    Tally total;
    for (std::size_t k = 0; k < static_cast<std::size_t>(KernelId::count); ++k) {
        const auto kernel = static_cast<KernelId>(k);
        out << std::setw(22) << detail::kernel_name(kernel);
        for (const std::string& device : devices) {
            for (const DType dtype : table_dtypes) {
                const auto found = tallies().find({kernel, device, dtype});
                const Tally tally = found == tallies().end() ? Tally{} : found->second;
                total.passed += tally.passed;
                total.failed += tally.failed;
                total.skipped += tally.skipped;
                out << std::setw(13) << cell(tally, false);
            }
        }
        out << '\n';
    }
    out << "total: " << total.passed << " passed, " << total.failed << " failed, " << total.skipped
        << " skipped\n"
        << std::right;
}

void write_coverage(std::ostream& out, const std::string& command) {
    const std::vector<std::string> devices = devices_in_tallies();
    out << "# nn kernel coverage\n\n"
           "Generated by the conformance harness (tests/nn/conformance) with\n`"
        << command
        << "`.\nEach cell counts the cases of that kernel, device and dtype compared with the f64 reference\n"
           "device (tolerances in tests/nn/conformance/harness.hpp; every case also runs twice and must\n"
           "agree bitwise): `ok N` all N passed, `skipped` the device does not offer it (reported, never\n"
           "counted as passed), `FAIL f/n` f of n failed. The gpu columns here are lavapipe (Mesa's CPU\n"
           "Vulkan: no cooperative matrices, so the tensor-core kernels are not among them); the H100\n"
           "run's table (bench/nn_gpu.sh, TAPEVM_NN_SWEEP=1) goes in bench/RESULTS.md.\n\n";
    out << "| kernel |";
    for (const std::string& device : devices)
        for (const DType dtype : table_dtypes) out << ' ' << device << ' ' << dtype_name(dtype) << " |";
    out << "\n|---|";
    for (std::size_t i = 0; i < devices.size() * 3; ++i) out << "---|";
    out << '\n';
    for (std::size_t k = 0; k < static_cast<std::size_t>(KernelId::count); ++k) {
        const auto kernel = static_cast<KernelId>(k);
        out << "| " << detail::kernel_name(kernel) << " |";
        for (const std::string& device : devices) {
            for (const DType dtype : table_dtypes) {
                const auto found = tallies().find({kernel, device, dtype});
                out << ' ' << cell(found == tallies().end() ? Tally{} : found->second, true) << " |";
            }
        }
        out << '\n';
    }
}

}  // namespace tapevm::nn::conformance
