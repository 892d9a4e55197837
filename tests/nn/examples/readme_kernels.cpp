// The README's kernel example, built and run as a test (suite nn): multiply, normalise and
// backpropagate through tensors on the CPU and, where there is one, the GPU.
#include <tapevm/nn/kernels.hpp>

#include <cmath>
#include <cstdio>
#include <vector>

using namespace tapevm::nn;

int main() {
    std::vector<Device> devices = {Device::reference(), Device::cpu()};
    if (Device::gpu_available()) devices.push_back(Device::gpu());
    std::vector<float> x(8 * 16), w(16 * 16), ones(8 * 16, 1.0f);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.3f * float(i));
    for (std::size_t i = 0; i < w.size(); ++i) w[i] = std::cos(0.7f * float(i)) / 4;
    std::vector<float> expected;  // the reference device's dW (f64)
    for (const Device& device : devices) {
        const DType f = device.kind() == DeviceKind::reference ? DType::f64 : DType::f32;
        const DType stats = device.accumulate_dtype();
        const Tensor X = device.upload({8, 16}, std::span<const float>(x), f);
        const Tensor W = device.upload({16, 16}, std::span<const float>(w), f);  // [out][in]
        const Tensor gamma = device.upload({16}, std::span<const float>(ones).first(16), f);
        const Tensor H = device.empty({8, 16}, f), Y = device.empty({8, 16}, f);
        const Tensor mean = device.empty({8}, stats), rstd = device.empty({8}, stats);
        matmul(X, W, H, {.transpose_b = true});         // H = X W^T
        layer_norm(H, gamma, Tensor(), Y, mean, rstd);  // Y = LayerNorm(H), no beta
        // Backward of sum(Y^2) / 2 (dY = Y): gradients add into zeroed tensors.
        const Tensor dH = device.zeros({8, 16}, f), dgamma = device.zeros({16}, f);
        const Tensor dW = device.zeros({16, 16}, f);
        layer_norm_backward(Y, H, gamma, mean, rstd, dH, dgamma, Tensor());
        matmul(dH, X, dW, {.transpose_a = true, .beta = 1});                  // dW += dH^T X
        const std::vector<float> gw = dW.to_float(), gg = dgamma.to_float();  // waits here only
        std::printf("%s: dW[0][0] = %.6f, dgamma[0] = %.6f\n", device.name().c_str(), gw[0], gg[0]);
        if (expected.empty()) expected = gw;
        for (std::size_t i = 0; i < gw.size(); ++i)
            if (!(std::fabs(gw[i] - expected[i]) <= 1e-4f * (1 + std::fabs(expected[i])))) {
                std::printf("%s: dW[%zu] = %g, the reference device gives %g\n", device.name().c_str(), i,
                            gw[i], expected[i]);
                return 1;
            }
    }
    return 0;
}
