// The README's kernel snippet, verbatim (tests/nn/examples/meson.build builds and runs it).
#include <span>
#include <vector>
#include <tapevm/nn/kernels.hpp>
using namespace tapevm::nn;

void step(const Device& device, std::span<const float> x,
          std::span<const float> w) {  // x [8][16], w [16][16]
    const Tensor X = device.upload({8, 16}, x, DType::f32), W = device.upload({16, 16}, w, DType::f32);
    const Tensor gamma = device.zeros({16}, DType::f32), H = device.empty({8, 16}, DType::f32);
    const Tensor Y = device.empty({8, 16}, DType::f32), mean = device.empty({8}, DType::f32),
                 rstd = device.empty({8}, DType::f32);
    fill(gamma, 1.0);
    matmul(X, W, H, {.transpose_b = true});         // H = X W^T
    layer_norm(H, gamma, Tensor(), Y, mean, rstd);  // Y = LayerNorm(H)
    const Tensor dH = device.zeros({8, 16}, DType::f32), dgamma = device.zeros({16}, DType::f32);
    const Tensor dW = device.zeros({16, 16}, DType::f32);
    layer_norm_backward(Y, H, gamma, mean, rstd, dH, dgamma, Tensor());  // d/dH of sum(Y^2)/2
    matmul(dH, X, dW, {.transpose_a = true, .beta = 1});                 // dW += dH^T X
    std::vector<float> gradient = dW.to_float();                         // the one wait
}
// step(Device::cpu(), x, w); step(Device::gpu(), x, w);  (tests/nn/examples/readme_kernels.cpp)

int main() {
    std::vector<float> x(8 * 16), w(16 * 16);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = float(i % 7) - 3;
    for (std::size_t i = 0; i < w.size(); ++i) w[i] = float(i % 5) / 8;
    step(Device::cpu(), x, w);
    if (Device::gpu_available()) step(Device::gpu(), x, w);
}
