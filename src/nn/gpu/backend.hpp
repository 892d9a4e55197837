// The gpu device's backend: Vulkan compute on vm_gpu's shared logical device.
//
// Tour (read in this order):
//   backend.hpp   GpuBackend: memory, the stream, and the internal API that kernels use
//                 (pipeline(), glsl_pipeline(), dispatch()). README.md says how to add a kernel.
//   stream.hpp    Stream: the command buffers recorded and submitted in batches, fences, the
//                 buffers each batch keeps alive, the device error buffer.
//   pipelines.hpp Pipelines: the common descriptor-set and pipeline layout, pipelines by
//                 (shader name, specialization constants), the embedded SPIR-V table.
//   shaders/      GLSL, compiled at build time per storage dtype (shaders/dtype.glsl).
//   *_kernels.cpp the kernels this folder implements, one file per family.
//
// Internal to src/nn: holds Vulkan types (through vm_gpu's vulkan.hpp).
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "../backend.hpp"

namespace tapevm::gpu::detail {
class Device;
class DeviceBuffer;
}  // namespace tapevm::gpu::detail

namespace tapevm::nn::detail {

class Stream;
class Pipelines;
struct GpuPipeline;

/// A tensor's device memory: one storage buffer (buffer_pool.hpp), kept alive by the Storage
/// and by every batch of recorded work that uses it (so dropping a tensor before synchronize()
/// is safe).
struct GpuBuffer;
class BufferPool;

/// The Storage of the gpu backend. Dropping it gives its buffer back to the backend's pool at
/// once (stream-ordered reuse, buffer_pool.hpp).
struct GpuStorage : Storage {
    ~GpuStorage() override;
    std::shared_ptr<GpuBuffer> buffer;
};

/// Storage dtype codes shared with GLSL (shaders/dtype.glsl: NN_DTYPE, NN_OUT_DTYPE).
enum class ShaderDType : std::uint32_t { f32 = 0, f16 = 1, bf16 = 2, i32 = 3 };
/// The suffix of a shader variant compiled for `dtype`: "f32", "f16", "bf16", "i32".
const char* shader_suffix(DType dtype);

/// Workgroup counts of one dispatch.
using Groups = std::array<std::uint32_t, 3>;

/// The maximum number of tensor bindings of one kernel (bindings 0 .. max_tensor_bindings-1 of
/// set 0); binding `error_binding` is the device error buffer (shaders/common.glsl).
inline constexpr std::uint32_t max_tensor_bindings = 15;
inline constexpr std::uint32_t error_binding = 15;
/// Bytes of push constants every pipeline layout declares.
inline constexpr std::uint32_t push_constant_bytes = 128;

class GpuBackend final : public Backend {
public:
    explicit GpuBackend(const GpuOptions& options);
    ~GpuBackend() override;

    DeviceKind kind() const override { return DeviceKind::gpu; }
    std::string name() const override;
    bool supports(DType dtype) const override;
    bool supports_kernel(KernelId kernel, DType dtype) const override;
    bool has_cooperative_matrix() const override;

    std::shared_ptr<Storage> allocate(std::size_t bytes) override;
    void write(const Storage& storage, std::size_t offset, std::span<const std::byte> bytes) override;
    void read(const Storage& storage, std::size_t offset, std::span<std::byte> bytes) override;
    std::function<void(std::span<std::byte>)> read_later(const Storage& storage, std::size_t offset,
                                                         std::size_t bytes) override;
    void synchronize() override;
    StreamStats stream_stats() const override;
    std::uint64_t live_memory() const override;
    std::uint64_t peak_memory() const override;
    void reset_peak_memory() override;
    std::uint64_t reserved_memory() const override;
    void empty_cache() override;
    std::string profile_report() const override;

    // Kernels of this folder (the others come from gpu-b's rows.cpp/attention.cpp and
    // elementwise.cpp, declared there and defined as members below).
    void zero(const Tensor& x) override;
    void fill(const Tensor& x, double value) override;
    void copy(const Tensor& src, const Tensor& dst) override;
    void matmul(const Tensor& a, const Tensor& b, const Tensor& c, const MatmulOptions& options) override;
    bool matmul_adds_bias() const override { return true; }
    void bias_add(const Tensor& x, const Tensor& bias) override;
    void add_assign(const Tensor& dst, const Tensor& src, double alpha) override;
    void dropout(const Tensor& x, const Tensor& y, double p, std::uint64_t seed,
                 std::uint64_t stream) override;
    void reduce_sum(const Tensor& x, const Tensor& y, std::size_t outer, std::size_t n, std::size_t inner,
                    bool accumulate) override;
    void transpose_2d(const Tensor& x, const Tensor& y, std::size_t batch, std::size_t rows,
                      std::size_t cols) override;
    void global_norm_squared(std::span<const Tensor> tensors, const Tensor& out) override;
    // gpu-b's (rows.cpp, attention.cpp) and the elementwise helper's (elementwise.cpp):
    // backend.cpp forwards to their gpu_* functions where their sources are built, else to
    // Backend's defaults (Unsupported).
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
    void attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out, const Tensor& lse,
                   double scale, bool causal) override;
    void attention_backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                            const Tensor& lse, const Tensor& dout, const Tensor& dq, const Tensor& dk,
                            const Tensor& dv, double scale, bool causal) override;
    void kv_attention(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache, const Tensor& out,
                      std::size_t past, double scale, bool causal) override;
    void elementwise(const Tape& tape, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                     std::span<const double> params) override;
    void elementwise_backward(const Tape& tape, std::span<const Tensor> inputs,
                              std::span<const Tensor> output_grads, std::span<const Tensor> input_grads,
                              std::span<const double> params) override;

    // ---- the internal API for kernels (README.md) ------------------------------------------

    /// The pipeline of embedded shader variant `shader` ("fill_f16": the name given in
    /// meson.build plus the dtype suffix) with specialization constants 0, 1, ... set to
    /// `specialization`; created on first use, then cached by (shader, specialization).
    /// Throws tapevm::Error for an unknown name.
    const GpuPipeline& pipeline(std::string_view shader, std::span<const std::uint32_t> specialization = {});
    const GpuPipeline& pipeline(std::string_view shader,
                                std::initializer_list<std::uint32_t> specialization) {
        return pipeline(shader,
                        std::span<const std::uint32_t>(specialization.begin(), specialization.size()));
    }
    /// The pipeline of GLSL compiled at run time (glslang, vm_gpu/glsl_compiler.hpp) and cached
    /// under `key` (which must determine the source): for generated kernels (elementwise).
    /// The source sees the same layout: tensors at bindings 0.., the error buffer at binding 15,
    /// push constants up to 128 bytes; it may #include "nn_common.glsl" / "nn_dtype.glsl".
    const GpuPipeline& glsl_pipeline(const std::string& key, std::string_view glsl_source,
                                     std::span<const std::uint32_t> specialization = {});
    /// True when `key` has a pipeline already (so the caller can skip generating its GLSL).
    bool has_glsl_pipeline(const std::string& key) const;
    const GpuPipeline* find_glsl_pipeline(const std::string& key) const;

    /// Records one dispatch into the stream: `tensors` bound to bindings 0, 1, ... in order
    /// (an undefined Tensor binds a small dummy buffer), the error buffer at binding 15,
    /// `push` as push constants (at most 128 bytes), `groups` workgroups. A memory barrier
    /// orders it after everything recorded before (so dispatches may read what earlier ones
    /// wrote). Each tensor's memory stays alive until the batch that runs it completes.
    /// Group counts of 0 record nothing.
    void dispatch(const GpuPipeline& pipeline, std::span<const Tensor> tensors,
                  std::span<const std::byte> push, Groups groups);
    template <class Push>
    void dispatch(const GpuPipeline& pipeline, std::initializer_list<Tensor> tensors, const Push& push,
                  Groups groups) {
        static_assert(std::is_trivially_copyable_v<Push> && sizeof(Push) <= push_constant_bytes);
        dispatch(pipeline, std::span<const Tensor>(tensors.begin(), tensors.size()),
                 std::as_bytes(std::span<const Push>(&push, 1)), groups);
    }
    /// Records a copy of `bytes` bytes between two tensors' memory (byte offsets), ordered in the stream.
    void copy_bytes(const Tensor& src, std::size_t src_offset, const Tensor& dst, std::size_t dst_offset,
                    std::size_t bytes);
    /// A new tensor of the device for scratch memory (uninitialised; dropping it after the
    /// dispatches that use it is safe).
    Tensor scratch(Shape shape, DType dtype);

    /// Workgroups for `count` items at `per_group` items per workgroup in x, capped at
    /// `max_groups` (kernels loop over the rest: grid-stride loops).
    static std::uint32_t groups_for(std::size_t count, std::size_t per_group,
                                    std::uint32_t max_groups = 65535);

    /// The device's limits and features, for kernels that choose variants.
    std::uint32_t subgroup_size() const;
    std::uint32_t max_shared_memory() const;
    /// The largest storage-buffer range a binding may have (bytes).
    std::uint64_t max_binding_bytes() const;
    /// True when the device runs GL_NV_cooperative_matrix f16 x f16 -> f32 with shape {M, N, K}
    /// and GpuOptions::cooperative_matrix (and TAPEVM_NN_COOPMAT != 0) allow it.
    bool cooperative_shape(std::uint32_t m, std::uint32_t n, std::uint32_t k) const;

    gpu::detail::Device& device() const { return *device_; }
    Stream& stream() { return *stream_; }

private:
    void check_bindable(const Tensor& tensor, const char* kernel) const;
    void matmul_tiled(const Tensor& a, const Tensor& b, const Tensor& c, const MatmulOptions& options);
    bool matmul_cooperative(const Tensor& a, const Tensor& b, const Tensor& c, const MatmulOptions& options);

    friend struct GpuStorage;
    void release(std::shared_ptr<GpuBuffer> buffer);
    std::shared_ptr<GpuBuffer> take_buffer(std::uint64_t bytes);

    std::shared_ptr<gpu::detail::Device> device_;
    std::unique_ptr<BufferPool> pool_;  // destroyed after the stream has waited for its work
    std::unique_ptr<Pipelines> pipelines_;
    std::unique_ptr<Stream> stream_;
    std::atomic<std::uint64_t> live_{0}, peak_{0};
    bool cooperative_matrix_ = false;
};

}  // namespace tapevm::nn::detail
