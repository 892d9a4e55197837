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
    const struct { std::uint32_t n, cols; } push{u32(x.size()), u32(bias.size())};
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

void GpuBackend::dropout(const Tensor& x, const Tensor& y, double p, std::uint64_t seed,
                         std::uint64_t stream) {
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

void GpuBackend::reduce_sum(const Tensor& x, const Tensor& y, std::size_t outer, std::size_t n,
                            std::size_t inner, bool accumulate) {
    if (!supports(x.dtype()) || x.dtype() == DType::i32) unsupported(KernelId::reduce_sum, x.dtype());
    if (y.dtype() != x.dtype()) unsupported(KernelId::reduce_sum, y.dtype());
    if (outer == 0 || inner == 0) return;
    check_elements(x, KernelId::reduce_sum);
    check_elements(y, KernelId::reduce_sum);
    // COLS consecutive outputs per workgroup, LANES threads down the reduced axis for each.
    const std::uint32_t cols = std::min<std::uint32_t>(32, std::bit_ceil(u32(inner)));
    const std::uint32_t lanes = 256 / cols;
    const std::size_t column_groups = (inner + cols - 1) / cols;
    struct Push {
        std::uint32_t outer, n, inner, accumulate, chunks, chunk_rows;
    };
    const auto pass = [&](const Tensor& from, const Tensor& to, std::size_t rows, std::size_t chunks,
                          bool add) {
        const std::size_t chunk_rows = (rows + chunks - 1) / chunks;
        const Push push{u32(outer), u32(rows), u32(inner), add ? 1u : 0u, u32(chunks), u32(chunk_rows)};
        const std::string shader =
            std::string("reduce_sum_") + shader_suffix(from.dtype()) + "_" + shader_suffix(to.dtype());
        dispatch(pipeline(shader, {cols, lanes}), {from, to}, push,
                 {u32(column_groups), u32(std::min<std::size_t>(outer * chunks, 65535)), 1});
    };
    // Few outputs over many rows (a bias gradient: 384 sums of 16,384 rows) would leave most of
    // the device idle: cut the rows into chunks summed into f32 partials, then sum the partials.
    // The cut depends on the shape alone, so the result does not depend on the device.
    constexpr std::size_t enough_groups = 1024, min_chunk_rows = 256;
    const std::size_t groups = outer * column_groups;
    const std::size_t chunks =
        groups >= enough_groups ? 1 : std::min((enough_groups + groups - 1) / groups, n / min_chunk_rows);
    if (chunks <= 1) {
        pass(x, y, n, 1, accumulate);
        return;
    }
    const Tensor partials = scratch({outer, chunks, inner}, DType::f32);
    pass(x, partials, n, chunks, false);
    pass(partials, y, chunks, 1, accumulate);
}

void GpuBackend::global_norm_squared(std::span<const Tensor> tensors, const Tensor& out) {
    constexpr std::size_t chunk = 4096;  // elements per workgroup (shaders/norm_squared.comp)
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
            const struct { std::uint32_t n, offset, base; } push{u32(tensor.size()), u32(offset), u32(base)};
            dispatch(pipeline(shader), {tensor, scratch_partials}, push, {u32(groups), 1, 1});
            offset += groups;
        }
    }
    const struct { std::uint32_t n; } push{u32(partials)};
    dispatch(pipeline("norm_squared_total"), {scratch_partials, out}, push, {1, 1, 1});
}

}  // namespace tapevm::nn::detail
