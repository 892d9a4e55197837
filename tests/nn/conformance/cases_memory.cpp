// Cases of the memory and simple elementwise kernels: zero, fill, copy, bias_add, add_assign,
// reduce_sum, transpose_2d, global_norm_squared.
#include <cmath>
#include <string>

#include "harness.hpp"

namespace tapevm::nn::conformance {
namespace {

std::string dims(const Shape& shape) { return shape_string(shape); }

std::vector<Shape> flat_shapes(bool sweep) {
    if (!sweep) return {{0}, {1}, {7, 65}, {3, 5, 129}};
    std::vector<Shape> shapes = {{0}, {0, 7}};
    for (const std::size_t n : {1, 7, 16, 63, 64, 65, 127, 129, 384, 385, 1000}) shapes.push_back({n, 65});
    shapes.push_back({1000, 1000});
    return shapes;
}

void add_zero_fill_copy(std::vector<Case>& cases, bool sweep) {
    for (const Shape& shape : flat_shapes(sweep)) {
        cases.push_back({KernelId::zero, dims(shape), [shape](Context& c) {
                             const Tensor x = c.upload(shape, c.random(element_count(shape)));
                             zero(x);
                             Output out = c.output("x", x);
                             out.exact = true;
                             return std::vector<Output>{out};
                         }});
        for (const double value : {0.1, -3.5}) {
            cases.push_back(
                {KernelId::fill, dims(shape) + " value " + std::to_string(value), [shape, value](Context& c) {
                     const Tensor x = c.upload(shape, c.random(element_count(shape)));
                     fill(x, value);
                     Output out = c.output("x", x);
                     out.exact = true;
                     return std::vector<Output>{out};
                 }});
        }
        // dtype conversions: tested -> f32, f32 -> tested, tested -> tested (another shape).
        for (const int direction : {0, 1, 2}) {
            const char* names[] = {"to f32", "from f32", "same dtype, reshaped"};
            cases.push_back(
                {KernelId::copy, dims(shape) + " " + names[direction], [shape, direction](Context& c) {
                     const std::size_t n = element_count(shape);
                     const DType from = direction == 1 ? DType::f32 : c.tested();
                     const DType to = direction == 0 ? DType::f32 : c.tested();
                     const Tensor src = c.upload(shape, c.random(n, -3, 3, from), from);
                     const Shape dst_shape = direction == 2 ? Shape{n} : shape;
                     const Tensor dst = c.upload(dst_shape, c.random(n, -3, 3, to), to);
                     copy(src, dst);
                     Output out = c.output("dst", dst);
                     out.exact = true;
                     return std::vector<Output>{out};
                 }});
        }
    }
}

// The mask must agree bit for bit with the reference device's (a dropped element against a
// kept one is an error of the element's size, far above any bound).
void add_dropout(std::vector<Case>& cases, bool sweep) {
    for (const Shape& shape : flat_shapes(sweep)) {
        for (const double p : {0.0, 0.2, 0.5}) {
            for (const bool in_place : {false, true}) {
                cases.push_back({KernelId::dropout,
                                 dims(shape) + " p " + std::to_string(p) + (in_place ? " in place" : ""),
                                 [shape, p, in_place](Context& c) {
                                     const std::size_t n = element_count(shape);
                                     const auto x_host = c.random(n);
                                     const Tensor x = c.upload(shape, x_host);
                                     const Tensor y = in_place ? x : c.empty(shape);
                                     dropout(x, y, p, 0x5eed0000000000abULL, 77);
                                     Output out = c.output("y", y);
                                     for (std::size_t i = 0; i < n; ++i)
                                         out.scale.push_back(std::fabs(x_host[i]) / (1 - p));
                                     return std::vector<Output>{out};
                                 }});
            }
        }
    }
}

void add_bias_add_assign(std::vector<Case>& cases, bool sweep) {
    std::vector<Shape> shapes = {{7, 65}, {2, 3, 16}, {0, 16}, {1, 1}};
    if (sweep) {
        for (const std::size_t n : {1, 7, 16, 63, 64, 65, 127, 129, 384, 385, 1000})
            shapes.push_back({65, n});
    }
    for (const Shape& shape : shapes) {
        cases.push_back({KernelId::bias_add, dims(shape), [shape](Context& c) {
                             const std::size_t n = shape.back();
                             const auto x_host = c.random(element_count(shape));
                             const auto b_host = c.random(n);
                             const Tensor x = c.upload(shape, x_host);
                             bias_add(x, c.upload({n}, b_host));
                             Output out = c.output("x", x);
                             for (std::size_t i = 0; i < x_host.size(); ++i)
                                 out.scale.push_back(std::fabs(x_host[i]) + std::fabs(b_host[i % n]));
                             return std::vector<Output>{out};
                         }});
        for (const double alpha : {1.0, -0.75}) {
            cases.push_back({KernelId::add_assign, dims(shape) + " alpha " + std::to_string(alpha),
                             [shape, alpha](Context& c) {
                                 const std::size_t n = element_count(shape);
                                 const auto d_host = c.random(n);
                                 const auto s_host = c.random(n);
                                 const Tensor dst = c.upload(shape, d_host);
                                 add_assign(dst, c.upload({n}, s_host), alpha);  // shapes may differ
                                 Output out = c.output("dst", dst);
                                 for (std::size_t i = 0; i < n; ++i)
                                     out.scale.push_back(std::fabs(d_host[i]) + std::fabs(alpha * s_host[i]));
                                 out.depth = 2;
                                 return std::vector<Output>{out};
                             }});
        }
    }
}

void add_reduce_transpose(std::vector<Case>& cases, bool sweep) {
    // {1000, 3} and {2, 600, 40} along their long axis take the gpu's two-pass (chunked) path.
    std::vector<Shape> shapes = {{7, 65}, {3, 16, 5}, {0, 5}, {4, 0}, {129}, {1000, 3}, {2, 600, 40}};
    if (sweep) {
        for (const std::size_t n : {1, 63, 64, 127, 384, 385, 1000}) {
            shapes.push_back({n, 65});
            shapes.push_back({3, n, 7});
        }
    }
    for (const Shape& shape : shapes) {
        for (std::size_t axis = 0; axis < shape.size(); ++axis) {
            for (const int mode : {0, 1, 2}) {  // 0: y =, 1: y += (accumulate), 2: y keeps the axis as 1
                const char* names[] = {"", " accumulate", " keepdim"};
                cases.push_back({KernelId::reduce_sum,
                                 dims(shape) + " axis " + std::to_string(axis) + names[mode],
                                 [shape, axis, mode](Context& c) {
                                     std::size_t outer = 1, inner = 1;
                                     for (std::size_t a = 0; a < axis; ++a) outer *= shape[a];
                                     for (std::size_t a = axis + 1; a < shape.size(); ++a) inner *= shape[a];
                                     const std::size_t n = shape[axis];
                                     Shape y_shape = shape;
                                     if (mode == 2) {
                                         y_shape[axis] = 1;
                                     } else {
                                         y_shape.erase(y_shape.begin() + static_cast<std::ptrdiff_t>(axis));
                                     }
                                     const auto x_host = c.random(element_count(shape));
                                     const auto y_host = c.random(outer * inner);
                                     const Tensor y = c.upload(y_shape, y_host);
                                     reduce_sum(c.upload(shape, x_host), y, axis, mode == 1);
                                     Output out = c.output("y", y);
                                     out.scale.assign(outer * inner, 0);
                                     for (std::size_t o = 0; o < outer; ++o)
                                         for (std::size_t i = 0; i < inner; ++i) {
                                             double sum = mode == 1 ? std::fabs(y_host[o * inner + i]) : 0;
                                             for (std::size_t k = 0; k < n; ++k)
                                                 sum += std::fabs(x_host[(o * n + k) * inner + i]);
                                             out.scale[o * inner + i] = sum;
                                         }
                                     out.depth = static_cast<double>(ceil_log2(n + 1) + 2);
                                     return std::vector<Output>{out};
                                 }});
            }
        }
    }
    std::vector<Shape> matrices = {{7, 65}, {3, 16, 33}, {1, 1}, {0, 5}, {2, 64, 64}};
    if (sweep) {
        for (const std::size_t n : {63, 127, 129, 384, 385, 1000}) matrices.push_back({n, 65});
    }
    for (const Shape& shape : matrices) {
        cases.push_back({KernelId::transpose_2d, dims(shape), [shape](Context& c) {
                             Shape y_shape = shape;
                             std::swap(y_shape[y_shape.size() - 1], y_shape[y_shape.size() - 2]);
                             const Tensor y = c.empty(y_shape);
                             transpose_2d(c.upload(shape, c.random(element_count(shape))), y);
                             Output out = c.output("y", y);
                             out.exact = true;
                             return std::vector<Output>{out};
                         }});
    }
}

void add_global_norm(std::vector<Case>& cases, bool sweep) {
    std::vector<std::vector<Shape>> lists = {{{7, 65}}, {{3}, {0, 4}, {16, 16}, {129}}, {}};
    if (sweep) lists.push_back({{1000, 385}, {384}, {1000}});
    for (const auto& shapes : lists) {
        std::string label = std::to_string(shapes.size()) + " tensors";
        for (const Shape& shape : shapes) label += text(" ", dims(shape));
        cases.push_back({KernelId::global_norm_squared, label, [shapes](Context& c) {
                             std::vector<Tensor> tensors;
                             double sum = 0;
                             std::size_t count = 0;
                             for (const Shape& shape : shapes) {
                                 const auto host = c.random(element_count(shape), -2, 2);
                                 for (const double v : host) sum += v * v;
                                 count += host.size();
                                 tensors.push_back(c.upload(shape, host));
                             }
                             const Tensor out = c.empty_stats({1});
                             global_norm_squared(tensors, out);
                             Output result = c.output("out", out);
                             result.scale = {sum};
                             result.depth = static_cast<double>(ceil_log2(count + 1) + 4);
                             return std::vector<Output>{result};
                         }});
    }
}

}  // namespace

void add_memory_cases(std::vector<Case>& cases, bool sweep) {
    add_zero_fill_copy(cases, sweep);
    add_bias_add_assign(cases, sweep);
    add_dropout(cases, sweep);
    add_reduce_transpose(cases, sweep);
    add_global_norm(cases, sweep);
}

}  // namespace tapevm::nn::conformance
