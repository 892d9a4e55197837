// Cases of matmul: layouts NN, NT, TN, TT; alpha and beta (beta 1 accumulates); batched A and B,
// or one of them 2-D and shared by every batch; C in the inputs' dtype or in f32; sizes that
// are not multiples of any tile; empty products (M, N or K = 0). The bound per element is
// c * (K + 2) * u_f32 * (|alpha| (|A||B|)_ij + |beta| |C_ij|), plus C's rounding when C is f16
// or bf16; f16/bf16 inputs are compared with the f64 product of the same rounded inputs. Cases
// with a bias (options.bias, C's dtype: the gpu adds it in the matmul's epilogue, the others
// after, rounding C twice) add |bias_j| and one more rounding of C to the bound.
#include <cmath>
#include <string>

#include "harness.hpp"

namespace tapevm::nn::conformance {
namespace {

enum class Batching { none, both, shared_a, shared_b, shared_both };  // shared: 2-D, stride 0

struct MatmulShape {
    std::size_t batch, m, n, k;
    bool ta, tb;
    double alpha, beta;
    Batching batching;
    bool c_f32;  // C in f32 whatever the inputs' dtype
};

std::string label(const MatmulShape& s) {
    std::string text = std::string(s.ta ? "T" : "N") + (s.tb ? "T" : "N") + " M" + std::to_string(s.m) +
                       " N" + std::to_string(s.n) + " K" + std::to_string(s.k);
    const char* batching[] = {"", " batch both", " batch shared A", " batch shared B",
                              " batch shared A and B"};
    if (s.batching != Batching::none)
        text += batching[static_cast<int>(s.batching)] + std::string(" ") + std::to_string(s.batch);
    if (s.alpha != 1) text += " alpha " + std::to_string(s.alpha);
    if (s.beta != 0) text += " beta " + std::to_string(s.beta);
    if (s.c_f32) text += " C f32";
    return text;
}

Case matmul_case(MatmulShape s, bool with_bias = false) {
    Case test_case{KernelId::matmul, label(s) + (with_bias ? " bias" : ""), [s, with_bias](Context& c) {
                       const bool batched = s.batching != Batching::none;
                       const bool batch_a = s.batching == Batching::both || s.batching == Batching::shared_b;
                       const bool batch_b = s.batching == Batching::both || s.batching == Batching::shared_a;
                       const std::size_t ba = batch_a ? s.batch : 1, bb = batch_b ? s.batch : 1;
                       const std::size_t bc = batched ? s.batch : 1;
                       Shape a_shape = s.ta ? Shape{s.k, s.m} : Shape{s.m, s.k};
                       Shape b_shape = s.tb ? Shape{s.n, s.k} : Shape{s.k, s.n};
                       Shape c_shape = {s.m, s.n};
                       if (batch_a) a_shape.insert(a_shape.begin(), s.batch);
                       if (batch_b) b_shape.insert(b_shape.begin(), s.batch);
                       if (batched) c_shape.insert(c_shape.begin(), s.batch);
                       const DType c_dtype = s.c_f32 ? DType::f32 : c.tested();
                       const auto a = c.random(ba * s.m * s.k);
                       const auto b = c.random(bb * s.k * s.n);
                       const auto c0 = c.random(bc * s.m * s.n, -1, 1, c_dtype);
                       const Tensor ct = c.upload(c_shape, c0, c_dtype);
                       const auto bias = c.random(with_bias ? s.n : 0, -1, 1, c_dtype);
                       matmul(c.upload(a_shape, a), c.upload(b_shape, b), ct,
                              MatmulOptions{s.ta, s.tb, s.alpha, s.beta,
                                            with_bias ? c.upload({s.n}, bias, c_dtype) : Tensor()});
                       Output out = c.output("C", ct);
                       if (c.is_reference()) {
                           out.scale.resize(c0.size());
                           for (std::size_t p = 0; p < bc; ++p) {
                               const double* ap = a.data() + (batch_a ? p * s.m * s.k : 0);
                               const double* bp = b.data() + (batch_b ? p * s.k * s.n : 0);
                               for (std::size_t i = 0; i < s.m; ++i)
                                   for (std::size_t j = 0; j < s.n; ++j) {
                                       double sum = 0;
                                       for (std::size_t l = 0; l < s.k; ++l) {
                                           const double av = s.ta ? ap[l * s.m + i] : ap[i * s.k + l];
                                           const double bv = s.tb ? bp[j * s.k + l] : bp[l * s.n + j];
                                           sum += std::fabs(av * bv);
                                       }
                                       const std::size_t at = (p * s.m + i) * s.n + j;
                                       out.scale[at] = std::fabs(s.alpha) * sum + std::fabs(s.beta * c0[at]) +
                                                       (with_bias ? std::fabs(bias[j]) : 0.0);
                                   }
                           }
                       }
                       out.depth = static_cast<double>(s.k + 2);
                       // With a bias, devices that add it after the product round C twice.
                       if (with_bias) out.store_roundings = 2;
                       return std::vector<Output>{out};
                   }};
    return test_case;
}

}  // namespace

void add_matmul_cases(std::vector<Case>& cases, bool sweep) {
    // Every layout, with sizes off any tile, plus alpha/beta.
    for (const bool ta : {false, true}) {
        for (const bool tb : {false, true}) {
            cases.push_back(matmul_case({1, 7, 65, 16, ta, tb, 1, 0, Batching::none, false}));
            cases.push_back(matmul_case({1, 65, 33, 129, ta, tb, 0.5, 1, Batching::none, false}));
            cases.push_back(matmul_case({3, 16, 7, 63, ta, tb, -1, 0.25, Batching::both, false}));
        }
    }
    // Shared operands in a batch, C in f32 from f16/bf16 inputs, degenerate sizes.
    cases.push_back(matmul_case({4, 9, 17, 33, false, false, 1, 0, Batching::shared_a, false}));
    cases.push_back(matmul_case({4, 9, 17, 33, false, true, 1, 1, Batching::shared_b, false}));
    cases.push_back(matmul_case({1, 64, 64, 64, false, false, 1, 0, Batching::none, true}));
    cases.push_back(matmul_case({1, 127, 1, 65, true, false, 1, 1, Batching::none, true}));
    cases.push_back(matmul_case({1, 1, 1, 1, false, false, 1, 0, Batching::none, false}));
    cases.push_back(matmul_case({1, 0, 7, 16, false, false, 1, 0, Batching::none, false}));
    cases.push_back(
        matmul_case({1, 7, 16, 0, false, false, 1, 1, Batching::none, false}));  // K = 0: C = beta C
    // Empty batches: C [0, 7, 16] with A and B batched, or shared.
    cases.push_back(matmul_case({0, 7, 16, 5, false, false, 1, 0, Batching::both, false}));
    cases.push_back(matmul_case({0, 7, 16, 5, false, false, 1, 0, Batching::shared_both, false}));
    cases.push_back(matmul_case({3, 7, 16, 5, false, true, 1, 0, Batching::shared_both, false}));
    cases.push_back(
        matmul_case({2, 129, 130, 200, false, true, 1, 0, Batching::both, false}));  // the big tiles
    cases.push_back(
        matmul_case({1, 4097, 130, 12, false, false, 1, 0, Batching::none, true}));  // tall: 128x64 tiles
    // A bias ([N], C's dtype) added to every row: a Linear layer (NT), with beta, batched, split-K
    // (small C, long K), K = 0, whole tensor-core tiles (the gpu's direct stores), tall C.
    cases.push_back(matmul_case({1, 65, 33, 129, false, true, 1, 0, Batching::none, false}, true));
    cases.push_back(matmul_case({1, 65, 33, 129, false, false, 0.5, 1, Batching::none, false}, true));
    cases.push_back(matmul_case({3, 16, 7, 63, false, true, 1, 0, Batching::both, false}, true));
    cases.push_back(matmul_case({1, 9, 10, 3000, true, false, 1, 0, Batching::none, false}, true));
    cases.push_back(matmul_case({1, 7, 16, 0, false, false, 1, 1, Batching::none, false}, true));
    cases.push_back(matmul_case({1, 256, 128, 64, false, true, 1, 0, Batching::none, false}, true));
    cases.push_back(matmul_case({1, 256, 128, 64, false, true, 1, 1, Batching::none, true}, true));
    cases.push_back(matmul_case({1, 4097, 136, 24, false, true, 1, 0, Batching::none, false}, true));
    if (!sweep) return;
    const std::size_t sizes[] = {1, 7, 16, 63, 64, 65, 127, 129, 384, 385, 1000};
    for (const bool ta : {false, true}) {
        for (const bool tb : {false, true}) {
            for (const std::size_t size : sizes) {
                cases.push_back(matmul_case({1, size, 65, 129, ta, tb, 1, 0, Batching::none, false}));
                cases.push_back(matmul_case({1, 65, size, 129, ta, tb, 1, 1, Batching::none, false}));
                cases.push_back(matmul_case({1, 65, 63, size, ta, tb, 1, 0, Batching::none, true}));
            }
            cases.push_back(matmul_case({1, 384, 385, 1000, ta, tb, 1, 1, Batching::none, false}));
            cases.push_back(matmul_case({8, 127, 129, 64, ta, tb, 1, 0, Batching::both, false}));
        }
    }
}

}  // namespace tapevm::nn::conformance
