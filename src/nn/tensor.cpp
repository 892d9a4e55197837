// Tensors (tensor.hpp): dtype helpers, the f16/bf16 conversions and the host side of Tensor
// (reads and writes through the device's backend, converting dtypes on the host).
#include "tapevm/nn/tensor.hpp"

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <utility>

#include "backend.hpp"
#include "tapevm/error.hpp"
#include "tapevm/nn/device.hpp"

namespace tapevm::nn {

std::size_t dtype_size(DType dtype) {
    switch (dtype) {
        case DType::f64: return 8;
        case DType::f32: return 4;
        case DType::f16: return 2;
        case DType::bf16: return 2;
        case DType::i32: return 4;
    }
    return 0;
}

std::string_view dtype_name(DType dtype) {
    switch (dtype) {
        case DType::f64: return "f64";
        case DType::f32: return "f32";
        case DType::f16: return "f16";
        case DType::bf16: return "bf16";
        case DType::i32: return "i32";
    }
    return "?";
}

bool is_float(DType dtype) { return dtype != DType::i32; }

std::size_t element_count(const Shape& shape) {
    std::size_t count = 1;
    for (std::size_t extent : shape) count *= extent;
    return count;
}

std::string shape_string(const Shape& shape) {
    std::string text = "[";
    for (std::size_t i = 0; i < shape.size(); ++i) {
        if (i > 0) text += ", ";
        text += std::to_string(shape[i]);
    }
    return text + "]";
}

// ---- f16 and bf16 ---------------------------------------------------------------------------

namespace {

/// `kept` + 1 when the dropped low bits (`dropped` of them, value `rest`) are more than half,
/// or exactly half and `kept` is odd: round to nearest, ties to even.
std::uint32_t round_nearest_even(std::uint32_t kept, std::uint32_t rest, unsigned dropped) {
    const std::uint32_t half = 1u << (dropped - 1);
    if (rest > half || (rest == half && (kept & 1u) != 0)) return kept + 1;
    return kept;
}

/// `value` rounded to float by round-to-odd (truncate, then set the last bit when inexact).
/// Rounding that result once more to a format at least 2 bits narrower (f16, bf16) gives the
/// correctly rounded result of the double: no double-rounding error.
float round_to_odd_float(double value) {
    float rounded = static_cast<float>(value);
    if (std::isnan(value) || std::isinf(rounded) || static_cast<double>(rounded) == value) return rounded;
    if (std::fabs(static_cast<double>(rounded)) > std::fabs(value)) rounded = std::nextafter(rounded, 0.0f);
    return std::bit_cast<float>(std::bit_cast<std::uint32_t>(rounded) | 1u);
}

}  // namespace

std::uint16_t float_to_half(float value) {
    const std::uint32_t bits = std::bit_cast<std::uint32_t>(value);
    const auto sign = static_cast<std::uint16_t>((bits >> 16) & 0x8000u);
    const std::uint32_t magnitude = bits & 0x7fffffffu;
    if (magnitude > 0x7f800000u) {  // NaN: quiet, keeping the top payload bits
        return static_cast<std::uint16_t>(sign | 0x7e00u | ((magnitude >> 13) & 0x3ffu));
    }
    if (magnitude >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u);  // >= 65520: inf
    const std::uint32_t exponent = magnitude >> 23;
    if (exponent >= 113) {  // a normal half: rebias 127 -> 15 and drop 13 bits
        const std::uint32_t rebiased = magnitude - (112u << 23);
        return static_cast<std::uint16_t>(sign | round_nearest_even(rebiased >> 13, rebiased & 0x1fffu, 13));
    }
    if (exponent < 101) return sign;  // below a quarter of the smallest subnormal: 0
    // A subnormal half m * 2^-24: the float's significand (implicit bit set) shifted right.
    const std::uint32_t significand = (magnitude & 0x7fffffu) | 0x800000u;
    const unsigned shift = 126 - exponent;  // 14 .. 25
    const std::uint32_t kept = significand >> shift;
    const std::uint32_t rest = significand & ((1u << shift) - 1);
    return static_cast<std::uint16_t>(sign | round_nearest_even(kept, rest, shift));
}

float half_to_float(std::uint16_t bits) {
    const std::uint32_t sign = static_cast<std::uint32_t>(bits & 0x8000u) << 16;
    const std::uint32_t exponent = (bits >> 10) & 0x1fu;
    const std::uint32_t mantissa = bits & 0x3ffu;
    if (exponent == 0) {  // zero or subnormal: mantissa * 2^-24, exact in float
        const float magnitude = std::ldexp(static_cast<float>(mantissa), -24);
        return sign != 0 ? -magnitude : magnitude;
    }
    if (exponent == 31) return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));
    return std::bit_cast<float>(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

std::uint16_t float_to_bfloat(float value) {
    const std::uint32_t bits = std::bit_cast<std::uint32_t>(value);
    if ((bits & 0x7fffffffu) > 0x7f800000u)
        return static_cast<std::uint16_t>((bits >> 16) | 0x40u);  // quiet NaN
    return static_cast<std::uint16_t>(round_nearest_even(bits >> 16, bits & 0xffffu, 16));
}

float bfloat_to_float(std::uint16_t bits) {
    return std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16);
}

double round_to(DType dtype, double value) {
    switch (dtype) {
        case DType::f64: return value;
        case DType::f32: return static_cast<double>(static_cast<float>(value));
        case DType::f16: return half_to_float(float_to_half(round_to_odd_float(value)));
        case DType::bf16: return bfloat_to_float(float_to_bfloat(round_to_odd_float(value)));
        case DType::i32: return std::trunc(value);
    }
    return value;
}

// ---- host conversions -----------------------------------------------------------------------

namespace {

/// Element `index` of `bytes` (dtype `dtype`) as a double.
double load_element(DType dtype, const std::byte* bytes, std::size_t index) {
    switch (dtype) {
        case DType::f64: {
            double value;
            std::memcpy(&value, bytes + index * 8, 8);
            return value;
        }
        case DType::f32: {
            float value;
            std::memcpy(&value, bytes + index * 4, 4);
            return value;
        }
        case DType::f16:
        case DType::bf16: {
            std::uint16_t value;
            std::memcpy(&value, bytes + index * 2, 2);
            return dtype == DType::f16 ? half_to_float(value) : bfloat_to_float(value);
        }
        case DType::i32: {
            std::int32_t value;
            std::memcpy(&value, bytes + index * 4, 4);
            return value;
        }
    }
    return 0;
}

/// Writes `value` rounded to `dtype` as element `index` of `bytes`. An i32 takes the
/// truncated value, which must fit (else Error naming `where`).
void store_element(DType dtype, std::byte* bytes, std::size_t index, double value, const char* where) {
    switch (dtype) {
        case DType::f64: std::memcpy(bytes + index * 8, &value, 8); return;
        case DType::f32: {
            const auto single = static_cast<float>(value);
            std::memcpy(bytes + index * 4, &single, 4);
            return;
        }
        case DType::f16:
        case DType::bf16: {
            const float odd = round_to_odd_float(value);
            const std::uint16_t half = dtype == DType::f16 ? float_to_half(odd) : float_to_bfloat(odd);
            std::memcpy(bytes + index * 2, &half, 2);
            return;
        }
        case DType::i32: {
            const double truncated = std::trunc(value);
            if (!(truncated >= -2147483648.0 && truncated <= 2147483647.0)) {
                throw Error(std::string(where) + ": value " + std::to_string(value) + " at index " +
                            std::to_string(index) + " does not fit i32");
            }
            const auto integer = static_cast<std::int32_t>(truncated);
            std::memcpy(bytes + index * 4, &integer, 4);
            return;
        }
    }
}

const detail::Storage& defined_storage(const std::shared_ptr<detail::Storage>& storage, const char* where) {
    if (!storage) throw Error(std::string(where) + ": undefined tensor");
    return *storage;
}

}  // namespace

Tensor::Tensor(std::shared_ptr<detail::Storage> storage, Shape shape, DType dtype)
    : storage_(std::move(storage)), shape_(std::move(shape)), dtype_(dtype) {}

std::size_t Tensor::dim(std::ptrdiff_t axis) const {
    const auto rank_signed = static_cast<std::ptrdiff_t>(shape_.size());
    const std::ptrdiff_t index = axis < 0 ? axis + rank_signed : axis;
    if (index < 0 || index >= rank_signed) {
        throw Error("Tensor::dim: axis " + std::to_string(axis) + " out of range for shape " +
                    shape_string(shape_));
    }
    return shape_[static_cast<std::size_t>(index)];
}

Device Tensor::device() const {
    const detail::Storage& storage = defined_storage(storage_, "Tensor::device");
    return Device(storage.backend);
}

Tensor Tensor::reshape(Shape shape) const {
    defined_storage(storage_, "Tensor::reshape");
    if (element_count(shape) != size()) {
        throw ShapeError("Tensor::reshape " + shape_string(shape_) + " to " + shape_string(shape), "shape",
                         size(), element_count(shape));
    }
    return Tensor(storage_, std::move(shape), dtype_);
}

std::vector<std::byte> Tensor::to_bytes() const {
    const detail::Storage& storage = defined_storage(storage_, "Tensor::to_bytes");
    std::vector<std::byte> bytes(this->bytes());
    if (!bytes.empty()) storage.backend->read(storage, 0, bytes);
    return bytes;
}

PendingHostCopy Tensor::to_host_later() const {
    const detail::Storage& storage = defined_storage(storage_, "Tensor::to_host_later");
    PendingHostCopy copy;
    copy.tensor_ = *this;
    copy.finish_ = storage.backend->read_later(storage, 0, bytes());
    return copy;
}

std::vector<double> PendingHostCopy::to_double() {
    if (!finish_)
        throw Error("PendingHostCopy::to_double: nothing pending (taken already, or never started)");
    std::vector<std::byte> bytes(tensor_.bytes());
    const auto finish = std::move(finish_);
    finish_ = nullptr;
    finish(bytes);
    std::vector<double> values(tensor_.size());
    for (std::size_t i = 0; i < values.size(); ++i)
        values[i] = load_element(tensor_.dtype(), bytes.data(), i);
    tensor_ = Tensor();
    return values;
}

std::vector<double> Tensor::to_double() const {
    const std::vector<std::byte> bytes = to_bytes();
    std::vector<double> values(size());
    for (std::size_t i = 0; i < values.size(); ++i) values[i] = load_element(dtype_, bytes.data(), i);
    return values;
}

std::vector<float> Tensor::to_float() const {
    const std::vector<std::byte> bytes = to_bytes();
    std::vector<float> values(size());
    for (std::size_t i = 0; i < values.size(); ++i) {
        values[i] = static_cast<float>(load_element(dtype_, bytes.data(), i));
    }
    return values;
}

std::vector<std::int32_t> Tensor::to_int() const {
    const std::vector<std::byte> bytes = to_bytes();
    std::vector<std::int32_t> values(size());
    for (std::size_t i = 0; i < values.size(); ++i) {
        const double truncated = std::trunc(load_element(dtype_, bytes.data(), i));
        if (!(truncated >= -2147483648.0 && truncated <= 2147483647.0)) {
            throw Error("Tensor::to_int: element " + std::to_string(i) + " does not fit i32");
        }
        values[i] = static_cast<std::int32_t>(truncated);
    }
    return values;
}

void Tensor::assign_bytes(std::span<const std::byte> bytes) const {
    const detail::Storage& storage = defined_storage(storage_, "Tensor::assign_bytes");
    if (bytes.size() != this->bytes())
        throw ShapeError("Tensor::assign_bytes", "bytes", this->bytes(), bytes.size());
    if (!bytes.empty()) storage.backend->write(storage, 0, bytes);
}

namespace {

template <typename Value> void assign_values(const Tensor& tensor, std::span<const Value> values) {
    if (!tensor.defined()) throw Error("Tensor::assign: undefined tensor");
    if (values.size() != tensor.size())
        throw ShapeError("Tensor::assign", "values", tensor.size(), values.size());
    std::vector<std::byte> bytes(tensor.bytes());
    for (std::size_t i = 0; i < values.size(); ++i) {
        store_element(tensor.dtype(), bytes.data(), i, static_cast<double>(values[i]), "Tensor::assign");
    }
    tensor.assign_bytes(bytes);
}

}  // namespace

void Tensor::assign(std::span<const double> values) const { assign_values(*this, values); }
void Tensor::assign(std::span<const float> values) const { assign_values(*this, values); }
void Tensor::assign(std::span<const std::int32_t> values) const { assign_values(*this, values); }

std::string Tensor::describe() const {
    if (!storage_) return "undefined tensor";
    return std::string(dtype_name(dtype_)) + shape_string(shape_) + " on " +
           device_kind_name(storage_->backend->kind());
}

}  // namespace tapevm::nn
