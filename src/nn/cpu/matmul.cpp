// matmul on the cpu device: OpenBLAS's cblas_sgemm, one product per batch, or a single one when
// a shared 2-D B lets the batch fold into M. Threads: the device's own pool cuts each product
// into slices of C (rows, or columns when C is wide) and each thread calls a one-thread sgemm,
// so OpenBLAS's pthreads, which spin for a while after each call, never compete with the pool's
// threads running the row kernels between products (every thread of the 16-core GPU host busy
// twice over). TAPEVM_NN_BLAS_THREADS=openblas hands the threads to OpenBLAS instead (for
// comparisons). A slice's elements are summed over K exactly as in one call: the result does
// not depend on the thread count.
// f16/bf16 operands are converted to f32 first; a C of another dtype goes through an f32
// copy (loaded only when beta != 0) that is rounded on store.
#include "cblas.hpp"

#include <cstdlib>
#include <string_view>

#include "cpu/parallel.hpp"

namespace tapevm::nn::detail {

namespace {

int blas_int(std::size_t value) { return static_cast<int>(std::max<std::size_t>(value, 1)); }

bool openblas_threads() {
    static const bool use = [] {
        const char* env = std::getenv("TAPEVM_NN_BLAS_THREADS");
        return env != nullptr && std::string_view(env) == "openblas";
    }();
    return use;
}

struct Product {
    CBLAS_TRANSPOSE trans_a, trans_b;
    std::size_t m, n, k;
    float alpha, beta;
    const float* a;
    int lda;
    const float* b;
    int ldb;
    float* c;
    int ldc;
};

/// C = alpha op(A) op(B) + beta C, on the device's threads (header comment).
void sgemm(const CpuBackend& backend, const Product& p) {
    const auto call = [&](std::size_t row0, std::size_t rows, std::size_t col0, std::size_t cols) {
        const float* a = p.a + (p.trans_a == CblasNoTrans ? row0 * static_cast<std::size_t>(p.lda) : row0);
        const float* b = p.b + (p.trans_b == CblasNoTrans ? col0 : col0 * static_cast<std::size_t>(p.ldb));
        cblas_sgemm(CblasRowMajor, p.trans_a, p.trans_b, static_cast<int>(rows), static_cast<int>(cols),
                    static_cast<int>(p.k), p.alpha, a, p.lda, b, p.ldb, p.beta,
                    p.c + row0 * static_cast<std::size_t>(p.ldc) + col0, p.ldc);
    };
    const std::size_t threads = backend.threads();
    const double flops = 2.0 * static_cast<double>(p.m) * static_cast<double>(p.n) * static_cast<double>(p.k);
    if (openblas_threads() || threads <= 1 || flops < 4e6) {
        openblas_set_num_threads(openblas_threads() ? openblas_get_num_procs() : 1);
        call(0, p.m, 0, p.n);
        return;
    }
    openblas_set_num_threads(1);
    // Slices of at least 16 rows (or columns) along C's longer side.
    const bool by_rows = p.m >= p.n;
    const std::size_t extent = by_rows ? p.m : p.n;
    const std::size_t slices = std::min(threads, std::max<std::size_t>(1, extent / 16));
    const std::size_t step = (extent + slices - 1) / slices;
    parallel_for(backend, slices, [&](std::size_t slice) {
        const std::size_t begin = slice * step;
        if (begin >= extent) return;
        const std::size_t size = std::min(step, extent - begin);
        if (by_rows) {
            call(begin, size, 0, p.n);
        } else {
            call(0, p.m, begin, size);
        }
    });
}

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
        sgemm(*this, {trans_a, trans_b, batch * m, n, k, alpha, beta, a_data, lda, b_data, ldb, c_data, ldc});
    } else {
        const std::size_t a_stride = a_batched ? m * k : 0;
        const std::size_t b_stride = b_batched ? k * n : 0;
        for (std::size_t index = 0; index < batch; ++index) {
            sgemm(*this, {trans_a, trans_b, m, n, k, alpha, beta, a_data + index * a_stride, lda,
                          b_data + index * b_stride, ldb, c_data + index * m * n, ldc});
        }
    }
    c_view.store();
}

}  // namespace tapevm::nn::detail
