// The reference row kernels: softmax, layer_norm and rms_norm with their backward passes.
// Each row is x[r][0..N); statistics are per row.
#include <cmath>
#include <limits>
#include <vector>

#include "reference/reference_backend.hpp"

namespace tapevm::nn::detail {

void ReferenceBackend::softmax(const Tensor& x, const Tensor& y) {
    count_kernel();
    const std::size_t n = x.dim(-1);
    const std::size_t rows = x.size() / n;
    std::vector<double> row(n);
    for (std::size_t r = 0; r < rows; ++r) {
        const double* in = f64_data(x) + r * n;
        double* out = f64_data(y) + r * n;
        double max = -std::numeric_limits<double>::infinity();
        for (std::size_t j = 0; j < n; ++j) max = std::max(max, in[j]);
        if (max == -std::numeric_limits<double>::infinity()) {  // only -inf: zeros, never NaN
            for (std::size_t j = 0; j < n; ++j) out[j] = 0;
            continue;
        }
        double sum = 0;
        for (std::size_t j = 0; j < n; ++j) {
            row[j] = std::exp(in[j] - max);
            sum += row[j];
        }
        for (std::size_t j = 0; j < n; ++j) out[j] = row[j] / sum;  // y may be x: written last
    }
}

void ReferenceBackend::softmax_backward(const Tensor& y, const Tensor& dy, const Tensor& dx) {
    count_kernel();
    const std::size_t n = y.dim(-1);
    const std::size_t rows = y.size() / n;
    for (std::size_t r = 0; r < rows; ++r) {
        const double* y_row = f64_data(y) + r * n;
        const double* dy_row = f64_data(dy) + r * n;
        double* dx_row = f64_data(dx) + r * n;
        double dot = 0;  // sum(dy * y)
        for (std::size_t j = 0; j < n; ++j) dot += dy_row[j] * y_row[j];
        for (std::size_t j = 0; j < n; ++j) dx_row[j] += y_row[j] * (dy_row[j] - dot);
    }
}

void ReferenceBackend::layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, const Tensor& y,
                                  const Tensor& mean, const Tensor& rstd, double eps) {
    count_kernel();
    const std::size_t n = x.dim(-1);
    const std::size_t rows = x.size() / n;
    const double* g = f64_data(gamma);
    const double* b = beta.defined() ? f64_data(beta) : nullptr;
    for (std::size_t r = 0; r < rows; ++r) {
        const double* in = f64_data(x) + r * n;
        double* out = f64_data(y) + r * n;
        double m = 0;
        for (std::size_t j = 0; j < n; ++j) m += in[j];
        m /= static_cast<double>(n);
        double variance = 0;  // biased
        for (std::size_t j = 0; j < n; ++j) variance += (in[j] - m) * (in[j] - m);
        variance /= static_cast<double>(n);
        const double s = 1 / std::sqrt(variance + eps);
        for (std::size_t j = 0; j < n; ++j) {
            const double xhat = (in[j] - m) * s;
            out[j] = xhat * g[j] + (b != nullptr ? b[j] : 0.0);  // y may be x
        }
        f64_data(mean)[r] = m;
        f64_data(rstd)[r] = s;
    }
}

void ReferenceBackend::layer_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& gamma,
                                           const Tensor& mean, const Tensor& rstd, const Tensor& dx,
                                           const Tensor& dgamma, const Tensor& dbeta) {
    count_kernel();
    const std::size_t n = x.dim(-1);
    const std::size_t rows = x.size() / n;
    const double* g = f64_data(gamma);
    for (std::size_t r = 0; r < rows; ++r) {
        const double* in = f64_data(x) + r * n;
        const double* dout = f64_data(dy) + r * n;
        const double m = f64_data(mean)[r];
        const double s = f64_data(rstd)[r];
        // dxhat = dy * gamma; dx = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)).
        double dxhat_mean = 0;
        double dxhat_xhat_mean = 0;
        for (std::size_t j = 0; j < n; ++j) {
            const double xhat = (in[j] - m) * s;
            dxhat_mean += dout[j] * g[j];
            dxhat_xhat_mean += dout[j] * g[j] * xhat;
        }
        dxhat_mean /= static_cast<double>(n);
        dxhat_xhat_mean /= static_cast<double>(n);
        for (std::size_t j = 0; j < n; ++j) {
            const double xhat = (in[j] - m) * s;
            if (dx.defined())
                f64_data(dx)[r * n + j] += s * (dout[j] * g[j] - dxhat_mean - xhat * dxhat_xhat_mean);
            if (dgamma.defined()) f64_data(dgamma)[j] += dout[j] * xhat;
            if (dbeta.defined()) f64_data(dbeta)[j] += dout[j];
        }
    }
}

void ReferenceBackend::rms_norm(const Tensor& x, const Tensor& gamma, const Tensor& y, const Tensor& rstd,
                                double eps) {
    count_kernel();
    const std::size_t n = x.dim(-1);
    const std::size_t rows = x.size() / n;
    const double* g = f64_data(gamma);
    for (std::size_t r = 0; r < rows; ++r) {
        const double* in = f64_data(x) + r * n;
        double* out = f64_data(y) + r * n;
        double mean_square = 0;
        for (std::size_t j = 0; j < n; ++j) mean_square += in[j] * in[j];
        mean_square /= static_cast<double>(n);
        const double s = 1 / std::sqrt(mean_square + eps);
        for (std::size_t j = 0; j < n; ++j) out[j] = in[j] * s * g[j];  // y may be x
        f64_data(rstd)[r] = s;
    }
}

void ReferenceBackend::rms_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& gamma,
                                         const Tensor& rstd, const Tensor& dx, const Tensor& dgamma) {
    count_kernel();
    const std::size_t n = x.dim(-1);
    const std::size_t rows = x.size() / n;
    const double* g = f64_data(gamma);
    for (std::size_t r = 0; r < rows; ++r) {
        const double* in = f64_data(x) + r * n;
        const double* dout = f64_data(dy) + r * n;
        const double s = f64_data(rstd)[r];
        // y_j = x_j s g_j with s = (mean(x^2) + eps)^(-1/2), so ds/dx_j = -s^3 x_j / N and
        // dx_j = s (dy_j g_j - x_j s^2 mean(dy * g * x)).
        double dot_mean = 0;
        for (std::size_t j = 0; j < n; ++j) dot_mean += dout[j] * g[j] * in[j];
        dot_mean /= static_cast<double>(n);
        for (std::size_t j = 0; j < n; ++j) {
            if (dx.defined()) f64_data(dx)[r * n + j] += s * (dout[j] * g[j] - in[j] * s * s * dot_mean);
            if (dgamma.defined()) f64_data(dgamma)[j] += dout[j] * in[j] * s;
        }
    }
}

}  // namespace tapevm::nn::detail
