// The cpu device's backend: tensors in 64-byte-aligned host memory, kernels run when called
// (the stream is the call order itself, so synchronize() has nothing to wait for).
//
// Tour: backend.cpp (memory, dtypes, counters, zero/fill/copy, f32 views), parallel.hpp (threads
// over fixed blocks through vm_cpu's ThreadPool; F32View: f16/bf16 tensors as f32),
// row_functions.hpp with row_kernels_impl.hpp (xsimd row primitives, compiled for the baseline and
// for AVX2+FMA, chosen at run time), matmul.cpp (OpenBLAS cblas_sgemm), reductions.cpp (bias_add,
// add_assign, reduce_sum, transpose_2d, global_norm_squared), embedding.cpp, softmax.cpp (softmax
// and cross_entropy), norms.cpp (layer_norm, rms_norm), attention.cpp (flash-style attention, its
// backward, kv_attention), elementwise.* (tapes on the CPU VM, owned separately).
//
// dtypes: f32 is computed in place; f16 and bf16 are storage only: a kernel converts them
// to f32 (F32View), computes, and rounds the results on store. i32 holds ids and targets.
// Determinism: every reduction splits its work into blocks whose bounds depend on the shape
// only, never on the thread count, and sums block results in block order (bits may differ
// between instruction sets: TAPEVM_CPU_ISA=sse2 forces the baseline).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "../backend.hpp"  // the Backend interface (not this file)
#include "thread_pool.hpp"

namespace tapevm::nn::detail {

/// Host memory of the cpu device: `data` is 64-byte aligned and holds `bytes` bytes
/// (allocated rounded up to 64). Gives its bytes back to the owner's counters when freed.
struct CpuStorage final : Storage {
    ~CpuStorage() override;
    std::byte* data = nullptr;
    class CpuBackend* owner = nullptr;
};

/// The first byte of a cpu tensor.
inline std::byte* cpu_bytes(const Tensor& tensor) { return static_cast<CpuStorage&>(tensor.storage()).data; }
template <class T> T* cpu_data(const Tensor& tensor) { return reinterpret_cast<T*>(cpu_bytes(tensor)); }

class CpuBackend final : public Backend {
public:
    explicit CpuBackend(const CpuOptions& options);

    DeviceKind kind() const override { return DeviceKind::cpu; }
    std::string name() const override;
    bool supports(DType dtype) const override;
    bool supports_kernel(KernelId kernel, DType dtype) const override;

    std::shared_ptr<Storage> allocate(std::size_t bytes) override;
    void write(const Storage& storage, std::size_t offset, std::span<const std::byte> bytes) override;
    void read(const Storage& storage, std::size_t offset, std::span<std::byte> bytes) override;
    void synchronize() override {}
    StreamStats stream_stats() const override;
    std::uint64_t live_memory() const override { return live_.load(); }
    std::uint64_t peak_memory() const override { return peak_.load(); }
    void reset_peak_memory() override { peak_.store(live_.load()); }

    void zero(const Tensor& x) override;
    void fill(const Tensor& x, double value) override;
    void copy(const Tensor& src, const Tensor& dst) override;
    void matmul(const Tensor& a, const Tensor& b, const Tensor& c, const MatmulOptions& options) override;
    void bias_add(const Tensor& x, const Tensor& bias) override;
    void add_assign(const Tensor& dst, const Tensor& src, double alpha) override;
    void dropout(const Tensor& x, const Tensor& y, double p, std::uint64_t seed,
                 std::uint64_t stream) override;
    void reduce_sum(const Tensor& x, const Tensor& y, std::size_t outer, std::size_t n, std::size_t inner,
                    bool accumulate) override;
    void transpose_2d(const Tensor& x, const Tensor& y, std::size_t batch, std::size_t rows,
                      std::size_t cols) override;
    void softmax(const Tensor& x, const Tensor& y) override;
    void softmax_backward(const Tensor& y, const Tensor& dy, const Tensor& dx) override;
    void layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, const Tensor& y,
                    const Tensor& mean, const Tensor& rstd, double eps) override;
    void layer_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& gamma, const Tensor& mean,
                             const Tensor& rstd, const Tensor& dx, const Tensor& dgamma,
                             const Tensor& dbeta) override;
    void rms_norm(const Tensor& x, const Tensor& gamma, const Tensor& y, const Tensor& rstd,
                  double eps) override;
    void rms_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& gamma, const Tensor& rstd,
                           const Tensor& dx, const Tensor& dgamma) override;
    void embedding(const Tensor& ids, const Tensor& table, const Tensor& out) override;
    void embedding_backward(const Tensor& ids, const Tensor& dout, const Tensor& dtable) override;
    void cross_entropy(const Tensor& logits, const Tensor& targets, const Tensor& losses,
                       const Tensor& dlogits, std::int32_t pad_id, double dloss) override;
    void global_norm_squared(std::span<const Tensor> tensors, const Tensor& out) override;
    void attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out, const Tensor& lse,
                   double scale, bool causal) override;
    void attention_backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                            const Tensor& lse, const Tensor& dout, const Tensor& dq, const Tensor& dk,
                            const Tensor& dv, double scale, bool causal) override;
    void kv_attention(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache, const Tensor& out,
                      std::size_t past, double scale, bool causal) override;
    /// Both run the tape on the CPU VM (elementwise.hpp, owned by the elementwise part).
    void elementwise(const Tape& tape, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                     std::span<const double> params) override;
    void elementwise_backward(const Tape& tape, std::span<const Tensor> inputs,
                              std::span<const Tensor> output_grads, std::span<const Tensor> input_grads,
                              std::span<const double> params) override;

    /// The worker pool (shared by cpu devices of one thread count) and the number of threads
    /// a kernel may use, the caller included (>= 1).
    tapevm::cpu::detail::ThreadPool& pool() const { return *pool_; }
    unsigned threads() const { return threads_; }

    // For CpuStorage.
    void release(std::size_t bytes) { live_.fetch_sub(bytes); }

private:
    void count_kernel() { kernels_.fetch_add(1, std::memory_order_relaxed); }

    unsigned threads_;
    std::shared_ptr<tapevm::cpu::detail::ThreadPool> pool_;
    std::atomic<std::uint64_t> live_{0};
    std::atomic<std::uint64_t> peak_{0};
    std::atomic<std::uint64_t> kernels_{0};
};

}  // namespace tapevm::nn::detail
