// The GPU VM's public API (tapevm/gpu.hpp) in a build without it (meson option gpu disabled or
// Vulkan, glslang or SPIRV-Tools not found): every entry point links and throws
// tapevm::Unsupported, so programs and libraries written against the whole API build unchanged
// and say at run time what is missing. Built instead of the rest of this folder
// (src/vm_gpu/meson.build); nothing here touches Vulkan.
#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tapevm/error.hpp"
#include "tapevm/gpu.hpp"

namespace tapevm::gpu {
namespace {

[[noreturn]] void built_without_gpu() {
    throw Unsupported(
        "tapevm was built without the GPU VM (meson option gpu: disabled, or Vulkan's headers, glslang "
        "or SPIRV-Tools not found when it was configured)");
}

}  // namespace

std::vector<DeviceInfo> devices() { built_without_gpu(); }

std::vector<std::string> validation_messages() { return {}; }

std::string generated_glsl(const Tape&, std::string_view, bool) { built_without_gpu(); }

CompilePlan planned_compile(const Tape&, std::string_view, bool) { built_without_gpu(); }

struct Vm::Impl {};

Vm::Vm(Tape, Options) { built_without_gpu(); }
Vm::~Vm() = default;
Vm::Vm(Vm&&) noexcept = default;
Vm& Vm::operator=(Vm&&) noexcept = default;

// A Vm is never constructed in this build: the members below are unreachable, and throw
// rather than abort should one be called on a moved-from object.
const Tape& Vm::tape() const { built_without_gpu(); }
std::string Vm::name() const { built_without_gpu(); }
const DeviceInfo& Vm::device() const { built_without_gpu(); }
bool Vm::validation() const { built_without_gpu(); }
Engine Vm::engine() const { built_without_gpu(); }
CompileWait Vm::compile_wait() const { built_without_gpu(); }
Vm::Timing Vm::last_timing() const { built_without_gpu(); }

template <class Real> std::size_t Vm::chunk_points(std::string_view) const { built_without_gpu(); }
template <class Real> CompilePlan Vm::compile_plan(std::string_view) const { built_without_gpu(); }
template <class Real> CompilePlan Vm::compile_status(std::string_view) const { built_without_gpu(); }
template <class Real> Buffer<Real> Vm::upload(std::span<const Real>) const { built_without_gpu(); }
template <class Real> Buffer<Real> Vm::allocate(std::size_t) const { built_without_gpu(); }
template <class Real> void Vm::download(const Buffer<Real>&, std::span<Real>) const { built_without_gpu(); }
template <class Real>
Report Vm::forward(std::size_t, const Buffer<Real>&, const std::type_identity_t<Buffer<Real>>*,
                   Buffer<Real>&) const {
    built_without_gpu();
}
template <class Real>
Report Vm::gradient(std::size_t, const Buffer<Real>&, const std::type_identity_t<Buffer<Real>>*,
                    Buffer<Real>&) const {
    built_without_gpu();
}
template <class Real>
Report Vm::jacobian(std::size_t, const Buffer<Real>&, const std::type_identity_t<Buffer<Real>>*,
                    Buffer<Real>&, JacobianMode) const {
    built_without_gpu();
}
template <class Real>
Report Vm::value_and_gradient(std::size_t, const Buffer<Real>&, const std::type_identity_t<Buffer<Real>>*,
                              Buffer<Real>&, Buffer<Real>&) const {
    built_without_gpu();
}
template <class Real> Report Vm::forward_impl(const Batch<Real>&, std::span<Real>) const {
    built_without_gpu();
}
template <class Real> Report Vm::gradient_impl(const Batch<Real>&, std::span<Real>) const {
    built_without_gpu();
}
template <class Real> Report Vm::jacobian_impl(const Batch<Real>&, std::span<Real>, JacobianMode) const {
    built_without_gpu();
}
template <class Real> Report Vm::jvp_impl(const Batch<Real>&, std::span<const Real>, std::span<Real>) const {
    built_without_gpu();
}
template <class Real> Report Vm::vjp_impl(const Batch<Real>&, std::span<const Real>, std::span<Real>) const {
    built_without_gpu();
}
template <class Real>
Report Vm::hvp_impl(const Batch<Real>&, std::span<const Real>, std::span<const Real>, std::span<Real>) const {
    built_without_gpu();
}

#include "vm_instantiations.inc"  // the same instantiations as vm.cpp's

}  // namespace tapevm::gpu
