// Elementwise tapes on the gpu device (elementwise.hpp): GLSL generated around the tape
// compiler's body (vm_gpu/codegen.hpp: generate_body), one storage buffer per tensor.
//
// The kernel (one invocation per element, grid-stride):
//   layout(local_size_x = 64); push constants {elements, extent, params[28]};
//   binding b: the b-th tensor (tensor<b>[]), float or uint16_t (f16/bf16, nn_dtype.glsl's conversions);
//   for (e = global id; e < elements; e += stride) {
//       the tape body over the inputs at their broadcast index (e, 0, e % N, e / N);
//       forward: outputs[j][e] = result j;  vjp: dx[e] += adjoint (full-shape gradients), or
//       scratch_i[e] = adjoint (a broadcast input's f32 buffer, reduced by reduce_sum after).
//   }
#include "gpu/elementwise.hpp"

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "codegen.hpp"
#include "elementwise_shapes.hpp"
#include "gpu/backend.hpp"
#include "tapevm/error.hpp"
#include "tapevm/var.hpp"

namespace tapevm::nn::detail {

namespace {

constexpr std::uint32_t workgroup = 64;
constexpr std::size_t max_params = 28;

/// Push constants of the elementwise kernels (declared in GLSL by prelude()).
struct Push {
    std::uint32_t elements = 0;
    std::uint32_t extent = 1;
    std::uint32_t unused[2] = {};
    float params[max_params] = {};
};
static_assert(sizeof(Push) == push_constant_bytes);

/// Two 64-bit FNV-1a variants over the tape's contents: the pipeline key's tape part.
std::string tape_key(const Tape& tape) {
    std::uint64_t h1 = 14695981039346656037ull, h2 = 0x9e3779b97f4a7c15ull;
    const auto mix = [&](const void* data, std::size_t bytes) {
        const auto* p = static_cast<const unsigned char*>(data);
        for (std::size_t i = 0; i < bytes; ++i) {
            h1 = (h1 ^ p[i]) * 1099511628211ull;
            h2 = (h2 ^ p[i]) * 0x100000001b3ull + (h2 >> 29);
        }
    };
    const std::uint32_t counts[4] = {tape.input_count(), tape.param_count(), tape.slot_count(),
                                     tape.output_count()};
    mix(counts, sizeof counts);
    mix(tape.instructions().data(), tape.instructions().size_bytes());
    mix(tape.constants().data(), tape.constants().size_bytes());
    mix(tape.outputs().data(), tape.outputs().size_bytes());
    char text[40];
    std::snprintf(text, sizeof text, "%016llx%016llx", static_cast<unsigned long long>(h1),
                  static_cast<unsigned long long>(h2));
    return text;
}

/// One tensor of the kernel: its dtype, how element e indexes it, and (backward results)
/// whether the kernel writes it rather than adds to it.
struct Binding {
    DType dtype = DType::f32;
    BroadcastKind kind = BroadcastKind::full;
    bool written = false;
    bool is_16bit() const { return dtype == DType::f16 || dtype == DType::bf16; }
};

/// The binding's part of a pipeline key: dtype, kind, written.
std::string key_part(const Binding& b) {
    return std::string(dtype_name(b.dtype)) + static_cast<char>('0' + static_cast<int>(b.kind)) +
           (b.written ? "w," : ",");
}

std::string buffer(std::size_t b) { return "tensor" + std::to_string(b); }

std::string index_of(BroadcastKind kind) {
    switch (kind) {
        case BroadcastKind::scalar: return "0u";
        case BroadcastKind::row: return "e % pc.extent";
        case BroadcastKind::column: return "e / pc.extent";
        default: return "e";
    }
}

/// Element `index` of binding b as a float expression.
std::string load(const Binding& b, std::size_t binding, const std::string& index) {
    const std::string at = buffer(binding) + "[" + index + "]";
    switch (b.dtype) {
        case DType::f16: return "nn_f16_to_f32(uint(" + at + "))";
        case DType::bf16: return "nn_bf16_to_f32(uint(" + at + "))";
        default: return at;
    }
}

/// `value` (float) converted for binding b's element type.
std::string store(const Binding& b, const std::string& value) {
    switch (b.dtype) {
        case DType::f16: return "uint16_t(nn_f32_to_f16(" + value + "))";
        case DType::bf16: return "uint16_t(nn_f32_to_bf16(" + value + "))";
        default: return value;
    }
}

/// The kernel's declarations: version, includes, workgroup, push constants, one buffer per binding.
std::string prelude(const std::vector<Binding>& bindings) {
    bool any16 = false;
    for (const Binding& b : bindings) any16 = any16 || b.is_16bit();
    std::string s = "#version 450\n#extension GL_GOOGLE_include_directive : require\n";
    if (any16) s += "#extension GL_EXT_shader_16bit_storage : require\n";
    s += "#define REAL float\n#define REAL_IS_DOUBLE 0\n#include \"ops.glsl\"\n";
    s += "#define NN_DTYPE 0\n#include \"nn_dtype.glsl\"\n";
    s += "layout(local_size_x = " + std::to_string(workgroup) + ") in;\n";
    s += "layout(push_constant) uniform Push { uint elements; uint extent; uint unused0; uint unused1; float "
         "params[" +
         std::to_string(max_params) + "]; } pc;\n";
    for (std::size_t k = 0; k < bindings.size(); ++k) {
        const char* type = bindings[k].is_16bit() ? "uint16_t" : "float";
        s += "layout(std430, set = 0, binding = " + std::to_string(k) + ") buffer B" + std::to_string(k) +
             " { " + type + " " + buffer(k) + "[]; };\n";
    }
    return s;
}

std::string main_around(const std::string& body) {
    return "void main() {\n"
           "  uint stride = gl_NumWorkGroups.x * " +
           std::to_string(workgroup) +
           "u;\n"
           "  for (uint e = gl_GlobalInvocationID.x; e < pc.elements; e += stride) {\n" +
           body + "  }\n}\n";
}

std::vector<std::string> param_operands(const Tape& tape) {
    std::vector<std::string> params;
    for (std::uint32_t j = 0; j < tape.param_count(); ++j)
        params.push_back("pc.params[" + std::to_string(j) + "]");
    return params;
}

Push push_for(std::size_t elements, std::size_t extent, std::span<const double> params) {
    Push push;
    push.elements = static_cast<std::uint32_t>(elements);
    push.extent = static_cast<std::uint32_t>(extent);
    for (std::size_t j = 0; j < params.size(); ++j) push.params[j] = static_cast<float>(params[j]);
    return push;
}

void check_limits(KernelId kernel, const Tape& tape, std::size_t elements, std::size_t tensors) {
    const std::string name = kernel_name(kernel);
    if (elements > (std::size_t{1} << 31))  // e + the grid's stride stays below 2^32
        throw Unsupported(name + ": " + std::to_string(elements) +
                          " elements; the gpu kernels index with 32 bits, up to 2^31 elements");
    if (tape.param_count() > max_params)
        throw Unsupported(name + ": params: the tape has " + std::to_string(tape.param_count()) +
                          " parameters; the gpu device passes at most " + std::to_string(max_params));
    if (tensors > max_tensor_bindings)
        throw Unsupported(name + ": " + std::to_string(tensors) + " tensors; the gpu device binds at most " +
                          std::to_string(max_tensor_bindings) + " per kernel");
}

void dispatch(GpuBackend& backend, const GpuPipeline& pipeline, const std::vector<Tensor>& tensors,
              const Push& push, std::size_t elements) {
    backend.dispatch(pipeline, std::span<const Tensor>(tensors),
                     std::as_bytes(std::span<const Push>(&push, 1)),
                     {GpuBackend::groups_for(elements, workgroup, 65535), 1, 1});
}

}  // namespace

void gpu_elementwise(GpuBackend& backend, const Tape& tape, std::span<const Tensor> inputs,
                     std::span<const Tensor> outputs, std::span<const double> params) {
    if (outputs.empty()) return;
    const Shape& call = outputs[0].shape();
    const std::size_t elements = element_count(call);
    if (elements == 0) return;
    check_limits(KernelId::elementwise, tape, elements, inputs.size() + outputs.size());
    std::vector<Binding> bindings;
    std::vector<Tensor> tensors;
    for (const Tensor& x : inputs) {
        bindings.push_back({x.dtype(), broadcast_kind(x.shape(), call)});
        tensors.push_back(x);
    }
    for (const Tensor& y : outputs) {
        bindings.push_back({y.dtype(), BroadcastKind::full});
        tensors.push_back(y);
    }
    std::string key = "elementwise:forward:" + tape_key(tape) + ":";
    for (const Binding& b : bindings) key += key_part(b);
    const GpuPipeline* pipeline = backend.find_glsl_pipeline(key);
    if (pipeline == nullptr) {
        gpu::detail::BodyOperands operands;
        for (std::size_t i = 0; i < inputs.size(); ++i)
            operands.inputs.push_back(load(bindings[i], i, index_of(bindings[i].kind)));
        operands.params = param_operands(tape);
        gpu::detail::KernelSpec spec;
        spec.kernel = gpu::detail::Kernel::forward;
        const gpu::detail::GeneratedBody body = gpu::detail::generate_body(tape, spec, operands);
        std::string code = body.code;
        for (std::size_t j = 0; j < outputs.size(); ++j) {
            const std::size_t b = inputs.size() + j;
            code += "    " + buffer(b) + "[e] = " + store(bindings[b], body.results[j]) + ";\n";
        }
        pipeline = &backend.glsl_pipeline(key, prelude(bindings) + main_around(code));
    }
    dispatch(backend, *pipeline, tensors, push_for(elements, broadcast_extent(call), params), elements);
}

void gpu_elementwise_backward(GpuBackend& backend, const Tape& tape, std::span<const Tensor> inputs,
                              std::span<const Tensor> output_grads, std::span<const Tensor> input_grads,
                              std::span<const double> params) {
    if (output_grads.empty()) return;
    const Shape& call = output_grads[0].shape();
    const std::size_t elements = element_count(call);
    if (elements == 0) return;
    const std::size_t n = broadcast_extent(call);
    std::vector<Binding> bindings;
    std::vector<Tensor> tensors;
    for (const Tensor& x : inputs) {
        bindings.push_back({x.dtype(), broadcast_kind(x.shape(), call)});
        tensors.push_back(x);
    }
    for (const Tensor& dy : output_grads) {
        bindings.push_back({dy.dtype(), BroadcastKind::full});
        tensors.push_back(dy);
    }
    // Input i's result binding (or none), and the f32 buffers of broadcast gradients.
    std::vector<std::ptrdiff_t> result_binding(inputs.size(), -1);
    std::vector<Tensor> scratch(inputs.size());
    for (std::size_t i = 0; i < inputs.size() && i < input_grads.size(); ++i) {
        if (!input_grads[i].defined()) continue;
        result_binding[i] = static_cast<std::ptrdiff_t>(tensors.size());
        if (broadcast_kind(input_grads[i].shape(), call) == BroadcastKind::full) {
            bindings.push_back({input_grads[i].dtype(), BroadcastKind::full});
            tensors.push_back(input_grads[i]);
        } else {
            scratch[i] = backend.scratch(call, DType::f32);
            bindings.push_back({DType::f32, BroadcastKind::full, true});
            tensors.push_back(scratch[i]);
        }
    }
    if (tensors.size() == inputs.size() + output_grads.size()) return;  // no gradient asked for
    check_limits(KernelId::elementwise_backward, tape, elements, tensors.size());
    std::string key = "elementwise:vjp:" + tape_key(tape) + ":";
    for (const Binding& b : bindings) key += key_part(b);
    const GpuPipeline* pipeline = backend.find_glsl_pipeline(key);
    if (pipeline == nullptr) {
        gpu::detail::BodyOperands operands;
        for (std::size_t i = 0; i < inputs.size(); ++i)
            operands.inputs.push_back(load(bindings[i], i, index_of(bindings[i].kind)));
        for (std::size_t j = 0; j < output_grads.size(); ++j)
            operands.seeds.push_back(load(bindings[inputs.size() + j], inputs.size() + j, "e"));
        operands.params = param_operands(tape);
        gpu::detail::KernelSpec spec;
        spec.kernel = gpu::detail::Kernel::reverse;
        spec.directions = 1;
        spec.seeds_from_buffer = true;
        const gpu::detail::GeneratedBody body = gpu::detail::generate_body(tape, spec, operands);
        std::string code = body.code;
        for (std::size_t i = 0; i < inputs.size(); ++i) {
            if (result_binding[i] < 0) continue;
            const auto b = static_cast<std::size_t>(result_binding[i]);
            const std::string& adjoint = body.results[i];
            if (!bindings[b].written) {  // dx[e] += adjoint
                if (adjoint == "REAL(0)") continue;
                code += "    " + buffer(b) +
                        "[e] = " + store(bindings[b], load(bindings[b], b, "e") + " + " + adjoint) + ";\n";
            } else {  // the broadcast input's f32 buffer: written
                code += "    " + buffer(b) + "[e] = " + adjoint + ";\n";
            }
        }
        pipeline = &backend.glsl_pipeline(key, prelude(bindings) + main_around(code));
    }
    dispatch(backend, *pipeline, tensors, push_for(elements, n, params), elements);
    // Broadcast gradients: dx += the f32 buffer summed over the broadcast axes, viewed as
    // [outer][n][inner] (reduce_sum: a fixed order). reduce_sum takes one dtype, so an f16 or
    // bf16 dx gets the sums in f32 first, then adds them with this same kernel generator
    // (dx = dx + sums: one rounding).
    for (std::size_t i = 0; i < scratch.size(); ++i) {
        if (!scratch[i].defined()) continue;
        const Tensor& dx = input_grads[i];
        const std::size_t rows = elements / n;
        std::size_t outer = 1, reduced = elements, inner = 1;
        if (broadcast_kind(dx.shape(), call) == BroadcastKind::row) {
            reduced = rows;
            inner = n;
        } else if (broadcast_kind(dx.shape(), call) == BroadcastKind::column) {
            outer = rows;
            reduced = n;
        }
        if (dx.dtype() == DType::f32) {
            backend.reduce_sum(scratch[i], dx, outer, reduced, inner, true);
            continue;
        }
        const Tensor sums = backend.scratch(dx.shape(), DType::f32);
        backend.reduce_sum(scratch[i], sums, outer, reduced, inner, false);
        static const Tape add = tapevm::record(2, [](std::span<const Var> x) { return x[0] + x[1]; });
        const Tensor operands[2] = {dx, sums};
        gpu_elementwise(backend, add, operands, std::span<const Tensor>(&dx, 1), {});
    }
}

}  // namespace tapevm::nn::detail
