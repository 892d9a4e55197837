// Tensors: dense row-major arrays in one device's memory, with a dtype and a shape.
//
//   tapevm::nn::Device gpu = tapevm::nn::Device::gpu();
//   tapevm::nn::Tensor x = gpu.upload({64, 384}, std::span<const float>(host), DType::f16);
//   std::vector<float> back = x.to_float();  // waits for the kernels that write x
//
// A Tensor is a shared handle: copies refer to the same memory (as torch.Tensor and
// ggml_tensor do); `reshape` gives another shape over the same memory. Memory is freed when
// the last handle goes, and never while recorded work still uses it (device.hpp: streams).
//
// dtypes: f64 (the reference device's arithmetic; the others may lack it), f32, f16 and
// bf16 (storage only: kernels compute in f32), i32 (token ids, targets).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tapevm::nn {

enum class DType : std::uint8_t { f64, f32, f16, bf16, i32 };
inline constexpr std::size_t dtype_count = 5;

/// Bytes per element: 8, 4, 2, 2, 4.
std::size_t dtype_size(DType dtype);
/// "f64", "f32", "f16", "bf16", "i32" (the names safetensors uses are in safetensors.hpp).
std::string_view dtype_name(DType dtype);
/// True for f64, f32, f16 and bf16.
bool is_float(DType dtype);

/// Row-major extents, outermost first. A shape of rank 0 is a scalar (one element).
using Shape = std::vector<std::size_t>;
/// The number of elements (1 for rank 0; 0 when any extent is 0).
std::size_t element_count(const Shape& shape);
/// "[64, 384]".
std::string shape_string(const Shape& shape);

/// IEEE binary16 and bfloat16 conversions, round to nearest even; NaN stays NaN.
std::uint16_t float_to_half(float value);
float half_to_float(std::uint16_t bits);
std::uint16_t float_to_bfloat(float value);
float bfloat_to_float(std::uint16_t bits);
/// `value` rounded to what `dtype` stores, back in double (f64: itself; i32: truncation).
double round_to(DType dtype, double value);

class Device;
class PendingHostCopy;
namespace detail {
class Backend;
struct Storage;
}  // namespace detail

class Tensor {
public:
    /// An undefined tensor: no device, no memory. Optional kernel arguments take one.
    Tensor() = default;

    bool defined() const { return storage_ != nullptr; }
    explicit operator bool() const { return defined(); }
    const Shape& shape() const { return shape_; }
    std::size_t rank() const { return shape_.size(); }
    /// Extent of axis `axis`; negative counts from the end (-1 is the last axis).
    std::size_t dim(std::ptrdiff_t axis) const;
    DType dtype() const { return dtype_; }
    std::size_t size() const { return element_count(shape_); }
    std::size_t bytes() const { return size() * dtype_size(dtype_); }
    /// The device that holds it. Throws tapevm::Error on an undefined tensor.
    Device device() const;

    /// The same memory under another shape with as many elements (else ShapeError).
    Tensor reshape(Shape shape) const;
    /// True when both handles share one memory.
    bool same_memory(const Tensor& other) const { return storage_ == other.storage_; }

    /// Host copies, converted from the tensor's dtype; each waits for the work recorded
    /// before it that writes this tensor.
    std::vector<double> to_double() const;
    std::vector<float> to_float() const;
    std::vector<std::int32_t> to_int() const;
    /// The raw bytes in the tensor's dtype (bytes() of them).
    std::vector<std::byte> to_bytes() const;
    /// Starts a host copy and returns without waiting (PendingHostCopy below): on the gpu
    /// device the copy is recorded after the work before it and submitted; the CPU devices
    /// copy at once.
    PendingHostCopy to_host_later() const;
    /// Overwrites the whole tensor from host values converted to its dtype (ShapeError unless
    /// exactly size() values). Ordered after the work recorded before it.
    void assign(std::span<const double> values) const;
    void assign(std::span<const float> values) const;
    void assign(std::span<const std::int32_t> values) const;
    /// Overwrites the whole tensor with bytes of its dtype (exactly bytes() of them).
    void assign_bytes(std::span<const std::byte> bytes) const;

    /// "f32[64, 384] on cpu".
    std::string describe() const;

    // For backends: the storage and its owner.
    detail::Storage& storage() const { return *storage_; }
    const std::shared_ptr<detail::Storage>& storage_handle() const { return storage_; }
    Tensor(std::shared_ptr<detail::Storage> storage, Shape shape, DType dtype);

private:
    std::shared_ptr<detail::Storage> storage_;
    Shape shape_;
    DType dtype_ = DType::f32;
};

/// A host copy on its way (Tensor::to_host_later()). to_double() waits only for the work
/// recorded before the copy started, not for what was recorded since: a training loop reads
/// step n's loss while step n + 1 runs. It holds the tensor (and so its device) until taken;
/// taken once (a second to_double() throws tapevm::Error).
class PendingHostCopy {
public:
    PendingHostCopy() = default;
    /// True until to_double() took the values.
    bool pending() const { return static_cast<bool>(finish_); }
    std::vector<double> to_double();

private:
    friend class Tensor;
    Tensor tensor_;
    std::function<void(std::span<std::byte>)> finish_;
};

}  // namespace tapevm::nn
