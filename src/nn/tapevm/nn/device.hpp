// Devices: where tensors live and kernels run.
//
//   Device::reference()  plain f64 loops, one thread: the oracle every test compares with.
//   Device::cpu()        f32 (f16/bf16 storage): OpenBLAS for matmul, xsimd row kernels, all
//                        cores through tapevm's thread pool.
//   Device::gpu()        Vulkan compute on vm_gpu's device (TAPEVM_DEVICE selects it as for
//                        gpu::Vm); f32, f16 and bf16 storage, tensor cores for f16 matmul and
//                        attention where the device offers GL_NV_cooperative_matrix.
//
// Streams. Every kernel call on a device is recorded into the device's one stream, in call
// order, and returns at once; the GPU submits recorded work in batches, the CPU devices run
// it before returning. The host waits only where it reads: Tensor::to_float() and friends
// wait for the work recorded before them (on the GPU: submit, then wait for that submission),
// `synchronize()` waits for everything. A tensor's memory stays alive while recorded work
// uses it, so dropping a handle early is safe. There is nothing to begin or end: a user
// cannot forget a submit or read a result too early.
//
// Threads: one Device handle (and its tensors) is used by one thread at a time.
// (docs/THREADS.md: a handle's stream is not locked. Separate handles, one per thread, may run
// at once: they are separate streams over locked shared parts, the Vulkan device, the CPU
// devices' thread pools and the kernel caches; tests/concurrency/test_concurrency_nn.cpp.)
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "tapevm/nn/tensor.hpp"

namespace tapevm::nn {

enum class DeviceKind { reference, cpu, gpu };
/// "reference", "cpu", "gpu".
const char* device_kind_name(DeviceKind kind);

struct CpuOptions {
    /// Worker threads, the caller included; 0: all hardware threads.
    unsigned threads = 0;
};

struct GpuOptions {
    /// Device selector as for gpu::Vm (index or name substring); "" = TAPEVM_DEVICE or the default.
    std::string device;
    /// Enables the Khronos validation layer (also TAPEVM_VULKAN_VALIDATION=1).
    bool validation = false;
    /// Use cooperative-matrix (tensor core) kernels for f16 matmul and attention where the
    /// device offers them (also TAPEVM_NN_COOPMAT=0 turns them off).
    bool cooperative_matrix = true;
};

/// Counters of a device's stream, for measurements and tests.
struct StreamStats {
    std::uint64_t kernels = 0;      // kernels recorded since the device was made
    std::uint64_t submissions = 0;  // batches handed to the device's queue (GPU)
    std::uint64_t waits = 0;        // times the host waited for the device
};

class Device {
public:
    /// The f64 reference device (a new handle to the one process-wide instance).
    static Device reference();
    /// The CPU device. Devices with the same options share their threads.
    static Device cpu(CpuOptions options = {});
    /// The GPU device (a new stream on vm_gpu's shared Vulkan device). Throws
    /// tapevm::DeviceUnavailable (with the reason) without one. Release GPU Devices before
    /// main returns: one destroyed during static destruction may meet the Vulkan loader's and
    /// layers' own state already torn down.
    static Device gpu(GpuOptions options = {});
    /// True when Device::gpu() with default options would succeed (a Vulkan device exists).
    static bool gpu_available();

    DeviceKind kind() const;
    /// "reference", "cpu (8 threads)", "gpu (NVIDIA H100 80GB HBM3)".
    std::string name() const;
    /// True when this device stores `dtype` and runs kernels on it.
    bool supports(DType dtype) const;
    /// The dtype of statistics and losses (saved means, rstd, log-sum-exp, per-row losses,
    /// norms): f64 on the reference device, f32 elsewhere.
    DType accumulate_dtype() const;
    /// True when f16 matmul and attention run on tensor cores (cooperative matrices) here.
    bool has_cooperative_matrix() const;

    /// Uninitialised memory (Unsupported for a dtype the device lacks; OutOfMemory when the
    /// device is full: nothing is lost and the device stays usable).
    Tensor empty(Shape shape, DType dtype) const;
    Tensor zeros(Shape shape, DType dtype) const;
    /// A tensor holding `values` converted to `dtype`.
    Tensor upload(Shape shape, std::span<const double> values, DType dtype) const;
    Tensor upload(Shape shape, std::span<const float> values, DType dtype) const;
    Tensor upload(Shape shape, std::span<const std::int32_t> values, DType dtype = DType::i32) const;

    /// Waits until every kernel recorded so far has run. Throws what a failed kernel raised
    /// (ids out of range found on the device, DeviceLost).
    void synchronize() const;
    StreamStats stream_stats() const;
    /// Bytes of device memory its tensors hold now, and the most since reset_peak_memory().
    std::uint64_t live_memory() const;
    std::uint64_t peak_memory() const;
    void reset_peak_memory() const;
    /// Bytes held from the driver, cached buffers included (the gpu device keeps dropped
    /// tensors' buffers for reuse, like torch.cuda.memory_reserved), and a call that returns the
    /// cached ones (torch.cuda.empty_cache). An allocation that finds no memory empties the
    /// cache and tries again before it throws OutOfMemory.
    std::uint64_t reserved_memory() const;
    void empty_cache() const;
    /// With TAPEVM_NN_PROFILE=1 in the environment when the device was made: a table of the
    /// device time per kernel (GPU timestamps) and of the host's allocation and wait time
    /// since then; else "".
    std::string profile_report() const;

    friend bool operator==(const Device& a, const Device& b) { return a.backend_ == b.backend_; }

    // For the kernels and backends.
    detail::Backend& backend() const { return *backend_; }
    const std::shared_ptr<detail::Backend>& backend_handle() const { return backend_; }
    explicit Device(std::shared_ptr<detail::Backend> backend);

private:
    std::shared_ptr<detail::Backend> backend_;
};

}  // namespace tapevm::nn
