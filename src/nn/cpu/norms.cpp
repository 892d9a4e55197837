// layer_norm, rms_norm and their backward on the cpu device. The backward's dgamma and dbeta
// are reduced deterministically: each fixed block of `block_rows` rows sums its rows into its
// own partial row, then the partials are added in block order (per column chunk, in
// parallel), so the bits do not depend on the thread count.
#include <cmath>

#include "cpu/parallel.hpp"

namespace tapevm::nn::detail {

namespace {

constexpr std::size_t block_rows = 32;

// target[c] += sum over blocks b, in order, of partials[b * n + c].
void add_partials(const CpuBackend& backend, const std::vector<float>& partials, std::size_t blocks,
                  std::size_t n, float* target) {
    parallel_ranges(backend, n, 1024, [&](std::size_t begin, std::size_t end) {
        for (std::size_t c = begin; c < end; ++c) {
            float sum = 0;
            for (std::size_t b = 0; b < blocks; ++b) sum += partials[b * n + c];
            target[c] += sum;
        }
    });
}

}  // namespace

void CpuBackend::layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, const Tensor& y,
                            const Tensor& mean, const Tensor& rstd, double eps) {
    count_kernel();
    const std::size_t n = x.dim(-1);
    if (n == 0 || x.size() == 0) return;
    const std::size_t rows = x.size() / n;
    const bool in_place = x.same_memory(y);
    F32View xs(*this, x);
    F32View ys(*this, in_place ? Tensor() : y, false);
    const F32View gs(*this, gamma), bs(*this, beta);
    F32View means(*this, mean, false), rstds(*this, rstd, false);
    float* out = in_place ? xs.data() : ys.data();
    const auto epsilon = static_cast<float>(eps);
    parallel_ranges(*this, rows, block_rows, [&](std::size_t begin, std::size_t end) {
        for (std::size_t r = begin; r < end; ++r) {
            const float* xr = xs.data() + r * n;
            const float mu = row_sum(xr, n) / static_cast<float>(n);
            const float variance = row_functions().squared_deviation(xr, mu, n) / static_cast<float>(n);
            const float s = 1.f / std::sqrt(variance + epsilon);
            if (means) means.data()[r] = mu;
            if (rstds) rstds.data()[r] = s;
            row_functions().normalize(xr, mu, s, gs.data(), bs ? bs.data() : nullptr, out + r * n, n);
        }
    });
    if (in_place) {
        xs.store();
    } else {
        ys.store();
    }
    means.store();
    rstds.store();
}

void CpuBackend::layer_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& gamma,
                                     const Tensor& mean, const Tensor& rstd, const Tensor& dx,
                                     const Tensor& dgamma, const Tensor& dbeta) {
    count_kernel();
    const std::size_t n = x.dim(-1);
    if (n == 0 || x.size() == 0) return;
    const std::size_t rows = x.size() / n;
    const std::size_t blocks = (rows + block_rows - 1) / block_rows;
    const F32View dys(*this, dy), xs(*this, x), gs(*this, gamma), means(*this, mean), rstds(*this, rstd);
    F32View dxs(*this, dx), dgs(*this, dgamma), dbs(*this, dbeta);
    std::vector<float> gamma_partials(dgs ? blocks * n : 0, 0.f);
    std::vector<float> beta_partials(dbs ? blocks * n : 0, 0.f);
    parallel_for(*this, blocks, [&](std::size_t block) {
        std::vector<float> xhat(n), g(n);
        for (std::size_t r = block * block_rows; r < std::min(rows, (block + 1) * block_rows); ++r) {
            const float* xr = xs.data() + r * n;
            const float* dyr = dys.data() + r * n;
            const float mu = means.data()[r], s = rstds.data()[r];
            for (std::size_t i = 0; i < n; ++i) {
                xhat[i] = (xr[i] - mu) * s;
                g[i] = dyr[i] * gs.data()[i];
            }
            if (dxs) {
                const float mean_g = row_sum(g.data(), n) / static_cast<float>(n);
                const float mean_gx = row_dot(g.data(), xhat.data(), n) / static_cast<float>(n);
                float* dxr = dxs.data() + r * n;
                for (std::size_t i = 0; i < n; ++i) dxr[i] += s * (g[i] - mean_g - xhat[i] * mean_gx);
            }
            if (dgs) {
                float* p = gamma_partials.data() + block * n;
                for (std::size_t i = 0; i < n; ++i) p[i] += dyr[i] * xhat[i];
            }
            if (dbs) row_axpy(1.f, dyr, beta_partials.data() + block * n, n);
        }
    });
    if (dgs) add_partials(*this, gamma_partials, blocks, n, dgs.data());
    if (dbs) add_partials(*this, beta_partials, blocks, n, dbs.data());
    dxs.store();
    dgs.store();
    dbs.store();
}

void CpuBackend::rms_norm(const Tensor& x, const Tensor& gamma, const Tensor& y, const Tensor& rstd,
                          double eps) {
    count_kernel();
    const std::size_t n = x.dim(-1);
    if (n == 0 || x.size() == 0) return;
    const std::size_t rows = x.size() / n;
    const bool in_place = x.same_memory(y);
    F32View xs(*this, x);
    F32View ys(*this, in_place ? Tensor() : y, false);
    const F32View gs(*this, gamma);
    F32View rstds(*this, rstd, false);
    float* out = in_place ? xs.data() : ys.data();
    const auto epsilon = static_cast<float>(eps);
    parallel_ranges(*this, rows, block_rows, [&](std::size_t begin, std::size_t end) {
        for (std::size_t r = begin; r < end; ++r) {
            const float* xr = xs.data() + r * n;
            const float s = 1.f / std::sqrt(row_dot(xr, xr, n) / static_cast<float>(n) + epsilon);
            if (rstds) rstds.data()[r] = s;
            row_functions().normalize(xr, 0.f, s, gs.data(), nullptr, out + r * n, n);
        }
    });
    if (in_place) {
        xs.store();
    } else {
        ys.store();
    }
    rstds.store();
}

void CpuBackend::rms_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& gamma, const Tensor& rstd,
                                   const Tensor& dx, const Tensor& dgamma) {
    count_kernel();
    const std::size_t n = x.dim(-1);
    if (n == 0 || x.size() == 0) return;
    const std::size_t rows = x.size() / n;
    const std::size_t blocks = (rows + block_rows - 1) / block_rows;
    const F32View dys(*this, dy), xs(*this, x), gs(*this, gamma), rstds(*this, rstd);
    F32View dxs(*this, dx), dgs(*this, dgamma);
    std::vector<float> gamma_partials(dgs ? blocks * n : 0, 0.f);
    parallel_for(*this, blocks, [&](std::size_t block) {
        std::vector<float> xhat(n), g(n);
        for (std::size_t r = block * block_rows; r < std::min(rows, (block + 1) * block_rows); ++r) {
            const float* xr = xs.data() + r * n;
            const float* dyr = dys.data() + r * n;
            const float s = rstds.data()[r];
            for (std::size_t i = 0; i < n; ++i) {
                xhat[i] = xr[i] * s;
                g[i] = dyr[i] * gs.data()[i];
            }
            if (dxs) {
                const float mean_gx = row_dot(g.data(), xhat.data(), n) / static_cast<float>(n);
                float* dxr = dxs.data() + r * n;
                for (std::size_t i = 0; i < n; ++i) dxr[i] += s * (g[i] - xhat[i] * mean_gx);
            }
            if (dgs) {
                float* p = gamma_partials.data() + block * n;
                for (std::size_t i = 0; i < n; ++i) p[i] += dyr[i] * xhat[i];
            }
        }
    });
    if (dgs) add_partials(*this, gamma_partials, blocks, n, dgs.data());
    dxs.store();
    dgs.store();
}

}  // namespace tapevm::nn::detail
