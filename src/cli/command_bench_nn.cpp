// tapevm bench-nn: the performance mode of the nn kernel set (issue 19's targets).
//
// Times each kernel on the GPT shapes and the anchor shapes on one device, and prints per kernel
// and shape the median time, TFLOP/s (matmul, attention) or GB/s (memory-bound kernels), the
// device's own copy bandwidth measured in the same run (nn::copy of 256 MiB: on the GPU, our
// Vulkan copy) and the cost of one small dispatch inside a stream of 250. On the CPU device it
// also times OpenBLAS's sgemm called directly and a memcpy of the same bytes, the baselines of
// the CPU targets. Every record is a median of --repeats measurements; each measurement records
// enough calls of the kernel to run for a few milliseconds, then waits (Device::synchronize)
// and divides. Inputs are checked for nothing here: the conformance suite
// (tests/nn/conformance) checks the same kernels.
#include <algorithm>
#include "cpu/cblas.hpp"
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <iomanip>
#include <sstream>
#include <string>
#include <vector>

#include "arguments.hpp"
#include "commands.hpp"
#include "tapevm/nn/device.hpp"
#include "tapevm/nn/kernels.hpp"
#include "tapevm/var.hpp"

namespace tapevm::cli {
namespace {

using namespace tapevm::nn;

constexpr std::string_view help =
    R"(usage: tapevm bench-nn [--device cpu|gpu] [--dtype f32,f16,bf16] [--only K1,K2]
                       [--repeats R] [--quick] [--sweep] [--json FILE]

Times the nn kernels (tapevm::nn) on one device: per kernel and shape the median time,
TFLOP/s for matmul and attention, GB/s for the memory-bound kernels (bytes read + written
once), next to the device's own copy bandwidth measured in the same run, and the cost of one
small dispatch inside a stream of 250 (250 tiny kernels recorded, one wait, divided).
Shapes (issue 19): GPT tokens M = 16384 (64 x 256), d = 384, K,N in {384, 1152, 1536} in
NN (forward), NT (input gradient) and TN (weight gradient); matmul 4096^3 and 8192^3;
attention B 64, H 6, T 256, D 64 forward and backward; layer_norm, rms_norm, softmax on
[16384, 384], cross-entropy on [16384, 65]; AdamW over 16M parameters as an elementwise tape.
On the CPU device also OpenBLAS sgemm called directly and a memcpy of the same bytes.

options:
  --device D      cpu or gpu (default gpu when a Vulkan device exists, else cpu)
  --dtype LIST    f32, f16, bf16 or all (default f32,f16)
  --only LIST     only these groups: copy, dispatch, matmul, gpt, attention, rows, ce, adamw, gelu
  --repeats R     measurements per record; the median counts (default 7)
  --quick         the same kernels on small shapes (a smoke test: M 1024, matmul 512^3, B 2)
  --sweep         also matmul at every size of the conformance table's list (n^3, f32)
  --json FILE     also write the records as JSON
)";

constexpr OptionSpec options[] = {{"--device", true},  {"--dtype", true},  {"--only", true},
                                  {"--repeats", true}, {"--quick", false}, {"--sweep", false},
                                  {"--json", true},    {"--help", false}};

struct Record {
    std::string group, kernel, shape, dtype;
    double seconds = 0;  // median per call
    double flops = 0;    // per call (0: memory-bound)
    double bytes = 0;    // per call, read + written once
};

std::vector<std::string> split(std::string_view text) {
    std::vector<std::string> parts;
    std::size_t start = 0;
    while (start <= text.size()) {
        const std::size_t comma = std::min(text.find(',', start), text.size());
        if (comma > start) parts.emplace_back(text.substr(start, comma - start));
        start = comma + 1;
    }
    return parts;
}

double now() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

/// Median seconds per call of `call` (recorded into `device`'s stream, then one wait).
double time_calls(const Device& device, const std::function<void()>& call, std::size_t repeats) {
    call();  // warm-up: pipelines, first-touch memory
    device.synchronize();
    // Then 0.2 s of the call back to back: a GPU that idled while the host prepared the inputs
    // runs at a fraction of its clock until the load ramps it up again (on the H100, attention
    // measured 4x slower after the host had filled the previous record's tensors).
    for (const double warm = now(); now() - warm < 0.2;) {
        call();
        device.synchronize();
    }
    double start = now();
    call();
    device.synchronize();
    const double once = std::max(now() - start, 1e-7);
    const auto calls = static_cast<std::size_t>(std::clamp(0.005 / once, 1.0, 1000.0));
    std::vector<double> samples;
    for (std::size_t r = 0; r < repeats; ++r) {
        start = now();
        for (std::size_t i = 0; i < calls; ++i) call();
        device.synchronize();
        samples.push_back((now() - start) / static_cast<double>(calls));
    }
    std::sort(samples.begin(), samples.end());
    return samples[samples.size() / 2];
}

/// Median seconds of a host function (OpenBLAS, memcpy).
double time_host(const std::function<void()>& call, std::size_t repeats) {
    call();
    std::vector<double> samples;
    for (std::size_t r = 0; r < repeats; ++r) {
        const double start = now();
        call();
        samples.push_back(now() - start);
    }
    std::sort(samples.begin(), samples.end());
    return samples[samples.size() / 2];
}

/// A tensor of uniform values in [-1, 1) (random bits: a GPU's power draw, and so its clock,
/// depends on the data; zeros or constants run faster than training data).
Tensor filled(const Device& device, Shape shape, DType dtype) {
    std::vector<float> host(element_count(shape));
    std::uint64_t state = 0x9E3779B97F4A7C15ull ^ host.size();
    for (float& value : host) {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        value = static_cast<float>(static_cast<double>(state >> 11) * 0x1.0p-52 - 1.0);
    }
    return device.upload(std::move(shape), std::span<const float>(host), dtype);
}

DType parse_dtype(std::string_view name) {
    if (name == "f32") return DType::f32;
    if (name == "f16") return DType::f16;
    if (name == "bf16") return DType::bf16;
    throw UsageError("bench-nn: unknown dtype '" + std::string(name) + "' (f32, f16, bf16)");
}

/// The AdamW update as one elementwise tape: inputs p, g, m, v; outputs p, m, v (in place);
/// parameters lr, beta1, beta2, eps, weight decay, 1 - beta1^t, 1 - beta2^t.
Tape adamw_tape() {
    return tapevm::record(4, 7, [](std::span<const Var> x, std::span<const Var> k) {
        const Var m = k[1] * x[2] + (1.0 - k[1]) * x[1];
        const Var v = k[2] * x[3] + (1.0 - k[2]) * x[1] * x[1];
        const Var p = x[0] - k[0] * ((m / k[5]) / (sqrt(v / k[6]) + k[3]) + k[4] * x[0]);
        return std::vector<Var>{p, m, v};
    });
}

Tape gelu_tape() {
    return tapevm::record(1, [](std::span<const Var> x) {
        return 0.5 * x[0] * (1 + tanh(0.7978845608028654 * (x[0] + 0.044715 * x[0] * x[0] * x[0])));
    });
}

void write_json(const std::vector<Record>& records, const std::string& device, std::ostream& out);

class Runner {
public:
    Runner(Device device, std::size_t repeats, bool quick, std::ostream& err)
        : device_(std::move(device)), repeats_(repeats), quick_(quick), err_(err) {}

    std::vector<Record> records;
    /// Called after each record (writes the JSON file so far: a run stopped by a time limit
    /// keeps what it measured).
    std::function<void(const std::vector<Record>&)> on_record;

    void add(Record record) {
        err_ << "  " << record.kernel << " " << record.shape << " " << record.dtype << ": " << std::fixed
             << std::setprecision(3) << record.seconds * 1e3 << " ms\n"
             << std::defaultfloat;
        records.push_back(std::move(record));
        if (on_record) on_record(records);
    }

    void time(const std::string& group, const std::string& kernel, const std::string& shape, DType dtype,
              double flops, double bytes, const std::function<void()>& call) {
        add({group, kernel, shape, std::string(dtype_name(dtype)), time_calls(device_, call, repeats_), flops,
             bytes});
    }

    void copy_bandwidth() {
        const std::size_t n = quick_ ? (16u << 20) / 4 : (256u << 20) / 4;
        const Tensor src = filled(device_, {n}, DType::f32), dst = filled(device_, {n}, DType::f32);
        time("copy", "copy", "[" + std::to_string(n) + "]", DType::f32, 0, 2.0 * 4 * static_cast<double>(n),
             [&] { copy(src, dst); });
        if (device_.kind() == DeviceKind::cpu) {
            std::vector<float> a(n, 1.0f), b(n);
            add({"copy", "memcpy (host)", "[" + std::to_string(n) + "]", "f32",
                 time_host([&] { std::memcpy(b.data(), a.data(), n * 4); }, repeats_), 0,
                 2.0 * 4 * static_cast<double>(n)});
        }
    }

    void small_dispatch() {
        const Tensor x = filled(device_, {64}, DType::f32), y = filled(device_, {64}, DType::f32);
        const auto call = [&] {
            for (int i = 0; i < 250; ++i) add_assign(x, y, 1e-3);
        };
        Record record{"dispatch",
                      "add_assign x250 (per kernel)",
                      "[64]",
                      "f32",
                      time_calls(device_, call, repeats_) / 250,
                      0,
                      0};
        add(record);
    }

    void matmul_one(const std::string& group, std::size_t m, std::size_t n, std::size_t k, bool ta, bool tb,
                    DType dtype) {
        const Tensor a = filled(device_, ta ? Shape{k, m} : Shape{m, k}, dtype);
        const Tensor b = filled(device_, tb ? Shape{n, k} : Shape{k, n}, dtype);
        const Tensor c = filled(device_, {m, n}, DType::f32);
        const std::string layout = std::string(ta ? "T" : "N") + (tb ? "T" : "N");
        const std::string shape =
            layout + " " + std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k);
        const double flops = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
        time(group, "matmul", shape, dtype, flops, 0, [&] { matmul(a, b, c, {ta, tb, 1, 0}); });
        if (device_.kind() == DeviceKind::cpu && dtype == DType::f32) {
            std::vector<float> ha(m * k, 0.01f), hb(k * n, 0.01f), hc(m * n);
            const auto blas = [&] {
                openblas_set_num_threads(openblas_get_num_procs());  // OpenBLAS's own threads, all of them
                cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                            static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), 1.0f, ha.data(),
                            static_cast<int>(ta ? m : k), hb.data(), static_cast<int>(tb ? k : n), 0.0f,
                            hc.data(), static_cast<int>(n));
            };
            add({group, "openblas sgemm (direct)", shape, "f32", time_host(blas, repeats_), flops, 0});
        }
    }

    void gpt_matmuls(DType dtype) {
        const std::size_t tokens = quick_ ? 1024 : 16384;
        // (K, N) of the GPT's forward matmuls: attention projection, qkv, MLP up, MLP down.
        const std::pair<std::size_t, std::size_t> layers[] = {
            {384, 384}, {384, 1152}, {384, 1536}, {1536, 384}};
        for (const auto& [k, n] : layers) {
            matmul_one("gpt", tokens, n, k, false, false, dtype);  // forward: X W
            matmul_one("gpt", tokens, k, n, false, true, dtype);   // input gradient: dY W^T
            matmul_one("gpt", k, n, tokens, true, false, dtype);   // weight gradient: X^T dY
        }
    }

    void square_matmuls(DType dtype, bool sweep) {
        std::vector<std::size_t> sizes =
            quick_ ? std::vector<std::size_t>{512} : std::vector<std::size_t>{4096, 8192};
        if (device_.kind() == DeviceKind::cpu && !quick_)
            sizes = {1024, 2048};  // 8192^3 is minutes on a few cores
        if (sweep) {
            for (const std::size_t n : {1, 7, 16, 63, 64, 65, 127, 129, 384, 385, 1000}) sizes.push_back(n);
        }
        for (const std::size_t n : sizes) matmul_one("matmul", n, n, n, false, false, dtype);
    }

    void attention_pair(DType dtype) {
        const std::size_t b = quick_ ? 2 : 64, h = 6, t = 256, d = 64;
        const Shape qs = {b, t, h, d};
        const Tensor q = filled(device_, qs, dtype), k = filled(device_, qs, dtype),
                     v = filled(device_, qs, dtype);
        const Tensor out = filled(device_, qs, dtype), dout = filled(device_, qs, dtype);
        const Tensor lse = device_.empty({b, h, t}, device_.accumulate_dtype());
        const Tensor dq = filled(device_, qs, dtype), dk = filled(device_, qs, dtype),
                     dv = filled(device_, qs, dtype);
        const std::string shape = "B" + std::to_string(b) + " H6 T256 D64 causal";
        // Causal: half the score matrix. Forward 2 matmuls of 2*T*T*D, backward 5 (FA-2 recomputes S).
        const double half =
            0.5 * static_cast<double>(b * h) * static_cast<double>(t * t) * static_cast<double>(d);
        time("attention", "attention", shape, dtype, 4 * half, 0, [&] { attention(q, k, v, out, lse); });
        time("attention", "attention_backward", shape, dtype, 10 * half, 0,
             [&] { attention_backward(q, k, v, out, lse, dout, dq, dk, dv); });
    }

    void rows(DType dtype) {
        const std::size_t r = quick_ ? 1024 : 16384, n = 384;
        const double size = static_cast<double>(r * n * dtype_size(dtype));
        const std::string shape = "[" + std::to_string(r) + ", 384]";
        const Tensor x = filled(device_, {r, n}, dtype), y = filled(device_, {r, n}, dtype);
        const Tensor dy = filled(device_, {r, n}, dtype), dx = filled(device_, {r, n}, dtype);
        const Tensor gamma = filled(device_, {n}, dtype), beta = filled(device_, {n}, dtype);
        const Tensor dgamma = filled(device_, {n}, dtype), dbeta = filled(device_, {n}, dtype);
        const Tensor mean = device_.empty({r}, device_.accumulate_dtype()),
                     rstd = device_.empty({r}, device_.accumulate_dtype());
        time("rows", "layer_norm", shape, dtype, 0, 2 * size,
             [&] { layer_norm(x, gamma, beta, y, mean, rstd); });
        time("rows", "layer_norm_backward", shape, dtype, 0, 4 * size,
             [&] { layer_norm_backward(dy, x, gamma, mean, rstd, dx, dgamma, dbeta); });
        time("rows", "rms_norm", shape, dtype, 0, 2 * size, [&] { rms_norm(x, gamma, y, rstd); });
        time("rows", "rms_norm_backward", shape, dtype, 0, 4 * size,
             [&] { rms_norm_backward(dy, x, gamma, rstd, dx, dgamma); });
        time("rows", "softmax", shape, dtype, 0, 2 * size, [&] { softmax(x, y); });
        time("rows", "softmax_backward", shape, dtype, 0, 4 * size, [&] { softmax_backward(y, dy, dx); });
    }

    void cross_entropy_rows(DType dtype) {
        const std::size_t r = quick_ ? 1024 : 16384, v = 65;
        const Tensor logits = filled(device_, {r, v}, dtype), dlogits = filled(device_, {r, v}, dtype);
        std::vector<std::int32_t> ids(r);
        for (std::size_t i = 0; i < r; ++i) ids[i] = static_cast<std::int32_t>(i % v);
        const Tensor targets = device_.upload({r}, std::span<const std::int32_t>(ids));
        const Tensor losses = device_.empty({r}, device_.accumulate_dtype());
        const double size = static_cast<double>(r * v * dtype_size(dtype));
        time("ce", "cross_entropy (+dlogits)", "[" + std::to_string(r) + ", 65]", dtype, 0, 2 * size,
             [&] { cross_entropy(logits, targets, losses, dlogits, -1, 1.0 / static_cast<double>(r)); });
    }

    void adamw() {
        const std::size_t n = quick_ ? (1u << 20) : (16u << 20);
        const Tape tape = adamw_tape();
        const Tensor p = filled(device_, {n}, DType::f32), g = filled(device_, {n}, DType::f32);
        const Tensor m = filled(device_, {n}, DType::f32), v = filled(device_, {n}, DType::f32);
        fill(v, 1e-4);  // a second moment is not negative
        const std::vector<double> params = {1e-3, 0.9, 0.95, 1e-8, 0.1, 0.1, 0.05};
        const std::vector<Tensor> inputs = {p, g, m, v}, outputs = {p, m, v};
        time("adamw", "adamw (elementwise tape)", "[" + std::to_string(n) + "]", DType::f32, 0,
             7.0 * 4 * static_cast<double>(n), [&] { elementwise(tape, inputs, outputs, params); });
    }

    void gelu(DType dtype) {
        const std::size_t r = quick_ ? 1024 : 16384, n = 1536;
        const Tape tape = gelu_tape();
        const Tensor x = filled(device_, {r, n}, dtype), y = filled(device_, {r, n}, dtype);
        const Tensor dy = filled(device_, {r, n}, dtype), dx = filled(device_, {r, n}, dtype);
        const std::vector<Tensor> in = {x}, out = {y}, og = {dy}, ig = {dx};
        const double size = static_cast<double>(r * n * dtype_size(dtype));
        const std::string shape = "[" + std::to_string(r) + ", 1536]";
        time("gelu", "gelu (elementwise tape)", shape, dtype, 0, 2 * size,
             [&] { elementwise(tape, in, out); });
        time("gelu", "gelu backward (tape vjp)", shape, dtype, 0, 4 * size,
             [&] { elementwise_backward(tape, in, og, ig); });
    }

private:
    Device device_;
    std::size_t repeats_;
    bool quick_;
    std::ostream& err_;
};

double copy_gbps(const std::vector<Record>& records) {
    for (const Record& r : records)
        if (r.kernel == "copy" && r.seconds > 0) return r.bytes / r.seconds / 1e9;
    return 0;
}

void print_table(const std::vector<Record>& records, const std::string& device, std::ostream& out) {
    const double copy = copy_gbps(records);
    out << "nn kernels on " << device << " (median per call; GB/s: bytes read + written once)\n";
    out << std::left << std::setw(30) << "kernel" << std::setw(28) << "shape" << std::setw(6) << "dtype"
        << std::right << std::setw(11) << "ms" << std::setw(10) << "TFLOP/s" << std::setw(10) << "GB/s"
        << std::setw(9) << "%copy" << '\n';
    for (const Record& r : records) {
        out << std::left << std::setw(30) << r.kernel << std::setw(28) << r.shape << std::setw(6) << r.dtype
            << std::right << std::fixed << std::setprecision(4) << std::setw(11) << r.seconds * 1e3
            << std::setprecision(2);
        if (r.flops > 0) {
            out << std::setw(10) << r.flops / r.seconds / 1e12;
        } else {
            out << std::setw(10) << "";
        }
        if (r.bytes > 0) {
            out << std::setw(10) << r.bytes / r.seconds / 1e9;
            if (copy > 0 && r.kernel != "copy") {
                out << std::setw(8) << std::setprecision(1) << 100 * r.bytes / r.seconds / 1e9 / copy << '%';
            }
        } else if (r.group == "dispatch") {
            out << "   " << std::setprecision(2) << r.seconds * 1e6 << " us per kernel";
        }
        out << std::defaultfloat << '\n';
    }
}

std::string json_string(const std::string& text) {
    std::string quoted = "\"";
    for (const char c : text) {
        if (c == '"' || c == '\\') quoted += '\\';
        quoted += c;
    }
    return quoted + "\"";
}

void write_json(const std::vector<Record>& records, const std::string& device, std::ostream& out) {
    out << "[\n";
    for (std::size_t i = 0; i < records.size(); ++i) {
        const Record& r = records[i];
        out << std::setprecision(9) << " {\"device\": " << json_string(device)
            << ", \"group\": " << json_string(r.group) << ", \"kernel\": " << json_string(r.kernel)
            << ", \"shape\": " << json_string(r.shape) << ", \"dtype\": " << json_string(r.dtype)
            << ", \"seconds\": " << r.seconds << ", \"flops\": " << r.flops << ", \"bytes\": " << r.bytes
            << ", \"tflops\": " << (r.flops > 0 ? r.flops / r.seconds / 1e12 : 0)
            << ", \"gbps\": " << (r.bytes > 0 ? r.bytes / r.seconds / 1e9 : 0) << "}"
            << (i + 1 < records.size() ? ",\n" : "\n");
    }
    out << "]\n";
}

int run(std::span<const std::string_view> args, std::ostream& out, std::ostream& err) {
    const Arguments arguments = parse_arguments("bench-nn", args, options);
    if (arguments.answered_help(help, out)) return 0;
    arguments.expect_positional(0, 0, "no arguments");
    std::string device_name = std::string(arguments.value("--device").value_or(""));
    if (device_name.empty()) device_name = Device::gpu_available() ? "gpu" : "cpu";
    if (device_name != "cpu" && device_name != "gpu") throw UsageError("bench-nn: --device is cpu or gpu");
    std::vector<DType> dtypes;
    const std::string dtype_text(arguments.value("--dtype").value_or("f32,f16"));
    for (const std::string& name : split(dtype_text == "all" ? "f32,f16,bf16" : dtype_text))
        dtypes.push_back(parse_dtype(name));
    const std::vector<std::string> only = split(arguments.value("--only").value_or(""));
    const auto want = [&](const std::string& group) {
        return only.empty() || std::find(only.begin(), only.end(), group) != only.end();
    };
    const std::size_t repeats =
        arguments.value("--repeats") ? parse_count("--repeats", *arguments.value("--repeats"), 1, 1000) : 7;
    const auto json_path = arguments.value("--json");
    if (json_path) {  // a bad path fails before minutes of measuring
        std::ofstream json{std::string(*json_path)};
        if (!json) throw Error("cannot write '" + std::string(*json_path) + "': " + std::strerror(errno));
    }

    const Device device = device_name == "gpu" ? Device::gpu() : Device::cpu();
    err << "bench-nn on " << device.name()
        << (device.has_cooperative_matrix() ? " (cooperative matrices)" : "") << '\n';
    Runner runner(device, repeats, arguments.has("--quick"), err);
    if (json_path) {
        runner.on_record = [&](const std::vector<Record>& records) {
            std::ofstream json{std::string(*json_path)};
            write_json(records, device.name(), json);
            if (!json) throw Error("cannot write '" + std::string(*json_path) + "'");
        };
    }
    // A kernel the device lacks for a dtype (Unsupported) is reported and left out.
    const auto guarded = [&](const std::string& what, const std::function<void()>& body) {
        try {
            body();
        } catch (const Unsupported& error) {
            err << "  skipped " << what << ": " << error.what() << '\n';
        }
    };
    if (want("copy")) guarded("copy", [&] { runner.copy_bandwidth(); });
    if (want("dispatch")) guarded("dispatch", [&] { runner.small_dispatch(); });
    for (const DType dtype : dtypes) {
        const std::string name(dtype_name(dtype));
        if (!device.supports(dtype)) {
            err << "  skipped " << name << ": the device does not store it\n";
            continue;
        }
        if (want("matmul"))
            guarded("matmul " + name, [&] { runner.square_matmuls(dtype, arguments.has("--sweep")); });
        if (want("gpt")) guarded("gpt matmuls " + name, [&] { runner.gpt_matmuls(dtype); });
        if (want("attention")) guarded("attention " + name, [&] { runner.attention_pair(dtype); });
        if (want("rows")) guarded("rows " + name, [&] { runner.rows(dtype); });
        if (want("ce")) guarded("cross_entropy " + name, [&] { runner.cross_entropy_rows(dtype); });
        if (want("gelu")) guarded("gelu " + name, [&] { runner.gelu(dtype); });
    }
    if (want("adamw")) guarded("adamw", [&] { runner.adamw(); });
    print_table(runner.records, device.name(), out);
    return 0;
}

}  // namespace

Command bench_nn_command() {
    return {"bench-nn", "time the nn kernels (matmul, attention, rows, AdamW): TFLOP/s, GB/s, dispatch cost",
            help, run};
}

}  // namespace tapevm::cli
