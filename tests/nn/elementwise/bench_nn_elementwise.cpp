// bench_nn_elementwise: elementwise tapes on the cpu and gpu devices against the device's own
// copy bandwidth (bench/nn_elementwise.sh runs it on the H100; issue 19's target: >= 70% of
// copy bandwidth for memory-bound elementwise tapes and AdamW).
//
//   bench_nn_elementwise [--quick] [--json] [--device cpu|gpu|all] [--reps N]
//
// Each case: a warm-up call (which also compiles the gpu kernel), then `reps` timed runs of
// `inner` calls and one synchronize(); the median run's time per call. GB/s counts the bytes
// each call must read and write. The first case's result is checked against the reference
// device on a sample, so a fast wrong kernel cannot pass.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "tapevm/error.hpp"
#include "tapevm/nn/device.hpp"
#include "tapevm/nn/kernels.hpp"
#include "tapevm/nn/tensor.hpp"
#include "tapevm/var.hpp"

using namespace tapevm::nn;
using tapevm::Var;

namespace {

struct Settings {
    bool quick = false, json = false;
    std::string device = "all";
    int reps = 5;
};

double median_seconds(const Device& device, int reps, int inner, const std::function<void()>& call) {
    call();
    device.synchronize();
    std::vector<double> times;
    for (int r = 0; r < reps; ++r) {
        const auto start = std::chrono::steady_clock::now();
        for (int i = 0; i < inner; ++i) call();
        device.synchronize();
        times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() /
                        inner);
    }
    std::sort(times.begin(), times.end());
    return times[times.size() / 2];
}

void report(const Settings& settings, const std::string& device, const std::string& name, double seconds,
            double bytes, double copy_gbps) {
    const double gbps = bytes / seconds * 1e-9;
    std::printf("%-6s %-40s %10.4f ms %9.1f GB/s", device.c_str(), name.c_str(), seconds * 1e3, gbps);
    if (copy_gbps > 0) std::printf("  %5.1f%% of copy", 100 * gbps / copy_gbps);
    std::printf("\n");
    if (settings.json)
        std::printf(
            "{\"device\": \"%s\", \"case\": \"%s\", \"ms\": %.6f, \"gbps\": %.3f, \"of_copy\": %.4f}\n",
            device.c_str(), name.c_str(), seconds * 1e3, gbps, copy_gbps > 0 ? gbps / copy_gbps : 0.0);
    std::fflush(stdout);
}

tapevm::Tape gelu_tanh() {
    return tapevm::record(1, [](std::span<const Var> x) {
        const double k = std::sqrt(2.0 / 3.14159265358979323846);
        return 0.5 * x[0] * (1.0 + tanh(k * (x[0] + 0.044715 * x[0] * x[0] * x[0])));
    });
}

/// AdamW (w, g, m, v) -> (w', m', v') with params (lr, beta1, beta2, eps, weight decay,
/// 1 / (1 - beta1^t), 1 / (1 - beta2^t)).
tapevm::Tape adamw() {
    return tapevm::record(4, 7, [](std::span<const Var> x, std::span<const Var> p) {
        const Var m = p[1] * x[2] + (1.0 - p[1]) * x[1];
        const Var v = p[2] * x[3] + (1.0 - p[2]) * x[1] * x[1];
        const Var w = x[0] - p[0] * ((m * p[5]) / (sqrt(v * p[6]) + p[3]) + p[4] * x[0]);
        return std::vector<Var>{w, m, v};
    });
}

/// x * row + column: the three kinds of operand at once.
tapevm::Tape broadcast_fma() {
    return tapevm::record(3, [](std::span<const Var> x) { return x[0] * x[1] + x[2]; });
}

std::vector<float> ramp(std::size_t n, float scale) {
    std::vector<float> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = scale * static_cast<float>(std::sin(0.001 * double(i)));
    return v;
}

/// GELU's result on a sample of elements against the reference device: false when wrong.
bool check_gelu(const Tensor& x, const Tensor& y) {
    const std::vector<double> xs = x.to_double(), ys = y.to_double();
    const std::size_t n = std::min<std::size_t>(xs.size(), 4096);
    const Device reference = Device::reference();
    const Tensor xr = reference.upload({n}, std::span<const double>(xs.data(), n), DType::f64);
    const Tensor yr = reference.zeros({n}, DType::f64);
    const tapevm::Tape tape = gelu_tanh();
    elementwise(tape, std::span<const Tensor>(&xr, 1), std::span<const Tensor>(&yr, 1));
    const std::vector<double> want = yr.to_double();
    for (std::size_t i = 0; i < n; ++i)
        if (std::abs(ys[i] - want[i]) > 1e-2 * (std::abs(want[i]) + 1e-2)) return false;
    return true;
}

void run_device(const Settings& settings, const Device& device, const std::string& name) {
    const std::size_t n =
        settings.quick ? (std::size_t{1} << 18)
                       : (device.kind() == DeviceKind::gpu ? std::size_t{1} << 26 : std::size_t{1} << 23);
    const int inner = settings.quick ? 2 : (device.kind() == DeviceKind::gpu ? 20 : 3);
    const std::size_t cols = 1024, rows = n / cols;
    const Tensor a = device.upload({rows, cols}, std::span<const float>(ramp(n, 3)), DType::f32);
    const Tensor b = device.upload({rows, cols}, std::span<const float>(ramp(n, 0.5f)), DType::f32);
    const Tensor c = device.zeros({rows, cols}, DType::f32);
    const Tensor d = device.upload({rows, cols}, std::span<const float>(ramp(n, 0.25f)), DType::f32);
    const double copy_seconds = median_seconds(device, settings.reps, inner, [&] { copy(a, c); });
    const double copy_gbps = 8.0 * double(n) / copy_seconds * 1e-9;
    report(settings, name, "copy f32 (the anchor)", copy_seconds, 8.0 * double(n), 0);

    const tapevm::Tape gelu = gelu_tanh();
    const auto gelu_forward = [&](const Tensor& x, const Tensor& y) {
        elementwise(gelu, std::span<const Tensor>(&x, 1), std::span<const Tensor>(&y, 1));
    };
    report(settings, name, "gelu forward f32",
           median_seconds(device, settings.reps, inner, [&] { gelu_forward(a, c); }), 8.0 * double(n),
           copy_gbps);
    if (!check_gelu(a, c)) std::printf("%s: gelu forward f32 gives WRONG results\n", name.c_str());
    report(settings, name, "gelu backward f32 (dx += ...)",
           median_seconds(device, settings.reps, inner,
                          [&] {
                              elementwise_backward(gelu, std::span<const Tensor>(&a, 1),
                                                   std::span<const Tensor>(&b, 1),
                                                   std::span<const Tensor>(&d, 1));
                          }),
           16.0 * double(n), copy_gbps);
    if (device.supports(DType::f16)) {
        const Tensor h = device.upload({rows, cols}, std::span<const float>(ramp(n, 3)), DType::f16);
        const Tensor hy = device.zeros({rows, cols}, DType::f16);
        report(settings, name, "gelu forward f16",
               median_seconds(device, settings.reps, inner, [&] { gelu_forward(h, hy); }), 4.0 * double(n),
               copy_gbps);
    }
    const tapevm::Tape fma = broadcast_fma();
    const Tensor row = device.upload({cols}, std::span<const float>(ramp(cols, 1)), DType::f32);
    const Tensor column = device.upload({rows, 1}, std::span<const float>(ramp(rows, 1)), DType::f32);
    const Tensor fma_inputs[3] = {a, row, column};
    report(settings, name, "x * row + column f32",
           median_seconds(device, settings.reps, inner,
                          [&] { elementwise(fma, fma_inputs, std::span<const Tensor>(&c, 1)); }),
           8.0 * double(n), copy_gbps);
    // AdamW in place: reads w, g, m, v, writes w, m, v.
    const tapevm::Tape update = adamw();
    const Tensor w = device.upload({rows, cols}, std::span<const float>(ramp(n, 1)), DType::f32);
    const Tensor v = device.zeros({rows, cols}, DType::f32);
    const Tensor m = device.zeros({rows, cols}, DType::f32);
    const Tensor inputs[4] = {w, b, m, v}, outputs[3] = {w, m, v};
    const std::vector<double> params{1e-3, 0.9, 0.95, 1e-8, 0.1, 10.0, 20.0};
    report(
        settings, name, "adamw f32 in place",
        median_seconds(device, settings.reps, inner, [&] { elementwise(update, inputs, outputs, params); }),
        28.0 * double(n), copy_gbps);
}

}  // namespace

int main(int argc, char** argv) {
    Settings settings;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg == "--quick")
            settings.quick = true;
        else if (arg == "--json")
            settings.json = true;
        else if (arg == "--device" && i + 1 < argc)
            settings.device = argv[++i];
        else if (arg == "--reps" && i + 1 < argc)
            settings.reps = std::max(1, std::atoi(argv[++i]));
        else {
            std::fprintf(
                stderr, "usage: bench_nn_elementwise [--quick] [--json] [--device cpu|gpu|all] [--reps N]\n");
            return 2;
        }
    }
    try {
        if (settings.device != "gpu") run_device(settings, Device::cpu(), "cpu");
        if (settings.device != "cpu") {
            if (Device::gpu_available())
                run_device(settings, Device::gpu(), "gpu");
            else
                std::printf("gpu: no Vulkan device, skipped\n");
        }
    } catch (const tapevm::Error& error) {
        std::fprintf(stderr, "bench_nn_elementwise: %s\n", error.what());
        return 1;
    }
    return 0;
}
