// The reference device's memory (host bytes) and its memory kernels: zero, fill, copy,
// bias_add, add_assign, reduce_sum, transpose_2d, global_norm_squared.
#include <cmath>
#include <cstring>
#include <string>

#include "../dropout_mask.hpp"
#include "reference/reference_backend.hpp"

namespace tapevm::nn::detail {

HostStorage::HostStorage(std::size_t size, std::shared_ptr<MemoryCounter> memory_counter)
    : data(new std::byte[size]), counter(std::move(memory_counter)) {
    bytes = size;
    const std::uint64_t live = counter->live += size;
    std::uint64_t peak = counter->peak;
    while (live > peak && !counter->peak.compare_exchange_weak(peak, live)) {
    }
}

HostStorage::~HostStorage() { counter->live -= bytes; }

double* f64_data(const Tensor& tensor) {
    return reinterpret_cast<double*>(static_cast<HostStorage&>(tensor.storage()).data.get());
}

std::int32_t* i32_data(const Tensor& tensor) {
    return reinterpret_cast<std::int32_t*>(static_cast<HostStorage&>(tensor.storage()).data.get());
}

std::shared_ptr<Storage> ReferenceBackend::allocate(std::size_t bytes) {
    return std::make_shared<HostStorage>(bytes, memory_);
}

void ReferenceBackend::write(const Storage& storage, std::size_t offset, std::span<const std::byte> bytes) {
    std::memcpy(static_cast<const HostStorage&>(storage).data.get() + offset, bytes.data(), bytes.size());
}

void ReferenceBackend::read(const Storage& storage, std::size_t offset, std::span<std::byte> bytes) {
    std::memcpy(bytes.data(), static_cast<const HostStorage&>(storage).data.get() + offset, bytes.size());
}

StreamStats ReferenceBackend::stream_stats() const {
    StreamStats stats;
    stats.kernels = kernels_;
    return stats;
}

namespace {

/// Element i of a reference tensor as a double (f64 or i32).
double load(const Tensor& tensor, std::size_t i) {
    return tensor.dtype() == DType::i32 ? i32_data(tensor)[i] : f64_data(tensor)[i];
}

/// Stores `value` as element i, truncated for i32 (Error when it does not fit).
void store(const Tensor& tensor, std::size_t i, double value, const char* kernel) {
    if (tensor.dtype() != DType::i32) {
        f64_data(tensor)[i] = value;
        return;
    }
    const double truncated = std::trunc(value);
    if (!(truncated >= -2147483648.0 && truncated <= 2147483647.0)) {
        throw Error(std::string(kernel) + ": value " + std::to_string(value) + " does not fit i32");
    }
    i32_data(tensor)[i] = static_cast<std::int32_t>(truncated);
}

}  // namespace

void ReferenceBackend::zero(const Tensor& x) {
    count_kernel();
    std::memset(static_cast<HostStorage&>(x.storage()).data.get(), 0, x.bytes());
}

void ReferenceBackend::fill(const Tensor& x, double value) {
    count_kernel();
    for (std::size_t i = 0; i < x.size(); ++i) store(x, i, value, "fill");
}

void ReferenceBackend::copy(const Tensor& src, const Tensor& dst) {
    count_kernel();
    for (std::size_t i = 0; i < dst.size(); ++i) store(dst, i, load(src, i), "copy");
}

void ReferenceBackend::bias_add(const Tensor& x, const Tensor& bias) {
    count_kernel();
    double* out = f64_data(x);
    const double* b = f64_data(bias);
    const std::size_t n = bias.size();
    const std::size_t rows = x.size() / n;
    for (std::size_t r = 0; r < rows; ++r) {
        for (std::size_t j = 0; j < n; ++j) out[r * n + j] += b[j];
    }
}

void ReferenceBackend::add_assign(const Tensor& dst, const Tensor& src, double alpha) {
    count_kernel();
    double* d = f64_data(dst);
    const double* s = f64_data(src);
    for (std::size_t i = 0; i < dst.size(); ++i) d[i] += alpha * s[i];
}

void ReferenceBackend::dropout(const Tensor& x, const Tensor& y, double p, std::uint64_t seed,
                               std::uint64_t stream) {
    count_kernel();
    const DropoutMask mask(p, seed, stream);
    const double* in = f64_data(x);
    double* out = f64_data(y);
    for (std::size_t i = 0; i < x.size(); ++i)
        out[i] = mask.keeps(static_cast<std::uint32_t>(i)) ? in[i] * mask.scale : 0.0;
}

void ReferenceBackend::reduce_sum(const Tensor& x, const Tensor& y, std::size_t outer, std::size_t n,
                                  std::size_t inner, bool accumulate) {
    count_kernel();
    const double* in = f64_data(x);
    double* out = f64_data(y);
    for (std::size_t o = 0; o < outer; ++o) {
        for (std::size_t i = 0; i < inner; ++i) {
            double sum = 0;
            for (std::size_t k = 0; k < n; ++k) sum += in[(o * n + k) * inner + i];
            out[o * inner + i] = accumulate ? out[o * inner + i] + sum : sum;
        }
    }
}

void ReferenceBackend::transpose_2d(const Tensor& x, const Tensor& y, std::size_t batch, std::size_t rows,
                                    std::size_t cols) {
    count_kernel();
    const std::size_t element = dtype_size(x.dtype());
    const std::byte* in = static_cast<HostStorage&>(x.storage()).data.get();
    std::byte* out = static_cast<HostStorage&>(y.storage()).data.get();
    for (std::size_t b = 0; b < batch; ++b) {
        for (std::size_t i = 0; i < rows; ++i) {
            for (std::size_t j = 0; j < cols; ++j) {
                const std::size_t from = (b * rows + i) * cols + j;  // x[b][i][j]
                const std::size_t to = (b * cols + j) * rows + i;    // y[b][j][i]
                std::memcpy(out + to * element, in + from * element, element);
            }
        }
    }
}

void ReferenceBackend::global_norm_squared(std::span<const Tensor> tensors, const Tensor& out) {
    count_kernel();
    double sum = 0;
    for (const Tensor& tensor : tensors) {
        const double* x = f64_data(tensor);
        for (std::size_t i = 0; i < tensor.size(); ++i) sum += x[i] * x[i];
    }
    f64_data(out)[0] = sum;
}

std::shared_ptr<Backend> make_reference_backend() { return std::make_shared<ReferenceBackend>(); }

}  // namespace tapevm::nn::detail
