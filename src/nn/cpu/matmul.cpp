// matmul on the cpu device: OpenBLAS's cblas_sgemm (its own threads, OPENBLAS_NUM_THREADS),
// one call per batch, or a single call when a shared 2-D B lets the batch fold into M.
// f16/bf16 operands are converted to f32 first; a C of another dtype goes through an f32
// copy (loaded only when beta != 0) that is rounded on store.
#include "cblas.hpp"

#include "cpu/parallel.hpp"

namespace tapevm::nn::detail {

namespace {

int blas_int(std::size_t value) { return static_cast<int>(std::max<std::size_t>(value, 1)); }

}  // namespace

void CpuBackend::matmul(const Tensor& a, const Tensor& b, const Tensor& c, const MatmulOptions& options) {
    count_kernel();
    const std::size_t m = c.dim(-2);
    const std::size_t n = c.dim(-1);
    const std::size_t k = options.transpose_a ? a.dim(-2) : a.dim(-1);
    if (m == 0 || n == 0) return;
    const std::size_t batch = c.size() / (m * n);
    if (batch == 0) return;
    const bool a_batched = a.rank() > 2;
    const bool b_batched = b.rank() > 2;
    const auto alpha = static_cast<float>(options.alpha);
    const auto beta = static_cast<float>(options.beta);

    F32View c_view(*this, c, beta != 0);
    float* c_data = c_view.data();
    if (k == 0) {
        // No products: C = beta C (beta = 0 overwrites, as BLAS does).
        parallel_ranges(*this, c.size(), 1 << 16, [&](std::size_t begin, std::size_t end) {
            for (std::size_t i = begin; i < end; ++i) c_data[i] = beta == 0 ? 0.f : beta * c_data[i];
        });
        c_view.store();
        return;
    }
    const F32View a_view(*this, a);
    const F32View b_view(*this, b);
    const float* a_data = a_view.data();
    const float* b_data = b_view.data();

    const CBLAS_TRANSPOSE trans_a = options.transpose_a ? CblasTrans : CblasNoTrans;
    const CBLAS_TRANSPOSE trans_b = options.transpose_b ? CblasTrans : CblasNoTrans;
    const int lda = blas_int(options.transpose_a ? m : k);
    const int ldb = blas_int(options.transpose_b ? k : n);
    const int ldc = blas_int(n);
    if (batch > 1 && a_batched && !b_batched && !options.transpose_a) {
        // [batch][M][K] x [K][N]: one product of [batch * M][K] by [K][N].
        cblas_sgemm(CblasRowMajor, trans_a, trans_b, static_cast<int>(batch * m), static_cast<int>(n),
                    static_cast<int>(k), alpha, a_data, lda, b_data, ldb, beta, c_data, ldc);
    } else {
        const std::size_t a_stride = a_batched ? m * k : 0;
        const std::size_t b_stride = b_batched ? k * n : 0;
        for (std::size_t index = 0; index < batch; ++index) {
            cblas_sgemm(CblasRowMajor, trans_a, trans_b, static_cast<int>(m), static_cast<int>(n),
                        static_cast<int>(k), alpha, a_data + index * a_stride, lda, b_data + index * b_stride,
                        ldb, beta, c_data + index * m * n, ldc);
        }
    }
    c_view.store();
}

}  // namespace tapevm::nn::detail
