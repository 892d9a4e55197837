// The interface every nn device implements (reference, cpu, gpu), internal to src/nn.
//
// The public kernel functions (kernels.cpp) check every argument first (shapes, dtypes, one
// device, aliasing), so a backend may assume valid input and only asserts. A kernel a backend
// lacks for some dtype throws Unsupported through unsupported(); the conformance harness
// reports those combinations as skipped, never as passed. supports_kernel() says in advance.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>

#include "tapevm/error.hpp"
#include "tapevm/nn/device.hpp"
#include "tapevm/nn/kernels.hpp"
#include "tapevm/nn/tensor.hpp"
#include "tapevm/tape.hpp"

namespace tapevm::nn::detail {

class Backend;

/// A device allocation. Backends derive from it to hold their memory (host bytes, a Vulkan
/// buffer); `backend` keeps the device alive while the memory is.
struct Storage {
    virtual ~Storage() = default;
    std::shared_ptr<Backend> backend;
    std::size_t bytes = 0;
};

/// The kernels of the kernel set by name, for supports_kernel() and the conformance table.
enum class KernelId {
    zero,
    fill,
    copy,
    matmul,
    bias_add,
    add_assign,
    reduce_sum,
    transpose_2d,
    softmax,
    softmax_backward,
    layer_norm,
    layer_norm_backward,
    rms_norm,
    rms_norm_backward,
    embedding,
    embedding_backward,
    cross_entropy,
    global_norm_squared,
    attention,
    attention_backward,
    kv_attention,
    elementwise,
    elementwise_backward,
    dropout,
    count
};
const char* kernel_name(KernelId kernel);

class Backend : public std::enable_shared_from_this<Backend> {
public:
    virtual ~Backend() = default;

    virtual DeviceKind kind() const = 0;
    virtual std::string name() const = 0;
    virtual bool supports(DType dtype) const = 0;
    /// True when `kernel` runs here on float tensors of `dtype` (i32 arguments aside).
    virtual bool supports_kernel(KernelId /*kernel*/, DType dtype) const { return supports(dtype); }
    virtual bool has_cooperative_matrix() const { return false; }

    // Memory. allocate() may throw OutOfMemory (the device stays usable). write() and read()
    // cover `bytes.size()` bytes from byte `offset`, ordered with the recorded kernels: read()
    // waits for the work recorded before it.
    virtual std::shared_ptr<Storage> allocate(std::size_t bytes) = 0;
    virtual void write(const Storage& storage, std::size_t offset, std::span<const std::byte> bytes) = 0;
    virtual void read(const Storage& storage, std::size_t offset, std::span<std::byte> bytes) = 0;
    /// Starts a read of `bytes` bytes from `offset`, ordered after the work recorded before it,
    /// and returns at once; the function it returns waits for that work only (not for work
    /// recorded after the call) and copies the bytes out. Default: read() now.
    virtual std::function<void(std::span<std::byte>)> read_later(const Storage& storage, std::size_t offset,
                                                                 std::size_t bytes);
    virtual void synchronize() = 0;
    virtual StreamStats stream_stats() const { return {}; }
    virtual std::uint64_t live_memory() const = 0;
    virtual std::uint64_t peak_memory() const = 0;
    virtual void reset_peak_memory() = 0;
    /// Bytes the backend keeps from the driver for reuse (cached buffers included): >= live.
    virtual std::uint64_t reserved_memory() const { return live_memory(); }
    /// Returns cached, unused memory to the driver (after the work that used it).
    virtual void empty_cache() {}
    /// Where the time went (TAPEVM_NN_PROFILE=1): a table, or "" when not profiling.
    virtual std::string profile_report() const { return {}; }

    // Kernels (kernels.hpp has their contracts). Defaults throw Unsupported.
    virtual void zero(const Tensor& x);
    virtual void fill(const Tensor& x, double value);
    virtual void copy(const Tensor& src, const Tensor& dst);
    virtual void matmul(const Tensor& a, const Tensor& b, const Tensor& c, const MatmulOptions& options);
    /// True when matmul() adds options.bias (of C's dtype) itself; kernels.cpp passes a bias only
    /// then and calls bias_add() after the product otherwise.
    virtual bool matmul_adds_bias() const { return false; }
    virtual void bias_add(const Tensor& x, const Tensor& bias);
    /// y = x * keep / (1 - p) with DropoutMask (dropout_mask.hpp); y may be x.
    virtual void dropout(const Tensor& x, const Tensor& y, double p, std::uint64_t seed,
                         std::uint64_t stream);
    virtual void add_assign(const Tensor& dst, const Tensor& src, double alpha);
    /// x viewed as [outer][n][inner] (n the reduced axis), y as [outer][inner].
    virtual void reduce_sum(const Tensor& x, const Tensor& y, std::size_t outer, std::size_t n,
                            std::size_t inner, bool accumulate);
    /// x [batch][rows][cols] -> y [batch][cols][rows].
    virtual void transpose_2d(const Tensor& x, const Tensor& y, std::size_t batch, std::size_t rows,
                              std::size_t cols);
    virtual void softmax(const Tensor& x, const Tensor& y);
    virtual void softmax_backward(const Tensor& y, const Tensor& dy, const Tensor& dx);
    virtual void layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, const Tensor& y,
                            const Tensor& mean, const Tensor& rstd, double eps);
    virtual void layer_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& gamma,
                                     const Tensor& mean, const Tensor& rstd, const Tensor& dx,
                                     const Tensor& dgamma, const Tensor& dbeta);
    virtual void rms_norm(const Tensor& x, const Tensor& gamma, const Tensor& y, const Tensor& rstd,
                          double eps);
    virtual void rms_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& gamma, const Tensor& rstd,
                                   const Tensor& dx, const Tensor& dgamma);
    virtual void embedding(const Tensor& ids, const Tensor& table, const Tensor& out);
    virtual void embedding_backward(const Tensor& ids, const Tensor& dout, const Tensor& dtable);
    virtual void cross_entropy(const Tensor& logits, const Tensor& targets, const Tensor& losses,
                               const Tensor& dlogits, std::int32_t pad_id, double dloss);
    virtual void global_norm_squared(std::span<const Tensor> tensors, const Tensor& out);
    virtual void attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                           const Tensor& lse, double scale, bool causal);
    virtual void attention_backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                                    const Tensor& lse, const Tensor& dout, const Tensor& dq, const Tensor& dk,
                                    const Tensor& dv, double scale, bool causal);
    virtual void kv_attention(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache,
                              const Tensor& out, std::size_t past, double scale, bool causal);
    /// inputs already checked to broadcast to the outputs' shape (kernels.hpp).
    virtual void elementwise(const Tape& tape, std::span<const Tensor> inputs,
                             std::span<const Tensor> outputs, std::span<const double> params);
    virtual void elementwise_backward(const Tape& tape, std::span<const Tensor> inputs,
                                      std::span<const Tensor> output_grads,
                                      std::span<const Tensor> input_grads, std::span<const double> params);

protected:
    /// Throws Unsupported: "<kernel> is not available on <name()> for <dtype>".
    [[noreturn]] void unsupported(KernelId kernel, DType dtype) const;
};

std::shared_ptr<Backend> make_reference_backend();
std::shared_ptr<Backend> make_cpu_backend(const CpuOptions& options);
/// Throws DeviceUnavailable without a Vulkan device.
std::shared_ptr<Backend> make_gpu_backend(const GpuOptions& options);
bool gpu_backend_available();

}  // namespace tapevm::nn::detail
