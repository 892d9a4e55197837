// softmax, softmax_backward and the fused cross_entropy on the cpu device: one row per
// iteration, rows in blocks over the threads.
#include <cmath>
#include <limits>
#include <string>

#include "cpu/parallel.hpp"

namespace tapevm::nn::detail {

namespace {

// Rows per block: about this many elements, at least one row.
std::size_t rows_per_block(std::size_t n) {
    return std::max<std::size_t>(1, 16384 / std::max<std::size_t>(n, 1));
}

// y = softmax(x) for one row (y may be x). A row whose largest value is -inf gives zeros.
void softmax_row(const float* x, float* y, std::size_t n) {
    const float top = row_max(x, n);
    if (top == -std::numeric_limits<float>::infinity()) {
        std::fill(y, y + n, 0.f);
        return;
    }
    const float sum = row_exp_shifted(x, top, y, n);
    row_scale(y, 1.f / sum, n);
}

}  // namespace

void CpuBackend::softmax(const Tensor& x, const Tensor& y) {
    count_kernel();
    const std::size_t n = x.dim(-1);
    if (n == 0 || x.size() == 0) return;
    const std::size_t rows = x.size() / n;
    const bool in_place = x.same_memory(y);
    F32View xs(*this, x);
    F32View ys(*this, in_place ? Tensor() : y, false);
    float* out = in_place ? xs.data() : ys.data();
    parallel_ranges(*this, rows, rows_per_block(n), [&](std::size_t begin, std::size_t end) {
        for (std::size_t r = begin; r < end; ++r) softmax_row(xs.data() + r * n, out + r * n, n);
    });
    if (in_place) {
        xs.store();
    } else {
        ys.store();
    }
}

void CpuBackend::softmax_backward(const Tensor& y, const Tensor& dy, const Tensor& dx) {
    count_kernel();
    const std::size_t n = y.dim(-1);
    if (n == 0 || y.size() == 0) return;
    const std::size_t rows = y.size() / n;
    const F32View ys(*this, y);
    const F32View dys(*this, dy);
    F32View dxs(*this, dx);
    parallel_ranges(*this, rows, rows_per_block(n), [&](std::size_t begin, std::size_t end) {
        for (std::size_t r = begin; r < end; ++r) {
            const float* yr = ys.data() + r * n;
            const float* dyr = dys.data() + r * n;
            float* dxr = dxs.data() + r * n;
            row_functions().softmax_backward(yr, dyr, row_dot(dyr, yr, n), dxr, n);
        }
    });
    dxs.store();
}

void CpuBackend::cross_entropy(const Tensor& logits, const Tensor& targets, const Tensor& losses,
                               const Tensor& dlogits, std::int32_t pad_id, double dloss) {
    count_kernel();
    const std::size_t n = logits.dim(-1);
    const std::size_t rows = n == 0 ? targets.size() : logits.size() / n;
    const std::int32_t* target = cpu_data<std::int32_t>(targets);
    for (std::size_t r = 0; r < rows; ++r) {
        if (target[r] != pad_id && (target[r] < 0 || static_cast<std::size_t>(target[r]) >= n)) {
            throw Error("cross_entropy: targets: id " + std::to_string(target[r]) + " at row " +
                        std::to_string(r) + " is outside [0, " + std::to_string(n) +
                        ") and is not the pad id " + std::to_string(pad_id));
        }
    }
    if (rows == 0) return;
    const bool in_place = dlogits.defined() && dlogits.same_memory(logits);
    F32View xs(*this, logits);
    F32View ds(*this, in_place ? Tensor() : dlogits, false);
    F32View ls(*this, losses, false);
    float* grad = !dlogits.defined() ? nullptr : in_place ? xs.data() : ds.data();
    const auto scale = static_cast<float>(dloss);
    parallel_ranges(*this, rows, rows_per_block(n), [&](std::size_t begin, std::size_t end) {
        std::vector<float> scratch(grad == nullptr ? n : 0);
        for (std::size_t r = begin; r < end; ++r) {
            const float* x = xs.data() + r * n;
            float* e = grad != nullptr ? grad + r * n : scratch.data();
            if (target[r] == pad_id) {
                ls.data()[r] = 0;
                if (grad != nullptr) std::fill(e, e + n, 0.f);
                continue;
            }
            const auto t = static_cast<std::size_t>(target[r]);
            const float picked = x[t];
            const float top = row_max(x, n);
            const float sum = row_exp_shifted(x, top, e, n);  // may overwrite x (in place)
            const float lse = top + std::log(sum);
            ls.data()[r] = lse - picked;
            if (grad != nullptr) {
                row_scale(e, scale / sum, n);
                e[t] -= scale;
            }
        }
    });
    ls.store();
    if (in_place) {
        xs.store();
    } else {
        ds.store();
    }
}

}  // namespace tapevm::nn::detail
