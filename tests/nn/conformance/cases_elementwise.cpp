// Cases of elementwise tapes and their backward: tapes recorded with tapevm::record, inputs of
// the call's shape or broadcast (a scalar, a row [N], a column [..., 1]), outputs in place,
// shared parameters. The bounds come from the tape itself: the reference VM's f64 Jacobian at
// each element gives the condition of the function (|f| + sum_i |df/dx_i| |x_i|), and the
// depth is the tape's instruction count.
#include <cmath>
#include <memory>
#include <string>

#include "harness.hpp"
#include "tapevm/reference.hpp"
#include "tapevm/var.hpp"

namespace tapevm::nn::conformance {
namespace {

enum class Broadcast { full, scalar, row, column };

struct TapeCase {
    std::string name;
    std::shared_ptr<const Tape> tape;
    std::vector<Broadcast> inputs;
    std::vector<double> params;
    bool in_place;  // output 0 is input 0
};

std::vector<TapeCase> tape_cases() {
    using V = tapevm::Var;
    std::vector<TapeCase> list;
    auto gelu = std::make_shared<const Tape>(tapevm::record(1, [](std::span<const V> x) {
        const V& v = x[0];
        return 0.5 * v * (1 + tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)));
    }));
    list.push_back({"gelu", gelu, {Broadcast::full}, {}, false});
    list.push_back({"gelu in place", gelu, {Broadcast::full}, {}, true});
    auto mix = std::make_shared<const Tape>(tapevm::record(3, [](std::span<const V> x) {
        return std::vector<V>{x[0] * x[1] + x[2], x[0] - exp(x[1] * x[2])};
    }));
    list.push_back({"x*row + column, x - exp(row*column)",
                    mix,
                    {Broadcast::full, Broadcast::row, Broadcast::column},
                    {},
                    false});
    list.push_back(
        {"x*scalar + x2, in place", mix, {Broadcast::full, Broadcast::scalar, Broadcast::full}, {}, true});
    auto with_params = std::make_shared<const Tape>(tapevm::record(
        1, 2, [](std::span<const V> x, std::span<const V> p) { return tanh(x[0]) * p[0] + p[1] * x[0]; }));
    list.push_back({"tanh(x) p0 + p1 x (params)", with_params, {Broadcast::full}, {0.75, -1.25}, false});
    return list;
}

Shape input_shape(Broadcast broadcast, const Shape& shape) {
    switch (broadcast) {
        case Broadcast::full: return shape;
        case Broadcast::scalar: return {1};
        case Broadcast::row: return {shape.back()};
        case Broadcast::column: {
            Shape column = shape;
            column.back() = 1;
            return column;
        }
    }
    return shape;
}

// Index into an input of broadcast kind `b` for element e of shape [rows][n].
std::size_t source(Broadcast b, std::size_t e, std::size_t n) {
    switch (b) {
        case Broadcast::full: return e;
        case Broadcast::scalar: return 0;
        case Broadcast::row: return e % n;
        case Broadcast::column: return e / n;
    }
    return e;
}

// The tape's Jacobian at every element: [elements][outputs][inputs], and values [elements][outputs].
void evaluate(const TapeCase& tc, const std::vector<std::vector<double>>& inputs, std::size_t elements,
              std::size_t n, std::vector<double>& values, std::vector<double>& jacobian) {
    const std::size_t ni = tc.tape->input_count();
    std::vector<double> points(elements * ni);
    for (std::size_t e = 0; e < elements; ++e)
        for (std::size_t i = 0; i < ni; ++i) points[e * ni + i] = inputs[i][source(tc.inputs[i], e, n)];
    const tapevm::reference::Vm vm(*tc.tape);
    const Batch<double> batch{elements, points, tc.params};
    values = vm.forward(batch).values;
    jacobian = vm.jacobian(batch, JacobianMode::reverse).values;
}

void add_tapes(std::vector<Case>& cases, bool sweep) {
    std::vector<Shape> shapes = {{7, 65}, {1, 1}, {0, 16}, {3, 129}};
    if (sweep) shapes.insert(shapes.end(), {Shape{1000, 385}, Shape{64, 1000}, Shape{129, 1}});
    for (const TapeCase& tc : tape_cases()) {
        for (const Shape& shape : shapes) {
            cases.push_back(
                {KernelId::elementwise, tc.name + " " + shape_string(shape), [tc, shape](Context& c) {
                     const std::size_t elements = element_count(shape), n = shape.back();
                     std::vector<std::vector<double>> host;
                     std::vector<Tensor> inputs;
                     for (const Broadcast b : tc.inputs) {
                         const Shape s = input_shape(b, shape);
                         host.push_back(c.random(element_count(s), -2, 2));
                         inputs.push_back(c.upload(s, host.back()));
                     }
                     std::vector<Tensor> outputs;
                     for (std::size_t j = 0; j < tc.tape->output_count(); ++j)
                         outputs.push_back(j == 0 && tc.in_place ? inputs[0] : c.empty(shape));
                     elementwise(*tc.tape, inputs, outputs, tc.params);
                     std::vector<Output> outs;
                     for (std::size_t j = 0; j < outputs.size(); ++j)
                         outs.push_back(c.output("out" + std::to_string(j), outputs[j]));
                     if (c.is_reference()) {
                         std::vector<double> values, jacobian;
                         evaluate(tc, host, elements, n, values, jacobian);
                         const std::size_t no = outputs.size(), ni = inputs.size();
                         for (std::size_t j = 0; j < no; ++j) {
                             for (std::size_t e = 0; e < elements; ++e) {
                                 double scale = std::fabs(values[e * no + j]);
                                 for (std::size_t i = 0; i < ni; ++i)
                                     scale += std::fabs(jacobian[(e * no + j) * ni + i]) *
                                              std::fabs(host[i][source(tc.inputs[i], e, n)]);
                                 outs[j].scale.push_back(scale + 1e-3);
                             }
                         }
                     }
                     for (Output& o : outs) o.depth = tc.tape->instruction_count() + 8.0;
                     return outs;
                 }});
            cases.push_back({KernelId::elementwise_backward, tc.name + " " + shape_string(shape),
                             [tc, shape](Context& c) {
                                 const std::size_t elements = element_count(shape), n = shape.back();
                                 const std::size_t ni = tc.tape->input_count(), no = tc.tape->output_count();
                                 std::vector<std::vector<double>> host, init;
                                 std::vector<Tensor> inputs, grads, output_grads;
                                 std::vector<std::vector<double>> og_host;
                                 for (const Broadcast b : tc.inputs) {
                                     const Shape s = input_shape(b, shape);
                                     host.push_back(c.random(element_count(s), -2, 2));
                                     inputs.push_back(c.upload(s, host.back()));
                                 }
                                 for (std::size_t j = 0; j < no; ++j) {
                                     og_host.push_back(c.random(elements));
                                     output_grads.push_back(c.upload(shape, og_host.back()));
                                 }
                                 for (std::size_t i = 0; i < ni; ++i) {
                                     init.push_back(c.random(host[i].size()));
                                     // The last input's gradient of a 3-input tape is skipped (undefined).
                                     grads.push_back(
                                         ni == 3 && i == 2
                                             ? Tensor()
                                             : c.upload(input_shape(tc.inputs[i], shape), init[i]));
                                 }
                                 elementwise_backward(*tc.tape, inputs, output_grads, grads, tc.params);
                                 std::vector<Output> outs;
                                 for (std::size_t i = 0; i < ni; ++i)
                                     if (grads[i])
                                         outs.push_back(c.output("dinput" + std::to_string(i), grads[i]));
                                 if (c.is_reference()) {
                                     std::vector<double> values, jacobian;
                                     evaluate(tc, host, elements, n, values, jacobian);
                                     std::size_t at = 0;
                                     for (std::size_t i = 0; i < ni; ++i) {
                                         if (!grads[i]) continue;
                                         std::vector<double> scale(init[i].size());
                                         for (std::size_t k = 0; k < scale.size(); ++k)
                                             scale[k] = std::fabs(init[i][k]);
                                         for (std::size_t e = 0; e < elements; ++e)
                                             for (std::size_t j = 0; j < no; ++j)
                                                 scale[source(tc.inputs[i], e, n)] +=
                                                     std::fabs(og_host[j][e]) *
                                                     (std::fabs(jacobian[(e * no + j) * ni + i]) + 1);
                                         outs[at++].scale = scale;
                                     }
                                 }
                                 for (Output& o : outs)
                                     o.depth = 2.0 * tc.tape->instruction_count() + 8.0 +
                                               static_cast<double>(ceil_log2(elements + 1));
                                 return outs;
                             }});
        }
    }
}

}  // namespace

void add_elementwise_cases(std::vector<Case>& cases, bool sweep) { add_tapes(cases, sweep); }

}  // namespace tapevm::nn::conformance
