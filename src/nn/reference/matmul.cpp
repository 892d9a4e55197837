// The reference matmul: C = alpha op(A) op(B) + beta C, three loops per batch.
#include "reference/reference_backend.hpp"

namespace tapevm::nn::detail {

void ReferenceBackend::matmul(const Tensor& a, const Tensor& b, const Tensor& c,
                              const MatmulOptions& options) {
    count_kernel();
    const bool batched = c.rank() == 3;
    const std::size_t batches = batched ? c.shape()[0] : 1;
    const std::size_t m = c.dim(-2);
    const std::size_t n = c.dim(-1);
    const std::size_t k = options.transpose_a ? a.dim(-2) : a.dim(-1);
    // A 2-D operand of a batched product is shared by every batch (stride 0).
    const std::size_t a_stride = a.rank() == 3 ? m * k : 0;
    const std::size_t b_stride = b.rank() == 3 ? k * n : 0;
    for (std::size_t batch = 0; batch < batches; ++batch) {
        const double* A = f64_data(a) + batch * a_stride;
        const double* B = f64_data(b) + batch * b_stride;
        double* C = f64_data(c) + batch * m * n;
        for (std::size_t i = 0; i < m; ++i) {
            for (std::size_t j = 0; j < n; ++j) {
                double sum = 0;
                for (std::size_t p = 0; p < k; ++p) {
                    const double a_ip = options.transpose_a ? A[p * m + i] : A[i * k + p];
                    const double b_pj = options.transpose_b ? B[j * k + p] : B[p * n + j];
                    sum += a_ip * b_pj;
                }
                // beta = 0 overwrites C without reading it (C may hold garbage, even NaN).
                C[i * n + j] = options.alpha * sum + (options.beta == 0 ? 0.0 : options.beta * C[i * n + j]);
            }
        }
    }
}

}  // namespace tapevm::nn::detail
