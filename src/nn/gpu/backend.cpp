#include "backend.hpp"

#include "buffer_pool.hpp"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>

#include "context.hpp"
#include "errors.hpp"
#include "pipelines.hpp"
#include "stream.hpp"
#include "tapevm/error.hpp"
#include "tapevm/gpu.hpp"

#ifdef TAPEVM_NN_GPU_ROWS
#include "rows.hpp"
#endif
#ifdef TAPEVM_NN_GPU_ATTENTION
#include "attention.hpp"
#endif
#ifdef TAPEVM_NN_GPU_ELEMENTWISE
#include "elementwise.hpp"
#endif

namespace tapevm::nn::detail {

namespace {

bool env_disables_coopmat() {
    const char* env = std::getenv("TAPEVM_NN_COOPMAT");
    return env != nullptr && std::string_view(env) == "0";
}

}  // namespace

const char* shader_suffix(DType dtype) {
    switch (dtype) {
        case DType::f32: return "f32";
        case DType::f16: return "f16";
        case DType::bf16: return "bf16";
        case DType::i32: return "i32";
        case DType::f64: break;
    }
    return "f64";
}

GpuBackend::GpuBackend(const GpuOptions& options) {
    gpu::Options vm_options;
    vm_options.device = options.device;
    vm_options.validation = options.validation;
    device_ = gpu::detail::Device::acquire(vm_options);
    pool_ = std::make_unique<BufferPool>(*device_, gpu::detail::MemoryKind::device);
    pipelines_ = std::make_unique<Pipelines>(*device_);
    stream_ = std::make_unique<Stream>(*device_, pipelines_->set_layout(), pipelines_->layout());
    const auto& features = device_->compute_features();
    cooperative_matrix_ = options.cooperative_matrix && !env_disables_coopmat() &&
                          features.cooperative_matrix && device_->info().subgroup_size == 32 &&
                          !features.cooperative_f16_f32_shapes.empty();
}

GpuBackend::~GpuBackend() {
    if (stream_->profiling()) {  // TAPEVM_NN_PROFILE=1: the table goes to stderr as the device goes
        try {
            stream_->synchronize();
            std::fputs(profile_report().c_str(), stderr);
        } catch (...) {
        }
    }
    stream_.reset();  // waits for the batches in flight, then frees what they held
}

std::string GpuBackend::name() const { return "gpu (" + device_->info().name + ")"; }

bool GpuBackend::supports(DType dtype) const {
    switch (dtype) {
        case DType::f32:
        case DType::i32: return true;
        case DType::f16:
        case DType::bf16: return device_->compute_features().storage16;
        case DType::f64: return false;
    }
    return false;
}

bool GpuBackend::supports_kernel(KernelId kernel, DType dtype) const {
    if (!supports(dtype)) return false;
    switch (kernel) {
        case KernelId::softmax:
        case KernelId::softmax_backward:
        case KernelId::layer_norm:
        case KernelId::layer_norm_backward:
        case KernelId::rms_norm:
        case KernelId::rms_norm_backward:
        case KernelId::embedding:
        case KernelId::embedding_backward:
        case KernelId::cross_entropy:
#ifdef TAPEVM_NN_GPU_ROWS
            return true;
#else
            return false;
#endif
        case KernelId::attention:
        case KernelId::attention_backward:
        case KernelId::kv_attention:
#ifdef TAPEVM_NN_GPU_ATTENTION
            return true;
#else
            return false;
#endif
        case KernelId::elementwise:
        case KernelId::elementwise_backward:
#ifdef TAPEVM_NN_GPU_ELEMENTWISE
            return true;
#else
            return false;
#endif
        default: return true;
    }
}

bool GpuBackend::has_cooperative_matrix() const { return cooperative_matrix_; }

bool GpuBackend::cooperative_shape(std::uint32_t m, std::uint32_t n, std::uint32_t k) const {
    if (!cooperative_matrix_) return false;
    for (const auto& shape : device_->compute_features().cooperative_f16_f32_shapes)
        if (shape[0] == m && shape[1] == n && shape[2] == k) return true;
    return false;
}

std::uint32_t GpuBackend::subgroup_size() const { return device_->info().subgroup_size; }
std::uint32_t GpuBackend::max_shared_memory() const { return device_->info().max_shared_memory_bytes; }
std::uint64_t GpuBackend::max_binding_bytes() const { return device_->limits().maxStorageBufferRange; }

// ---- memory ----------------------------------------------------------------------------------

std::shared_ptr<GpuBuffer> GpuBackend::take_buffer(std::uint64_t bytes) {
    try {
        return pool_->take(bytes);
    } catch (const gpu::detail::OutOfDeviceMemory&) {
    }
    // Out of memory: give the cached buffers back to the driver (after the work using them) and
    // try once more.
    empty_cache();
    try {
        return pool_->take(bytes);
    } catch (const gpu::detail::OutOfDeviceMemory& error) {
        throw OutOfMemory(std::string("gpu: cannot allocate a tensor of ") + std::to_string(bytes) +
                          " bytes: " + error.what());
    }
}

std::shared_ptr<Storage> GpuBackend::allocate(std::size_t bytes) {
    device_->check_alive();
    auto storage = std::make_shared<GpuStorage>();
    // Whole 32-bit words at least (fills and 16-bit kernels may touch the last word's padding):
    // the pool's classes are multiples of 256 bytes.
    storage->buffer = take_buffer(bytes);
    storage->backend = shared_from_this();
    storage->bytes = bytes;
    const std::uint64_t now =
        live_.fetch_add(storage->buffer->buffer.bytes()) + storage->buffer->buffer.bytes();
    std::uint64_t seen = peak_.load();
    while (now > seen && !peak_.compare_exchange_weak(seen, now)) {
    }
    return storage;
}

GpuStorage::~GpuStorage() {
    if (buffer && backend) static_cast<GpuBackend&>(*backend).release(std::move(buffer));
}

void GpuBackend::release(std::shared_ptr<GpuBuffer> buffer) {
    live_ -= buffer->buffer.bytes();
    pool_->give_back(std::move(buffer));
}

void GpuBackend::empty_cache() {
    pool_->trim();
    stream_->trim_staging();
    stream_->synchronize();  // the batches holding dropped buffers complete and free them
}

std::uint64_t GpuBackend::reserved_memory() const { return pool_->reserved_bytes(); }

std::string GpuBackend::profile_report() const {
    if (!stream_->profiling()) return {};
    const BufferPool::Stats stats = pool_->stats();
    std::string report = stream_->profile_report();
    report += "tensor buffers: " + std::to_string(stats.created) + " created (" +
              std::to_string(stats.create_seconds * 1e3) + " ms), " + std::to_string(stats.reused) +
              " reused; reserved " + std::to_string(pool_->reserved_bytes() >> 20) + " MiB, peak in use " +
              std::to_string(peak_.load() >> 20) + " MiB\n";
    return report;
}

namespace {
const std::shared_ptr<GpuBuffer>& buffer_of(const Storage& storage) {
    return static_cast<const GpuStorage&>(storage).buffer;
}
}  // namespace

void GpuBackend::write(const Storage& storage, std::size_t offset, std::span<const std::byte> bytes) {
    try {
        stream_->write(buffer_of(storage), offset, bytes);
        return;
    } catch (const gpu::detail::OutOfDeviceMemory&) {
    }
    empty_cache();
    try {
        stream_->write(buffer_of(storage), offset, bytes);
    } catch (const gpu::detail::OutOfDeviceMemory& error) {
        throw OutOfMemory(std::string("gpu: no memory for an upload's staging buffer: ") + error.what());
    }
}

std::function<void(std::span<std::byte>)> GpuBackend::read_later(const Storage& storage, std::size_t offset,
                                                                 std::size_t bytes) {
    try {
        return stream_->read_later(buffer_of(storage), offset, bytes);
    } catch (const gpu::detail::OutOfDeviceMemory&) {
    }
    empty_cache();
    try {
        return stream_->read_later(buffer_of(storage), offset, bytes);
    } catch (const gpu::detail::OutOfDeviceMemory& error) {
        throw OutOfMemory(std::string("gpu: no memory for a download's staging buffer: ") + error.what());
    }
}

void GpuBackend::read(const Storage& storage, std::size_t offset, std::span<std::byte> bytes) {
    try {
        stream_->read(buffer_of(storage), offset, bytes);
        return;
    } catch (const gpu::detail::OutOfDeviceMemory&) {
    }
    empty_cache();
    try {
        stream_->read(buffer_of(storage), offset, bytes);
    } catch (const gpu::detail::OutOfDeviceMemory& error) {
        throw OutOfMemory(std::string("gpu: no memory for a download's staging buffer: ") + error.what());
    }
}

void GpuBackend::synchronize() { stream_->synchronize(); }
StreamStats GpuBackend::stream_stats() const { return stream_->stats(); }
std::uint64_t GpuBackend::live_memory() const { return live_.load(); }
std::uint64_t GpuBackend::peak_memory() const { return peak_.load(); }
void GpuBackend::reset_peak_memory() { peak_.store(live_.load()); }

Tensor GpuBackend::scratch(Shape shape, DType dtype) {
    const std::size_t bytes = element_count(shape) * dtype_size(dtype);
    return Tensor(allocate(bytes), std::move(shape), dtype);
}

// ---- the kernel API ----------------------------------------------------------------------------

const GpuPipeline& GpuBackend::pipeline(std::string_view shader,
                                        std::span<const std::uint32_t> specialization) {
    return pipelines_->embedded(shader, specialization);
}

const GpuPipeline& GpuBackend::glsl_pipeline(const std::string& key, std::string_view glsl_source,
                                             std::span<const std::uint32_t> specialization) {
    return pipelines_->glsl(key, glsl_source, specialization);
}

bool GpuBackend::has_glsl_pipeline(const std::string& key) const {
    return pipelines_->find_glsl(key) != nullptr;
}
const GpuPipeline* GpuBackend::find_glsl_pipeline(const std::string& key) const {
    return pipelines_->find_glsl(key);
}

void GpuBackend::check_bindable(const Tensor& tensor, const char* kernel) const {
    if (tensor.defined() && tensor.bytes() > max_binding_bytes())
        throw Unsupported(std::string(kernel) + ": " + tensor.describe() + " is larger than one binding of " +
                          device_->info().name + " (" + std::to_string(max_binding_bytes()) + " bytes)");
}

void GpuBackend::dispatch(const GpuPipeline& pipeline, std::span<const Tensor> tensors,
                          std::span<const std::byte> push, Groups groups) {
    if (tensors.size() > max_tensor_bindings)
        throw Error("nn gpu: " + pipeline.name + ": more than 15 tensor bindings");
    if (push.size() > push_constant_bytes)
        throw Error("nn gpu: " + pipeline.name + ": more than 128 bytes of push constants");
    std::array<std::shared_ptr<GpuBuffer>, max_tensor_bindings> buffers;
    for (std::size_t i = 0; i < tensors.size(); ++i) {
        if (!tensors[i].defined()) continue;
        check_bindable(tensors[i], pipeline.name.c_str());
        buffers[i] = buffer_of(tensors[i].storage());
    }
    stream_->dispatch(pipeline, std::span(buffers.data(), tensors.size()), push, groups);
}

void GpuBackend::copy_bytes(const Tensor& src, std::size_t src_offset, const Tensor& dst,
                            std::size_t dst_offset, std::size_t bytes) {
    stream_->copy(buffer_of(src.storage()), src_offset, buffer_of(dst.storage()), dst_offset, bytes);
}

std::uint32_t GpuBackend::groups_for(std::size_t count, std::size_t per_group, std::uint32_t max_groups) {
    const std::size_t groups = (count + per_group - 1) / per_group;
    return static_cast<std::uint32_t>(std::min<std::size_t>(groups, max_groups));
}

// ---- the other helpers' kernels ------------------------------------------------------------------
// Each forwards to its helper's gpu_* function where that source is built (meson.build),
// else to Backend's default (Unsupported).

#ifdef TAPEVM_NN_GPU_ROWS
void GpuBackend::softmax(const Tensor& x, const Tensor& y) { gpu_softmax(*this, x, y); }
void GpuBackend::softmax_backward(const Tensor& y, const Tensor& dy, const Tensor& dx) {
    gpu_softmax_backward(*this, y, dy, dx);
}
void GpuBackend::layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, const Tensor& y,
                            const Tensor& mean, const Tensor& rstd, double eps) {
    gpu_layer_norm(*this, x, gamma, beta, y, mean, rstd, eps);
}
void GpuBackend::layer_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& gamma,
                                     const Tensor& mean, const Tensor& rstd, const Tensor& dx,
                                     const Tensor& dgamma, const Tensor& dbeta) {
    gpu_layer_norm_backward(*this, dy, x, gamma, mean, rstd, dx, dgamma, dbeta);
}
void GpuBackend::rms_norm(const Tensor& x, const Tensor& gamma, const Tensor& y, const Tensor& rstd,
                          double eps) {
    gpu_rms_norm(*this, x, gamma, y, rstd, eps);
}
void GpuBackend::rms_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& gamma, const Tensor& rstd,
                                   const Tensor& dx, const Tensor& dgamma) {
    gpu_rms_norm_backward(*this, dy, x, gamma, rstd, dx, dgamma);
}
void GpuBackend::embedding(const Tensor& ids, const Tensor& table, const Tensor& out) {
    gpu_embedding(*this, ids, table, out);
}
void GpuBackend::embedding_backward(const Tensor& ids, const Tensor& dout, const Tensor& dtable) {
    gpu_embedding_backward(*this, ids, dout, dtable);
}
void GpuBackend::cross_entropy(const Tensor& logits, const Tensor& targets, const Tensor& losses,
                               const Tensor& dlogits, std::int32_t pad_id, double dloss) {
    gpu_cross_entropy(*this, logits, targets, losses, dlogits, pad_id, dloss);
}
#else
void GpuBackend::softmax(const Tensor& x, const Tensor& y) { Backend::softmax(x, y); }
void GpuBackend::softmax_backward(const Tensor& y, const Tensor& dy, const Tensor& dx) {
    Backend::softmax_backward(y, dy, dx);
}
void GpuBackend::layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, const Tensor& y,
                            const Tensor& mean, const Tensor& rstd, double eps) {
    Backend::layer_norm(x, gamma, beta, y, mean, rstd, eps);
}
void GpuBackend::layer_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& gamma,
                                     const Tensor& mean, const Tensor& rstd, const Tensor& dx,
                                     const Tensor& dgamma, const Tensor& dbeta) {
    Backend::layer_norm_backward(dy, x, gamma, mean, rstd, dx, dgamma, dbeta);
}
void GpuBackend::rms_norm(const Tensor& x, const Tensor& gamma, const Tensor& y, const Tensor& rstd,
                          double eps) {
    Backend::rms_norm(x, gamma, y, rstd, eps);
}
void GpuBackend::rms_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& gamma, const Tensor& rstd,
                                   const Tensor& dx, const Tensor& dgamma) {
    Backend::rms_norm_backward(dy, x, gamma, rstd, dx, dgamma);
}
void GpuBackend::embedding(const Tensor& ids, const Tensor& table, const Tensor& out) {
    Backend::embedding(ids, table, out);
}
void GpuBackend::embedding_backward(const Tensor& ids, const Tensor& dout, const Tensor& dtable) {
    Backend::embedding_backward(ids, dout, dtable);
}
void GpuBackend::cross_entropy(const Tensor& logits, const Tensor& targets, const Tensor& losses,
                               const Tensor& dlogits, std::int32_t pad_id, double dloss) {
    Backend::cross_entropy(logits, targets, losses, dlogits, pad_id, dloss);
}
#endif

#ifdef TAPEVM_NN_GPU_ATTENTION
void GpuBackend::attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                           const Tensor& lse, double scale, bool causal) {
    gpu_attention(*this, q, k, v, out, lse, scale, causal);
}
void GpuBackend::attention_backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                                    const Tensor& lse, const Tensor& dout, const Tensor& dq, const Tensor& dk,
                                    const Tensor& dv, double scale, bool causal) {
    gpu_attention_backward(*this, q, k, v, out, lse, dout, dq, dk, dv, scale, causal);
}
void GpuBackend::kv_attention(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache,
                              const Tensor& out, std::size_t past, double scale, bool causal) {
    gpu_kv_attention(*this, q, k_cache, v_cache, out, past, scale, causal);
}
#else
void GpuBackend::attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                           const Tensor& lse, double scale, bool causal) {
    Backend::attention(q, k, v, out, lse, scale, causal);
}
void GpuBackend::attention_backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                                    const Tensor& lse, const Tensor& dout, const Tensor& dq, const Tensor& dk,
                                    const Tensor& dv, double scale, bool causal) {
    Backend::attention_backward(q, k, v, out, lse, dout, dq, dk, dv, scale, causal);
}
void GpuBackend::kv_attention(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache,
                              const Tensor& out, std::size_t past, double scale, bool causal) {
    Backend::kv_attention(q, k_cache, v_cache, out, past, scale, causal);
}
#endif

#ifdef TAPEVM_NN_GPU_ELEMENTWISE
void GpuBackend::elementwise(const Tape& tape, std::span<const Tensor> inputs,
                             std::span<const Tensor> outputs, std::span<const double> params) {
    gpu_elementwise(*this, tape, inputs, outputs, params);
}
void GpuBackend::elementwise_backward(const Tape& tape, std::span<const Tensor> inputs,
                                      std::span<const Tensor> output_grads,
                                      std::span<const Tensor> input_grads, std::span<const double> params) {
    gpu_elementwise_backward(*this, tape, inputs, output_grads, input_grads, params);
}
#else
void GpuBackend::elementwise(const Tape& tape, std::span<const Tensor> inputs,
                             std::span<const Tensor> outputs, std::span<const double> params) {
    Backend::elementwise(tape, inputs, outputs, params);
}
void GpuBackend::elementwise_backward(const Tape& tape, std::span<const Tensor> inputs,
                                      std::span<const Tensor> output_grads,
                                      std::span<const Tensor> input_grads, std::span<const double> params) {
    Backend::elementwise_backward(tape, inputs, output_grads, input_grads, params);
}
#endif

// ---- construction ------------------------------------------------------------------------------

std::shared_ptr<Backend> make_gpu_backend(const GpuOptions& options) {
    return std::make_shared<GpuBackend>(options);
}

bool gpu_backend_available() {
    try {
        return !gpu::devices().empty();
    } catch (const Error&) {
        return false;
    }
}

}  // namespace tapevm::nn::detail
