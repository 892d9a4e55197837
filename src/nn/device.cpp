// Devices (device.hpp): the factories and the thin layer over a backend's memory and stream.
#include "tapevm/nn/device.hpp"

#include <algorithm>
#include <utility>

#include "backend.hpp"
#include "tapevm/error.hpp"
#include "tapevm/nn/kernels.hpp"

namespace tapevm::nn {

const char* device_kind_name(DeviceKind kind) {
    switch (kind) {
        case DeviceKind::reference: return "reference";
        case DeviceKind::cpu: return "cpu";
        case DeviceKind::gpu: return "gpu";
    }
    return "?";
}

Device::Device(std::shared_ptr<detail::Backend> backend) : backend_(std::move(backend)) {
    if (!backend_) throw Error("Device: no backend");
}

Device Device::reference() {
    static const std::shared_ptr<detail::Backend> instance = detail::make_reference_backend();
    return Device(instance);
}

Device Device::cpu(CpuOptions options) { return Device(detail::make_cpu_backend(options)); }

Device Device::gpu(GpuOptions options) { return Device(detail::make_gpu_backend(options)); }

bool Device::gpu_available() { return detail::gpu_backend_available(); }

DeviceKind Device::kind() const { return backend_->kind(); }
std::string Device::name() const { return backend_->name(); }
bool Device::supports(DType dtype) const { return backend_->supports(dtype); }
DType Device::accumulate_dtype() const { return kind() == DeviceKind::reference ? DType::f64 : DType::f32; }
bool Device::has_cooperative_matrix() const { return backend_->has_cooperative_matrix(); }

Tensor Device::empty(Shape shape, DType dtype) const {
    if (!supports(dtype)) {
        throw Unsupported("Device::empty: " + std::string(dtype_name(dtype)) + " is not supported on " +
                          name());
    }
    // Never a zero-byte allocation (a Vulkan buffer cannot be empty): an empty tensor gets one
    // element's worth, which nothing reads.
    const std::size_t bytes = std::max(element_count(shape) * dtype_size(dtype), dtype_size(dtype));
    std::shared_ptr<detail::Storage> storage = backend_->allocate(bytes);
    if (!storage->backend) storage->backend = backend_;
    if (storage->bytes == 0) storage->bytes = bytes;
    return Tensor(std::move(storage), std::move(shape), dtype);
}

Tensor Device::zeros(Shape shape, DType dtype) const {
    Tensor tensor = empty(std::move(shape), dtype);
    nn::zero(tensor);
    return tensor;
}

Tensor Device::upload(Shape shape, std::span<const double> values, DType dtype) const {
    if (values.size() != element_count(shape)) {
        throw ShapeError("Device::upload " + shape_string(shape), "values", element_count(shape),
                         values.size());
    }
    Tensor tensor = empty(std::move(shape), dtype);
    tensor.assign(values);
    return tensor;
}

Tensor Device::upload(Shape shape, std::span<const float> values, DType dtype) const {
    if (values.size() != element_count(shape)) {
        throw ShapeError("Device::upload " + shape_string(shape), "values", element_count(shape),
                         values.size());
    }
    Tensor tensor = empty(std::move(shape), dtype);
    tensor.assign(values);
    return tensor;
}

Tensor Device::upload(Shape shape, std::span<const std::int32_t> values, DType dtype) const {
    if (values.size() != element_count(shape)) {
        throw ShapeError("Device::upload " + shape_string(shape), "values", element_count(shape),
                         values.size());
    }
    Tensor tensor = empty(std::move(shape), dtype);
    tensor.assign(values);
    return tensor;
}

void Device::synchronize() const { backend_->synchronize(); }
StreamStats Device::stream_stats() const { return backend_->stream_stats(); }
std::uint64_t Device::live_memory() const { return backend_->live_memory(); }
std::uint64_t Device::peak_memory() const { return backend_->peak_memory(); }
void Device::reset_peak_memory() const { backend_->reset_peak_memory(); }
std::uint64_t Device::reserved_memory() const { return backend_->reserved_memory(); }
void Device::empty_cache() const { backend_->empty_cache(); }
std::string Device::profile_report() const { return backend_->profile_report(); }

}  // namespace tapevm::nn
