// The gpu backend's memory kernels: zero and fill (transfer fills), copy (shaders/copy_words.comp
// within a dtype, shaders/copy.comp across dtypes) and transpose_2d (shaders/transpose_2d.comp).
#include <algorithm>
#include <bit>
#include <cstdint>
#include <string>

#include "backend.hpp"
#include "stream.hpp"
#include "tapevm/error.hpp"

namespace tapevm::nn::detail {
namespace {

// The 32-bit fill pattern of `value` in `dtype` (16-bit dtypes twice).
std::uint32_t fill_pattern(DType dtype, double value) {
    const double rounded = round_to(dtype, value);
    switch (dtype) {
        case DType::f32: return std::bit_cast<std::uint32_t>(static_cast<float>(rounded));
        case DType::f16: {
            const std::uint32_t bits = float_to_half(static_cast<float>(rounded));
            return bits | (bits << 16);
        }
        case DType::bf16: {
            const std::uint32_t bits = float_to_bfloat(static_cast<float>(rounded));
            return bits | (bits << 16);
        }
        case DType::i32: return static_cast<std::uint32_t>(static_cast<std::int32_t>(rounded));
        case DType::f64: break;
    }
    return 0;
}

// Element counts the kernels index with 32-bit integers.
void check_elements(const Tensor& x, KernelId kernel) {
    if (x.size() >= (std::size_t{1} << 32))
        throw Unsupported(std::string(kernel_name(kernel)) + ": " + x.describe() +
                          " has 2^32 elements or more (the gpu kernels index with 32 bits)");
}

}  // namespace

void GpuBackend::zero(const Tensor& x) {
    if (x.size() == 0) return;
    stream_->fill(static_cast<const GpuStorage&>(x.storage()).buffer, 0, (x.bytes() + 3) / 4 * 4, 0);
}

void GpuBackend::fill(const Tensor& x, double value) {
    if (!supports(x.dtype())) unsupported(KernelId::fill, x.dtype());
    if (x.size() == 0) return;
    stream_->fill(static_cast<const GpuStorage&>(x.storage()).buffer, 0, (x.bytes() + 3) / 4 * 4,
                  fill_pattern(x.dtype(), value));
}

void GpuBackend::copy(const Tensor& src, const Tensor& dst) {
    if (!supports(src.dtype())) unsupported(KernelId::copy, src.dtype());
    if (!supports(dst.dtype())) unsupported(KernelId::copy, dst.dtype());
    if (src.size() == 0) return;
    if (src.dtype() == dst.dtype()) {
        // Whole 16-byte words (tensor buffers are multiples of 256 bytes, buffer_pool.hpp).
        const std::size_t words = (src.bytes() + 15) / 16;
        const struct { std::uint32_t n; } push{static_cast<std::uint32_t>(words)};
        if (words < (std::size_t{1} << 32)) {
            dispatch(pipeline("copy_words"), {src, dst}, push, {groups_for(words, 256, 4096), 1, 1});
        } else {
            copy_bytes(src, 0, dst, 0, src.bytes());
        }
        return;
    }
    const bool src_int = src.dtype() == DType::i32, dst_int = dst.dtype() == DType::i32;
    if ((src_int && dst.dtype() != DType::f32) || (dst_int && src.dtype() != DType::f32))
        unsupported(KernelId::copy, src_int ? dst.dtype() : src.dtype());
    check_elements(src, KernelId::copy);
    const std::string shader =
        std::string("copy_") + shader_suffix(src.dtype()) + "_" + shader_suffix(dst.dtype());
    const struct { std::uint32_t n; } push{static_cast<std::uint32_t>(src.size())};
    dispatch(pipeline(shader), {src, dst}, push, {groups_for(src.size(), 256, 4096), 1, 1});
}

void GpuBackend::transpose_2d(const Tensor& x, const Tensor& y, std::size_t batch, std::size_t rows,
                              std::size_t cols) {
    if (!supports(x.dtype())) unsupported(KernelId::transpose_2d, x.dtype());
    if (x.size() == 0) return;
    check_elements(x, KernelId::transpose_2d);
    const struct {
        std::uint32_t batch, rows, cols;
    } push{static_cast<std::uint32_t>(batch), static_cast<std::uint32_t>(rows),
           static_cast<std::uint32_t>(cols)};
    const Groups groups{static_cast<std::uint32_t>((cols + 31) / 32),
                        static_cast<std::uint32_t>((rows + 31) / 32),
                        static_cast<std::uint32_t>(std::min<std::size_t>(batch, 65535))};
    if (groups[0] > 65535 || groups[1] > 65535)
        throw Unsupported("transpose_2d: " + x.describe() + ": more than 2 million rows or columns");
    dispatch(pipeline(std::string("transpose_2d_") + shader_suffix(x.dtype())), {x, y}, push, groups);
}

}  // namespace tapevm::nn::detail
