// bench_nn_cpu: the cpu device's kernels against their anchors on this machine (issue 19's
// CPU targets). Built with the tests, not run by them:
//
//   build/tests/nn/cpu/bench_nn_cpu [--threads N] [--repeats R] [--small]
//
// matmul: nn::matmul (f32, each layout) against cblas_sgemm called directly on the same
// buffers; target ratio <= 1.05. Row kernels (softmax, softmax_backward, layer_norm, rms_norm,
// cross_entropy, bias_add, add_assign): achieved bandwidth (bytes each must read and write)
// against nn::copy (a threaded memmove) moving the same bytes, timed alternately with the
// kernel; target >= 0.70. memcpy's single-thread figure is printed once for comparison. Each
// figure is the median of R timed runs after one warm-up (matmul and anchor alternate).
#include "cpu/cblas.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "tapevm/nn/device.hpp"
#include "tapevm/nn/kernels.hpp"

using namespace tapevm::nn;

namespace {

int repeats = 7;

double median_seconds(const std::function<void()>& body) {
    body();
    std::vector<double> times;
    for (int r = 0; r < repeats; ++r) {
        const auto start = std::chrono::steady_clock::now();
        body();
        times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    std::sort(times.begin(), times.end());
    return times[times.size() / 2];
}

// Medians of `first` and `second` timed alternately, after one warm-up of each.
std::pair<double, double> median_pair(const std::function<void()>& first,
                                      const std::function<void()>& second) {
    first();
    second();
    std::vector<double> a, b;
    for (int r = 0; r < repeats; ++r) {
        for (int which = 0; which < 2; ++which) {
            const auto start = std::chrono::steady_clock::now();
            (which == 0 ? first : second)();
            (which == 0 ? a : b)
                .push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
        }
    }
    std::sort(a.begin(), a.end());
    std::sort(b.begin(), b.end());
    return {a[a.size() / 2], b[b.size() / 2]};
}

Tensor random_tensor(const Device& device, const Shape& shape, std::uint64_t seed, double low = -1,
                     double high = 1) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<float> uniform(static_cast<float>(low), static_cast<float>(high));
    std::vector<float> values(element_count(shape));
    for (float& v : values) v = uniform(rng);
    return device.upload(shape, std::span<const float>(values), DType::f32);
}

void bench_matmul(const Device& cpu, std::size_t m, std::size_t n, std::size_t k, bool ta, bool tb) {
    Tensor a = random_tensor(cpu, ta ? Shape{k, m} : Shape{m, k}, 1);
    Tensor b = random_tensor(cpu, tb ? Shape{n, k} : Shape{k, n}, 2);
    Tensor c = cpu.zeros({m, n}, DType::f32);
    std::vector<float> ha(a.size()), hb(b.size()), hc(c.size());
    const std::vector<float> av = a.to_float(), bv = b.to_float();
    std::copy(av.begin(), av.end(), ha.begin());
    std::copy(bv.begin(), bv.end(), hb.begin());
    // Interleaved (ours, direct, ours, ...) so that drift in a shared machine's load hits both.
    const auto ours_run = [&] {
        matmul(a, b, c, {ta, tb, 1, 0});
        cpu.synchronize();
    };
    const auto direct_run = [&] {
        openblas_set_num_threads(openblas_get_num_procs());  // OpenBLAS's own threads, all of them
        cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                    static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), 1.f, ha.data(),
                    static_cast<int>(ta ? m : k), hb.data(), static_cast<int>(tb ? k : n), 0.f, hc.data(),
                    static_cast<int>(n));
    };
    const auto [ours, direct] = median_pair(ours_run, direct_run);
    const double flops = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
    std::printf(
        "matmul %-4s %5zu x %5zu x %5zu   nn %8.3f ms %7.1f GFLOP/s   cblas %8.3f ms %7.1f GFLOP/s   ratio "
        "%.3f\n",
        ta ? (tb ? "TT" : "TN") : (tb ? "NT" : "NN"), m, n, k, ours * 1e3, flops / ours * 1e-9, direct * 1e3,
        flops / direct * 1e-9, ours / direct);
}

}  // namespace

int main(int argc, char** argv) {
    unsigned threads = 0;
    bool small = false;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg == "--threads" && i + 1 < argc) {
            threads = static_cast<unsigned>(std::stoul(argv[++i]));
        } else if (arg == "--repeats" && i + 1 < argc) {
            repeats = std::max(1, std::stoi(argv[++i]));
        } else if (arg == "--small") {
            small = true;
        } else {
            std::fprintf(stderr, "usage: bench_nn_cpu [--threads N] [--repeats R] [--small]\n");
            return 2;
        }
    }
    const Device cpu = Device::cpu(CpuOptions{threads});
    std::printf("device: %s, median of %d runs\n", cpu.name().c_str(), repeats);

    // ---- matmul against cblas_sgemm -------------------------------------------------------------
    const std::size_t tokens = small ? 1024 : 4096;
    for (bool ta : {false, true}) {
        for (bool tb : {false, true})
            bench_matmul(cpu, small ? 256 : 1024, small ? 256 : 1024, small ? 256 : 1024, ta, tb);
    }
    bench_matmul(cpu, tokens, 1152, 384, false, false);  // GPT: qkv projection
    bench_matmul(cpu, tokens, 384, 1536, false, true);   // GPT: dx of the MLP's output
    bench_matmul(cpu, 1536, 384, tokens, true, false);   // GPT: dW (K = tokens)

    // ---- row kernels against copy bandwidth ---------------------------------------------------------
    const std::size_t rows = small ? 1024 : 8192, n = 1024;
    const std::size_t bytes = rows * n * sizeof(float);
    Tensor x = random_tensor(cpu, {rows, n}, 3, -4, 4);
    Tensor y = cpu.zeros({rows, n}, DType::f32);
    Tensor dy = random_tensor(cpu, {rows, n}, 4);
    Tensor dx = cpu.zeros({rows, n}, DType::f32);
    Tensor gamma = random_tensor(cpu, {n}, 5), beta = random_tensor(cpu, {n}, 6);
    Tensor mean = cpu.zeros({rows}, DType::f32), rstd = cpu.zeros({rows}, DType::f32);
    Tensor losses = cpu.zeros({rows}, DType::f32);
    std::vector<std::int32_t> target_values(rows);
    for (std::size_t r = 0; r < rows; ++r) target_values[r] = static_cast<std::int32_t>(r * 7 % n);
    Tensor targets = cpu.upload({rows}, std::span<const std::int32_t>(target_values));

    std::vector<float> src(rows * n, 1.f), dst(rows * n);
    const double memcpy_time = median_seconds([&] { std::memcpy(dst.data(), src.data(), bytes); });
    const double copy_time = median_seconds([&] {
        copy(x, y);
        cpu.synchronize();
    });
    std::printf("copy %zu MB: memcpy %.3f ms (%.1f GB/s), nn::copy %.3f ms (%.1f GB/s)\n", bytes >> 20,
                memcpy_time * 1e3, 2.0 * static_cast<double>(bytes) / memcpy_time * 1e-9, copy_time * 1e3,
                2.0 * static_cast<double>(bytes) / copy_time * 1e-9);

    struct RowKernel {
        const char* name;
        double tensors_moved;  // [rows][n] tensors read plus written
        std::function<void()> run;
    };
    const std::vector<RowKernel> kernels{
        {"softmax", 2, [&] { softmax(x, y); }},
        {"softmax_backward", 4, [&] { softmax_backward(y, dy, dx); }},
        {"layer_norm", 2, [&] { layer_norm(x, gamma, beta, y, mean, rstd); }},
        {"rms_norm", 2, [&] { rms_norm(x, gamma, y, rstd); }},
        {"cross_entropy (+dlogits)", 2, [&] { cross_entropy(x, targets, losses, y); }},
        {"bias_add", 2, [&] { bias_add(y, gamma); }},
        {"add_assign", 3, [&] { add_assign(y, dy, 0.5); }},
    };
    for (const RowKernel& kernel : kernels) {
        // The anchor, timed alternately with the kernel: nn::copy (threaded memmove) of a tensor
        // sized so that it reads and writes as many bytes as the kernel.
        const auto copy_elements =
            static_cast<std::size_t>(kernel.tensors_moved / 2 * static_cast<double>(rows * n));
        Tensor from = cpu.zeros({copy_elements}, DType::f32), to = cpu.zeros({copy_elements}, DType::f32);
        const auto [time, anchor] = median_pair(
            [&] {
                kernel.run();
                cpu.synchronize();
            },
            [&] {
                copy(from, to);
                cpu.synchronize();
            });
        const double moved = kernel.tensors_moved * static_cast<double>(bytes);
        std::printf("%-26s [%zu x %zu] %8.3f ms %7.1f GB/s   copy %8.3f ms %7.1f GB/s   vs copy %.2f\n",
                    kernel.name, rows, n, time * 1e3, moved / time * 1e-9, anchor * 1e3,
                    moved / anchor * 1e-9, anchor / time);
    }
    return 0;
}
