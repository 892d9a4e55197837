// The reference device's backend: host memory, f64 (and i32) only, every kernel a plain
// single-threaded loop over doubles that reads like the math (llm.c's train_gpt2.c style).
// It is the oracle the other devices are compared with, so it is written to be obviously
// right, not fast. The front end (kernels.cpp) has checked every argument already.
//
// Files, one concept each: memory.cpp (storage, zero/fill/copy, bias_add, add_assign,
// reduce_sum, transpose_2d, global_norm_squared), matmul.cpp, rows.cpp (softmax, layer_norm,
// rms_norm), losses.cpp (embedding, cross_entropy), attention.cpp, elementwise.cpp.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "backend.hpp"

namespace tapevm::nn::detail {

/// Bytes held and the most held since the last reset, shared by a backend and its storages
/// (a storage may outlive nothing but is counted down when it goes).
struct MemoryCounter {
    std::atomic<std::uint64_t> live{0};
    std::atomic<std::uint64_t> peak{0};
};

/// Host memory: `bytes` bytes (aligned for double) of f64 or i32 elements.
struct HostStorage final : Storage {
    HostStorage(std::size_t size, std::shared_ptr<MemoryCounter> counter);
    ~HostStorage() override;
    std::unique_ptr<std::byte[]> data;
    std::shared_ptr<MemoryCounter> counter;
};

class ReferenceBackend final : public Backend {
public:
    DeviceKind kind() const override { return DeviceKind::reference; }
    std::string name() const override { return "reference"; }
    bool supports(DType dtype) const override { return dtype == DType::f64 || dtype == DType::i32; }

    std::shared_ptr<Storage> allocate(std::size_t bytes) override;
    void write(const Storage& storage, std::size_t offset, std::span<const std::byte> bytes) override;
    void read(const Storage& storage, std::size_t offset, std::span<std::byte> bytes) override;
    void synchronize() override {}
    StreamStats stream_stats() const override;
    std::uint64_t live_memory() const override { return memory_->live; }
    std::uint64_t peak_memory() const override { return memory_->peak; }
    void reset_peak_memory() override { memory_->peak = memory_->live.load(); }

    // memory.cpp
    void zero(const Tensor& x) override;
    void fill(const Tensor& x, double value) override;
    void copy(const Tensor& src, const Tensor& dst) override;
    void bias_add(const Tensor& x, const Tensor& bias) override;
    void add_assign(const Tensor& dst, const Tensor& src, double alpha) override;
    void dropout(const Tensor& x, const Tensor& y, double p, std::uint64_t seed,
                 std::uint64_t stream) override;
    void reduce_sum(const Tensor& x, const Tensor& y, std::size_t outer, std::size_t n, std::size_t inner,
                    bool accumulate) override;
    void transpose_2d(const Tensor& x, const Tensor& y, std::size_t batch, std::size_t rows,
                      std::size_t cols) override;
    void global_norm_squared(std::span<const Tensor> tensors, const Tensor& out) override;
    // matmul.cpp
    void matmul(const Tensor& a, const Tensor& b, const Tensor& c, const MatmulOptions& options) override;
    // rows.cpp
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
    // losses.cpp
    void embedding(const Tensor& ids, const Tensor& table, const Tensor& out) override;
    void embedding_backward(const Tensor& ids, const Tensor& dout, const Tensor& dtable) override;
    void cross_entropy(const Tensor& logits, const Tensor& targets, const Tensor& losses,
                       const Tensor& dlogits, std::int32_t pad_id, double dloss) override;
    // attention.cpp
    void attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out, const Tensor& lse,
                   double scale, bool causal) override;
    void attention_backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                            const Tensor& lse, const Tensor& dout, const Tensor& dq, const Tensor& dk,
                            const Tensor& dv, double scale, bool causal) override;
    void kv_attention(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache, const Tensor& out,
                      std::size_t past, double scale, bool causal) override;
    // elementwise.cpp
    void elementwise(const Tape& tape, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                     std::span<const double> params) override;
    void elementwise_backward(const Tape& tape, std::span<const Tensor> inputs,
                              std::span<const Tensor> output_grads, std::span<const Tensor> input_grads,
                              std::span<const double> params) override;

private:
    /// Counts one recorded kernel (each runs at once here).
    void count_kernel() { ++kernels_; }

    std::shared_ptr<MemoryCounter> memory_ = std::make_shared<MemoryCounter>();
    std::atomic<std::uint64_t> kernels_{0};
};

/// A tensor's elements on the reference device (f64 or i32 as its dtype says).
double* f64_data(const Tensor& tensor);
std::int32_t* i32_data(const Tensor& tensor);

}  // namespace tapevm::nn::detail
