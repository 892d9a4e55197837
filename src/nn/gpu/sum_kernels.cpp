// The gpu backend's summing kernels: bias_add, add_assign (shaders/bias_add.comp,
// add_assign.comp), reduce_sum (reduce_sum.comp) and global_norm_squared (norm_squared.comp,
// two passes). Every reduction sums in an order fixed by the shapes alone: deterministic.
#include <algorithm>
#include <bit>
#include <cstdint>
#include <string>

#include "../dropout_mask.hpp"
#include "backend.hpp"
#include "tapevm/error.hpp"

namespace tapevm::nn::detail {
namespace {

std::uint32_t u32(std::size_t value) { return static_cast<std::uint32_t>(value); }

void check_elements(const Tensor& x, KernelId kernel) {
    if (x.size() >= (std::size_t{1} << 32))
        throw Unsupported(std::string(kernel_name(kernel)) + ": " + x.describe() +
                          " has 2^32 elements or more (the gpu kernels index with 32 bits)");
}

}  // namespace

void GpuBackend::bias_add(const Tensor& x, const Tensor& bias) {
    if (!supports(x.dtype()) || x.dtype() == DType::i32) unsupported(KernelId::bias_add, x.dtype());
    if (x.size() == 0) return;
    check_elements(x, KernelId::bias_add);
    const struct {
        std::uint32_t n, cols;
    } push{u32(x.size()), u32(bias.size())};
    dispatch(pipeline(std::string("bias_add_") + shader_suffix(x.dtype())), {x, bias}, push,
             {groups_for(x.size(), 256, 4096), 1, 1});
}

void GpuBackend::add_assign(const Tensor& dst, const Tensor& src, double alpha) {
    if (!supports(dst.dtype()) || dst.dtype() == DType::i32) unsupported(KernelId::add_assign, dst.dtype());
    if (dst.size() == 0) return;
    if (src.dtype() != dst.dtype()) unsupported(KernelId::add_assign, src.dtype());
    check_elements(dst, KernelId::add_assign);
    const struct {
        std::uint32_t n;
        float alpha;
    } push{u32(dst.size()), static_cast<float>(alpha)};
    dispatch(pipeline(std::string("add_assign_") + shader_suffix(dst.dtype())), {dst, src}, push,
             {groups_for(dst.size(), 256, 4096), 1, 1});
}

void GpuBackend::dropout(const Tensor& x, const Tensor& y, double p, std::uint64_t seed, std::uint64_t stream) {
    if (!supports(x.dtype()) || x.dtype() == DType::i32) unsupported(KernelId::dropout, x.dtype());
    check_elements(x, KernelId::dropout);
    const DropoutMask mask(p, seed, stream);
    const struct {
        std::uint32_t n, key, threshold;
        float scale;
    } push{u32(x.size()), mask.key, mask.threshold, static_cast<float>(mask.scale)};
    dispatch(pipeline(std::string("dropout_") + shader_suffix(x.dtype())), {x, y}, push,
             {groups_for(x.size(), 256, 4096), 1, 1});
}

void GpuBackend::reduce_sum(const Tensor& x, const Tensor& y, std::size_t outer, std::size_t n, std::size_t inner,
                            bool accumulate) {
    if (!supports(x.dtype()) || x.dtype() == DType::i32) unsupported(KernelId::reduce_sum, x.dtype());
    if (y.dtype() != x.dtype()) unsupported(KernelId::reduce_sum, y.dtype());
    if (outer == 0 || inner == 0) return;
    check_elements(x, KernelId::reduce_sum);
    check_elements(y, KernelId::reduce_sum);
    // COLS consecutive outputs per workgroup, LANES threads down the reduced axis for each.
    const std::uint32_t cols = std::min<std::uint32_t>(32, std::bit_ceil(u32(inner)));
    const std::uint32_t lanes = 256 / cols;
    const struct {
        std::uint32_t outer, n, inner, accumulate;
    } push{u32(outer), u32(n), u32(inner), accumulate ? 1u : 0u};
    const std::string shader = std::string("reduce_sum_") + shader_suffix(x.dtype());  // y: the same dtype
    dispatch(pipeline(shader, {cols, lanes}), {x, y}, push,
             {u32((inner + cols - 1) / cols), u32(std::min<std::size_t>(outer, 65535)), 1});
}

void GpuBackend::global_norm_squared(std::span<const Tensor> tensors, const Tensor& out) {
    constexpr std::size_t chunk = 4096;      // elements per workgroup (shaders/norm_squared.comp)
    constexpr std::size_t max_groups = 65535;
    std::size_t partials = 0;
    for (const Tensor& tensor : tensors) {
        if (!supports(tensor.dtype()) || tensor.dtype() == DType::i32)
            unsupported(KernelId::global_norm_squared, tensor.dtype());
        check_elements(tensor, KernelId::global_norm_squared);
        partials += (tensor.size() + chunk - 1) / chunk;
    }
    if (out.dtype() != DType::f32) unsupported(KernelId::global_norm_squared, out.dtype());
    const Tensor scratch_partials = scratch({std::max<std::size_t>(partials, 1)}, DType::f32);
    std::size_t offset = 0;
    for (const Tensor& tensor : tensors) {
        const std::string shader = std::string("norm_squared_") + shader_suffix(tensor.dtype());
        for (std::size_t base = 0; base < tensor.size(); base += chunk * max_groups) {
            const std::size_t groups = std::min((tensor.size() - base + chunk - 1) / chunk, max_groups);
            const struct {
                std::uint32_t n, offset, base;
            } push{u32(tensor.size()), u32(offset), u32(base)};
            dispatch(pipeline(shader), {tensor, scratch_partials}, push, {u32(groups), 1, 1});
            offset += groups;
        }
    }
    const struct {
        std::uint32_t n;
    } push{u32(partials)};
    dispatch(pipeline("norm_squared_total"), {scratch_partials, out}, push, {1, 1, 1});
}

}  // namespace tapevm::nn::detail
