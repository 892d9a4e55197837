#include "blas_core.hpp"
#include "cpu/backend.hpp"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>
#include <thread>

#include "cpu/elementwise.hpp"
#include "cpu/parallel.hpp"

namespace tapevm::nn::detail {

namespace {

using tapevm::cpu::detail::ThreadPool;

// Cpu devices of one thread count share one pool (device.hpp: "devices with the same options
// share their threads"); the pool goes when its last device does.
std::shared_ptr<ThreadPool> shared_pool(unsigned threads) {
    static std::mutex mutex;
    static std::map<unsigned, std::weak_ptr<ThreadPool>> pools;
    const std::lock_guard lock(mutex);
    std::weak_ptr<ThreadPool>& slot = pools[threads];
    std::shared_ptr<ThreadPool> pool = slot.lock();
    if (!pool) {
        pool = std::make_shared<ThreadPool>(threads - 1);
        slot = pool;
    }
    return pool;
}

constexpr std::size_t alignment = 64;
// Elements per block of the memory kernels (zero, fill, copy, conversions).
constexpr std::size_t elements_per_block = std::size_t{1} << 16;

// value truncated toward zero to i32, saturating at the ends of its range (NaN gives 0), so
// that no conversion is undefined.
std::int32_t to_i32(double value) {
    if (!(value == value)) return 0;
    value = std::trunc(value);
    if (value <= -2147483648.0) return std::numeric_limits<std::int32_t>::min();
    if (value >= 2147483647.0) return std::numeric_limits<std::int32_t>::max();
    return static_cast<std::int32_t>(value);
}

template <class T> void fill_with(const CpuBackend& backend, T* data, std::size_t count, T value) {
    parallel_ranges(backend, count, elements_per_block,
                    [&](std::size_t begin, std::size_t end) { std::fill(data + begin, data + end, value); });
}

}  // namespace

CpuStorage::~CpuStorage() {
    if (owner != nullptr) owner->release(bytes);
    std::free(data);
}

CpuBackend::CpuBackend(const CpuOptions& options)
    : threads_(options.threads != 0 ? options.threads : std::max(1u, std::thread::hardware_concurrency())),
      pool_(shared_pool(threads_)) {
    warn_about_openblas_core();
}

std::string CpuBackend::name() const {
    return "cpu (" + std::to_string(threads_) + (threads_ == 1 ? " thread)" : " threads)");
}

bool CpuBackend::supports(DType dtype) const { return dtype != DType::f64; }

bool CpuBackend::supports_kernel(KernelId kernel, DType dtype) const {
    if (!supports(dtype)) return false;
    switch (kernel) {
        case KernelId::zero:
        case KernelId::fill:
        case KernelId::copy: return true;
        default: return is_float(dtype);
    }
}

std::shared_ptr<Storage> CpuBackend::allocate(std::size_t bytes) {
    const std::size_t rounded = (std::max<std::size_t>(bytes, 1) + alignment - 1) / alignment * alignment;
    void* memory = std::aligned_alloc(alignment, rounded);
    if (memory == nullptr) {
        throw OutOfMemory("cpu device: cannot allocate " + std::to_string(bytes) + " bytes");
    }
    auto storage = std::make_shared<CpuStorage>();
    storage->data = static_cast<std::byte*>(memory);
    storage->bytes = bytes;
    storage->backend = shared_from_this();
    storage->owner = this;
    const std::uint64_t live = live_.fetch_add(bytes) + bytes;
    std::uint64_t peak = peak_.load();
    while (live > peak && !peak_.compare_exchange_weak(peak, live)) {
    }
    return storage;
}

void CpuBackend::write(const Storage& storage, std::size_t offset, std::span<const std::byte> bytes) {
    if (!bytes.empty())
        std::memcpy(static_cast<const CpuStorage&>(storage).data + offset, bytes.data(), bytes.size());
}

void CpuBackend::read(const Storage& storage, std::size_t offset, std::span<std::byte> bytes) {
    if (!bytes.empty())
        std::memcpy(bytes.data(), static_cast<const CpuStorage&>(storage).data + offset, bytes.size());
}

StreamStats CpuBackend::stream_stats() const {
    StreamStats stats;
    stats.kernels = kernels_.load();
    return stats;
}

// ---- conversions ------------------------------------------------------------------------------

void load_floats(DType dtype, const std::byte* src, std::size_t count, float* dst) {
    switch (dtype) {
        case DType::f32: std::memcpy(dst, src, count * sizeof(float)); return;
        case DType::f16:
        case DType::bf16: {
            const bool half = dtype == DType::f16;
            for (std::size_t i = 0; i < count; ++i) {
                std::uint16_t bits;
                std::memcpy(&bits, src + 2 * i, 2);
                dst[i] = half ? half_to_float(bits) : bfloat_to_float(bits);
            }
            return;
        }
        case DType::i32: {
            for (std::size_t i = 0; i < count; ++i) {
                std::int32_t value;
                std::memcpy(&value, src + 4 * i, 4);
                dst[i] = static_cast<float>(value);
            }
            return;
        }
        case DType::f64: {
            for (std::size_t i = 0; i < count; ++i) {
                double value;
                std::memcpy(&value, src + 8 * i, 8);
                dst[i] = static_cast<float>(value);
            }
            return;
        }
    }
}

void store_floats(DType dtype, const float* src, std::size_t count, std::byte* dst) {
    switch (dtype) {
        case DType::f32: std::memcpy(dst, src, count * sizeof(float)); return;
        case DType::f16:
        case DType::bf16: {
            const bool half = dtype == DType::f16;
            for (std::size_t i = 0; i < count; ++i) {
                const std::uint16_t bits = half ? float_to_half(src[i]) : float_to_bfloat(src[i]);
                std::memcpy(dst + 2 * i, &bits, 2);
            }
            return;
        }
        case DType::i32: {
            for (std::size_t i = 0; i < count; ++i) {
                const auto value = to_i32(src[i]);
                std::memcpy(dst + 4 * i, &value, 4);
            }
            return;
        }
        case DType::f64: {
            for (std::size_t i = 0; i < count; ++i) {
                const double value = src[i];
                std::memcpy(dst + 8 * i, &value, 8);
            }
            return;
        }
    }
}

F32View::F32View(const CpuBackend& backend, const Tensor& tensor, bool load)
    : backend_(&backend), tensor_(tensor) {
    if (!tensor.defined()) return;
    if (tensor.dtype() == DType::f32) {
        data_ = cpu_data<float>(tensor);
        return;
    }
    copy_.resize(std::max<std::size_t>(tensor.size(), 1));
    data_ = copy_.data();
    if (!load) return;
    const std::byte* src = cpu_bytes(tensor);
    const std::size_t size = dtype_size(tensor.dtype());
    parallel_ranges(backend, tensor.size(), elements_per_block, [&](std::size_t begin, std::size_t end) {
        load_floats(tensor_.dtype(), src + begin * size, end - begin, data_ + begin);
    });
}

void F32View::store() {
    if (!tensor_.defined() || tensor_.dtype() == DType::f32) return;
    std::byte* dst = cpu_bytes(tensor_);
    const std::size_t size = dtype_size(tensor_.dtype());
    parallel_ranges(*backend_, tensor_.size(), elements_per_block, [&](std::size_t begin, std::size_t end) {
        store_floats(tensor_.dtype(), data_ + begin, end - begin, dst + begin * size);
    });
}

// ---- memory kernels ---------------------------------------------------------------------------

void CpuBackend::zero(const Tensor& x) {
    count_kernel();
    std::byte* data = cpu_bytes(x);
    parallel_ranges(*this, x.bytes(), elements_per_block * 4,
                    [&](std::size_t begin, std::size_t end) { std::memset(data + begin, 0, end - begin); });
}

void CpuBackend::fill(const Tensor& x, double value) {
    count_kernel();
    switch (x.dtype()) {
        case DType::f32: fill_with(*this, cpu_data<float>(x), x.size(), static_cast<float>(value)); return;
        case DType::f16:
            fill_with(*this, cpu_data<std::uint16_t>(x), x.size(), float_to_half(static_cast<float>(value)));
            return;
        case DType::bf16:
            fill_with(*this, cpu_data<std::uint16_t>(x), x.size(),
                      float_to_bfloat(static_cast<float>(value)));
            return;
        case DType::i32: fill_with(*this, cpu_data<std::int32_t>(x), x.size(), to_i32(value)); return;
        case DType::f64: unsupported(KernelId::fill, x.dtype());
    }
}

void CpuBackend::copy(const Tensor& src, const Tensor& dst) {
    count_kernel();
    const std::byte* from = cpu_bytes(src);
    std::byte* to = cpu_bytes(dst);
    const std::size_t count = src.size();
    if (count == 0) return;
    if (src.dtype() == dst.dtype()) {
        if (from == to) return;
        parallel_ranges(*this, src.bytes(), elements_per_block * 4, [&](std::size_t begin, std::size_t end) {
            std::memmove(to + begin, from + begin, end - begin);
        });
        return;
    }
    if (src.same_memory(dst)) {
        // Converting in place between sizes: through a copy of the source.
        std::vector<float> values(count);
        load_floats(src.dtype(), from, count, values.data());
        store_floats(dst.dtype(), values.data(), count, to);
        return;
    }
    const std::size_t src_size = dtype_size(src.dtype());
    const std::size_t dst_size = dtype_size(dst.dtype());
    if (src.dtype() == DType::i32 || dst.dtype() == DType::i32) {
        // i32 values beyond 2^24 do not survive a trip through f32: go through double.
        parallel_ranges(*this, count, elements_per_block, [&](std::size_t begin, std::size_t end) {
            for (std::size_t i = begin; i < end; ++i) {
                double value;
                if (src.dtype() == DType::i32) {
                    std::int32_t v;
                    std::memcpy(&v, from + i * 4, 4);
                    value = v;
                } else {
                    float v;
                    load_floats(src.dtype(), from + i * src_size, 1, &v);
                    value = v;
                }
                if (dst.dtype() == DType::i32) {
                    const auto v = to_i32(value);
                    std::memcpy(to + i * 4, &v, 4);
                } else {
                    const auto v = static_cast<float>(value);
                    store_floats(dst.dtype(), &v, 1, to + i * dst_size);
                }
            }
        });
        return;
    }
    constexpr std::size_t chunk = 1024;
    parallel_ranges(*this, count, elements_per_block, [&](std::size_t begin, std::size_t end) {
        float values[chunk];
        for (std::size_t i = begin; i < end; i += chunk) {
            const std::size_t n = std::min(chunk, end - i);
            load_floats(src.dtype(), from + i * src_size, n, values);
            store_floats(dst.dtype(), values, n, to + i * dst_size);
        }
    });
}

void CpuBackend::elementwise(const Tape& tape, std::span<const Tensor> inputs,
                             std::span<const Tensor> outputs, std::span<const double> params) {
    count_kernel();
    cpu_elementwise(*this, tape, inputs, outputs, params);
}

void CpuBackend::elementwise_backward(const Tape& tape, std::span<const Tensor> inputs,
                                      std::span<const Tensor> output_grads,
                                      std::span<const Tensor> input_grads, std::span<const double> params) {
    count_kernel();
    cpu_elementwise_backward(*this, tape, inputs, output_grads, input_grads, params);
}

std::shared_ptr<Backend> make_cpu_backend(const CpuOptions& options) {
    return std::make_shared<CpuBackend>(options);
}

}  // namespace tapevm::nn::detail
