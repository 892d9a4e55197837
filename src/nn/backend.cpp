// The backend interface's shared parts (backend.hpp): kernel names and the defaults that
// report a kernel as unsupported.
#include "backend.hpp"

#include <array>

namespace tapevm::nn::detail {

namespace {

constexpr std::array<const char*, static_cast<std::size_t>(KernelId::count)> kernel_names = {
    "zero",
    "fill",
    "copy",
    "matmul",
    "bias_add",
    "add_assign",
    "reduce_sum",
    "transpose_2d",
    "softmax",
    "softmax_backward",
    "layer_norm",
    "layer_norm_backward",
    "rms_norm",
    "rms_norm_backward",
    "embedding",
    "embedding_backward",
    "cross_entropy",
    "global_norm_squared",
    "attention",
    "attention_backward",
    "kv_attention",
    "elementwise",
    "elementwise_backward",
    "dropout",
};

/// The dtype an unsupported kernel reports: that of its first defined float tensor.
DType float_dtype_of(std::span<const Tensor> tensors) {
    for (const Tensor& tensor : tensors) {
        if (tensor.defined() && is_float(tensor.dtype())) return tensor.dtype();
    }
    return tensors.empty() || !tensors.front().defined() ? DType::f32 : tensors.front().dtype();
}

DType float_dtype_of(std::initializer_list<Tensor> tensors) {
    return float_dtype_of(std::span<const Tensor>(tensors.begin(), tensors.size()));
}

}  // namespace

const char* kernel_name(KernelId kernel) {
    const auto index = static_cast<std::size_t>(kernel);
    return index < kernel_names.size() ? kernel_names[index] : "?";
}

void Backend::unsupported(KernelId kernel, DType dtype) const {
    throw Unsupported(std::string(kernel_name(kernel)) + " is not available on " + name() + " for " +
                      std::string(dtype_name(dtype)));
}

std::function<void(std::span<std::byte>)> Backend::read_later(const Storage& storage, std::size_t offset,
                                                              std::size_t bytes) {
    auto copy = std::make_shared<std::vector<std::byte>>(bytes);
    if (bytes != 0) read(storage, offset, *copy);
    return [copy](std::span<std::byte> out) {
        std::copy(copy->begin(), copy->begin() + out.size(), out.begin());
    };
}

void Backend::zero(const Tensor& x) { unsupported(KernelId::zero, x.dtype()); }
void Backend::fill(const Tensor& x, double) { unsupported(KernelId::fill, x.dtype()); }
void Backend::copy(const Tensor& src, const Tensor& dst) {
    unsupported(KernelId::copy, float_dtype_of({src, dst}));
}
void Backend::matmul(const Tensor& a, const Tensor&, const Tensor&, const MatmulOptions&) {
    unsupported(KernelId::matmul, a.dtype());
}
void Backend::bias_add(const Tensor& x, const Tensor&) { unsupported(KernelId::bias_add, x.dtype()); }
void Backend::add_assign(const Tensor& dst, const Tensor&, double) {
    unsupported(KernelId::add_assign, dst.dtype());
}
void Backend::dropout(const Tensor& x, const Tensor&, double, std::uint64_t, std::uint64_t) {
    unsupported(KernelId::dropout, x.dtype());
}
void Backend::reduce_sum(const Tensor& x, const Tensor&, std::size_t, std::size_t, std::size_t, bool) {
    unsupported(KernelId::reduce_sum, x.dtype());
}
void Backend::transpose_2d(const Tensor& x, const Tensor&, std::size_t, std::size_t, std::size_t) {
    unsupported(KernelId::transpose_2d, x.dtype());
}
void Backend::softmax(const Tensor& x, const Tensor&) { unsupported(KernelId::softmax, x.dtype()); }
void Backend::softmax_backward(const Tensor& y, const Tensor&, const Tensor&) {
    unsupported(KernelId::softmax_backward, y.dtype());
}
void Backend::layer_norm(const Tensor& x, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                         const Tensor&, double) {
    unsupported(KernelId::layer_norm, x.dtype());
}
void Backend::layer_norm_backward(const Tensor&, const Tensor& x, const Tensor&, const Tensor&, const Tensor&,
                                  const Tensor&, const Tensor&, const Tensor&) {
    unsupported(KernelId::layer_norm_backward, x.dtype());
}
void Backend::rms_norm(const Tensor& x, const Tensor&, const Tensor&, const Tensor&, double) {
    unsupported(KernelId::rms_norm, x.dtype());
}
void Backend::rms_norm_backward(const Tensor&, const Tensor& x, const Tensor&, const Tensor&, const Tensor&,
                                const Tensor&) {
    unsupported(KernelId::rms_norm_backward, x.dtype());
}
void Backend::embedding(const Tensor&, const Tensor& table, const Tensor&) {
    unsupported(KernelId::embedding, table.dtype());
}
void Backend::embedding_backward(const Tensor&, const Tensor& dout, const Tensor&) {
    unsupported(KernelId::embedding_backward, dout.dtype());
}
void Backend::cross_entropy(const Tensor& logits, const Tensor&, const Tensor&, const Tensor&, std::int32_t,
                            double) {
    unsupported(KernelId::cross_entropy, logits.dtype());
}
void Backend::global_norm_squared(std::span<const Tensor> tensors, const Tensor&) {
    unsupported(KernelId::global_norm_squared, float_dtype_of(tensors));
}
void Backend::attention(const Tensor& q, const Tensor&, const Tensor&, const Tensor&, const Tensor&, double,
                        bool) {
    unsupported(KernelId::attention, q.dtype());
}
void Backend::attention_backward(const Tensor& q, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                                 const Tensor&, const Tensor&, const Tensor&, const Tensor&, double, bool) {
    unsupported(KernelId::attention_backward, q.dtype());
}
void Backend::kv_attention(const Tensor& q, const Tensor&, const Tensor&, const Tensor&, std::size_t, double,
                           bool) {
    unsupported(KernelId::kv_attention, q.dtype());
}
void Backend::elementwise(const Tape&, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                          std::span<const double>) {
    unsupported(KernelId::elementwise, outputs.empty() ? float_dtype_of(inputs) : float_dtype_of(outputs));
}
void Backend::elementwise_backward(const Tape&, std::span<const Tensor> inputs, std::span<const Tensor>,
                                   std::span<const Tensor>, std::span<const double>) {
    unsupported(KernelId::elementwise_backward, float_dtype_of(inputs));
}

}  // namespace tapevm::nn::detail
