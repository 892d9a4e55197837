// bias_add, add_assign, reduce_sum, transpose_2d and global_norm_squared on the cpu device.
#include <cstring>

#include "../dropout_mask.hpp"
#include "cpu/parallel.hpp"

namespace tapevm::nn::detail {

namespace {

// Elements a block of a memory-bound loop covers: large enough to amortise a claim, small
// enough to spread over the threads.
constexpr std::size_t block_elements = std::size_t{1} << 14;
// Rows of the reduced axis summed into a partial before it joins the running total.
constexpr std::size_t partial_rows = 64;
// Elements per block of global_norm_squared (each block's sum is one f64 partial).
constexpr std::size_t norm_block = std::size_t{1} << 14;

// Sum of x[0..n) in f32 chunks of 1024 added in f64: deterministic, and accurate for long rows.
float long_row_sum(const float* x, std::size_t n) {
    constexpr std::size_t chunk = 1024;
    double total = 0;
    for (std::size_t i = 0; i < n; i += chunk) total += row_sum(x + i, std::min(chunk, n - i));
    return static_cast<float>(total);
}

template <class T>
void transpose_tiles(const CpuBackend& backend, const T* x, T* y, std::size_t batch, std::size_t rows,
                     std::size_t cols) {
    constexpr std::size_t tile = 32;
    const std::size_t tile_rows = (rows + tile - 1) / tile;
    parallel_for(backend, batch * tile_rows, [&](std::size_t block) {
        const std::size_t b = block / tile_rows;
        const std::size_t r0 = block % tile_rows * tile;
        const std::size_t r1 = std::min(rows, r0 + tile);
        const T* xb = x + b * rows * cols;
        T* yb = y + b * rows * cols;
        for (std::size_t c0 = 0; c0 < cols; c0 += tile) {
            const std::size_t c1 = std::min(cols, c0 + tile);
            for (std::size_t c = c0; c < c1; ++c) {
                for (std::size_t r = r0; r < r1; ++r) yb[c * rows + r] = xb[r * cols + c];
            }
        }
    });
}

}  // namespace

void CpuBackend::bias_add(const Tensor& x, const Tensor& bias) {
    count_kernel();
    const std::size_t n = x.dim(-1);
    if (n == 0 || x.size() == 0) return;
    const std::size_t rows = x.size() / n;
    F32View xs(*this, x);
    const F32View bs(*this, bias);
    parallel_ranges(*this, rows, std::max<std::size_t>(1, block_elements / n),
                    [&](std::size_t begin, std::size_t end) {
                        for (std::size_t r = begin; r < end; ++r)
                            row_axpy(1.f, bs.data(), xs.data() + r * n, n);
                    });
    xs.store();
}

void CpuBackend::add_assign(const Tensor& dst, const Tensor& src, double alpha) {
    count_kernel();
    if (dst.size() == 0) return;
    const F32View s(*this, src);
    F32View d(*this, dst);
    const auto a = static_cast<float>(alpha);
    parallel_ranges(*this, dst.size(), block_elements, [&](std::size_t begin, std::size_t end) {
        row_axpy(a, s.data() + begin, d.data() + begin, end - begin);
    });
    d.store();
}

void CpuBackend::dropout(const Tensor& x, const Tensor& y, double p, std::uint64_t seed,
                         std::uint64_t stream) {
    count_kernel();
    const DropoutMask mask(p, seed, stream);
    const F32View xs(*this, x);
    F32View ys(*this, y, false);  // every element is written
    const auto scale = static_cast<float>(mask.scale);
    parallel_ranges(*this, x.size(), block_elements, [&](std::size_t begin, std::size_t end) {
        const float* in = xs.data();
        float* out = ys.data();
        for (std::size_t i = begin; i < end; ++i)
            out[i] = mask.keeps(static_cast<std::uint32_t>(i)) ? in[i] * scale : 0.f;
    });
    ys.store();
}

void CpuBackend::reduce_sum(const Tensor& x, const Tensor& y, std::size_t outer, std::size_t n,
                            std::size_t inner, bool accumulate) {
    count_kernel();
    if (outer * inner == 0) return;
    const F32View xs(*this, x);
    F32View ys(*this, y, accumulate);
    const float* xd = xs.data();
    float* yd = ys.data();
    if (inner == 1) {
        parallel_ranges(*this, outer, std::max<std::size_t>(1, block_elements / std::max<std::size_t>(n, 1)),
                        [&](std::size_t begin, std::size_t end) {
                            for (std::size_t o = begin; o < end; ++o) {
                                const float sum = long_row_sum(xd + o * n, n);
                                yd[o] = accumulate ? yd[o] + sum : sum;
                            }
                        });
    } else {
        // Columns in chunks: partial sums over `partial_rows` rows at a time, added to a total.
        constexpr std::size_t columns = 512;
        const std::size_t chunks = (inner + columns - 1) / columns;
        parallel_for(*this, outer * chunks, [&](std::size_t block) {
            const std::size_t o = block / chunks;
            const std::size_t c0 = block % chunks * columns;
            const std::size_t width = std::min(columns, inner - c0);
            float total[columns] = {};
            float partial[columns];
            for (std::size_t r0 = 0; r0 < n; r0 += partial_rows) {
                std::fill(partial, partial + width, 0.f);
                for (std::size_t r = r0; r < std::min(n, r0 + partial_rows); ++r) {
                    row_axpy(1.f, xd + (o * n + r) * inner + c0, partial, width);
                }
                row_axpy(1.f, partial, total, width);
            }
            float* out = yd + o * inner + c0;
            if (accumulate) {
                row_axpy(1.f, total, out, width);
            } else {
                std::memcpy(out, total, width * sizeof(float));
            }
        });
    }
    ys.store();
}

void CpuBackend::transpose_2d(const Tensor& x, const Tensor& y, std::size_t batch, std::size_t rows,
                              std::size_t cols) {
    count_kernel();
    if (batch * rows * cols == 0) return;
    if (x.dtype() != y.dtype()) {
        const F32View xs(*this, x);
        F32View ys(*this, y, false);
        transpose_tiles(*this, xs.data(), ys.data(), batch, rows, cols);
        ys.store();
        return;
    }
    switch (dtype_size(x.dtype())) {
        case 2:
            transpose_tiles(*this, cpu_data<std::uint16_t>(x), cpu_data<std::uint16_t>(y), batch, rows, cols);
            return;
        case 4:
            transpose_tiles(*this, cpu_data<std::uint32_t>(x), cpu_data<std::uint32_t>(y), batch, rows, cols);
            return;
        default:
            transpose_tiles(*this, cpu_data<std::uint64_t>(x), cpu_data<std::uint64_t>(y), batch, rows, cols);
            return;
    }
}

void CpuBackend::global_norm_squared(std::span<const Tensor> tensors, const Tensor& out) {
    count_kernel();
    // Partials: one f64 per fixed block of each tensor, summed in (tensor, block) order.
    std::vector<std::size_t> first_block(tensors.size() + 1, 0);
    for (std::size_t t = 0; t < tensors.size(); ++t) {
        first_block[t + 1] = first_block[t] + (tensors[t].size() + norm_block - 1) / norm_block;
    }
    std::vector<double> partials(first_block.back(), 0.0);
    parallel_for(*this, partials.size(), [&](std::size_t block) {
        const std::size_t t =
            static_cast<std::size_t>(std::upper_bound(first_block.begin(), first_block.end(), block) -
                                     first_block.begin()) -
            1;
        const Tensor& tensor = tensors[t];
        const std::size_t begin = (block - first_block[t]) * norm_block;
        const std::size_t count = std::min(norm_block, tensor.size() - begin);
        if (tensor.dtype() == DType::f32) {
            const float* x = cpu_data<float>(tensor) + begin;
            partials[block] = row_dot(x, x, count);
        } else {
            std::vector<float> x(count);
            load_floats(tensor.dtype(), cpu_bytes(tensor) + begin * dtype_size(tensor.dtype()), count,
                        x.data());
            partials[block] = row_dot(x.data(), x.data(), count);
        }
    });
    double total = 0;
    for (double partial : partials) total += partial;
    const auto value = static_cast<float>(total);
    store_floats(out.dtype(), &value, 1, cpu_bytes(out));
}

}  // namespace tapevm::nn::detail
