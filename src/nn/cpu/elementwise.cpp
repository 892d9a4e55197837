// Elementwise tapes on the cpu device (elementwise.hpp): the CPU VM over tensor bindings.
#include "cpu/elementwise.hpp"

#include <algorithm>
#include <cstring>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <vector>

#include "cpu/backend.hpp"
#include "cpu/parallel.hpp"
#include "elementwise_shapes.hpp"
#include "tapevm/cpu.hpp"
#include "tensor_bindings.hpp"

namespace tapevm::nn::detail {

namespace {

// ---- the Vm of a tape ------------------------------------------------------------------------

std::size_t tape_hash(const Tape& tape) {
    const auto mix = [](std::size_t h, const void* data, std::size_t bytes) {
        const auto* p = static_cast<const unsigned char*>(data);
        for (std::size_t i = 0; i < bytes; ++i) h = (h ^ p[i]) * 1099511628211ull;  // FNV-1a
        return h;
    };
    std::size_t h = 14695981039346656037ull;
    const std::uint32_t counts[2] = {tape.input_count(), tape.param_count()};
    h = mix(h, counts, sizeof counts);
    h = mix(h, tape.instructions().data(), tape.instructions().size_bytes());
    h = mix(h, tape.constants().data(), tape.constants().size_bytes());
    h = mix(h, tape.outputs().data(), tape.outputs().size_bytes());
    h = mix(h, tape.guards().data(), tape.guards().size_bytes());
    return h;
}

/// Vms by tape and thread count, most recently used first; at most `capacity` (each holds a
/// pool of threads - 1 workers, so the cache stays small).
class VmCache {
public:
    std::shared_ptr<const tapevm::cpu::Vm> get(const Tape& tape, unsigned threads) {
        const std::size_t hash = tape_hash(tape);
        const std::lock_guard lock(mutex_);
        for (auto it = entries_.begin(); it != entries_.end(); ++it) {
            if (it->hash == hash && it->threads == threads && it->vm->tape() == tape) {
                entries_.splice(entries_.begin(), entries_, it);
                return it->vm;
            }
        }
        auto vm = std::make_shared<const tapevm::cpu::Vm>(tape, tapevm::cpu::Options{.threads = threads});
        entries_.push_front({hash, threads, vm});
        if (entries_.size() > capacity) entries_.pop_back();
        return vm;
    }

private:
    struct Entry {
        std::size_t hash;
        unsigned threads;
        std::shared_ptr<const tapevm::cpu::Vm> vm;
    };
    static constexpr std::size_t capacity = 16;
    std::mutex mutex_;
    std::list<Entry> entries_;
};

VmCache& vm_cache() {
    static VmCache cache;
    return cache;
}

// ---- bindings --------------------------------------------------------------------------------

tapevm::cpu::TensorStorage storage_of(DType dtype) {
    switch (dtype) {
        case DType::f16: return tapevm::cpu::TensorStorage::f16;
        case DType::bf16: return tapevm::cpu::TensorStorage::bf16;
        default: return tapevm::cpu::TensorStorage::f32;
    }
}

tapevm::cpu::Broadcast broadcast_of(BroadcastKind kind) {
    switch (kind) {
        case BroadcastKind::scalar: return tapevm::cpu::Broadcast::scalar;
        case BroadcastKind::row: return tapevm::cpu::Broadcast::row;
        case BroadcastKind::column: return tapevm::cpu::Broadcast::column;
        default: return tapevm::cpu::Broadcast::full;
    }
}

tapevm::cpu::TensorBinding binding(const Tensor& tensor, const Shape& call, bool accumulate = false) {
    tapevm::cpu::TensorBinding b;
    b.data = cpu_bytes(tensor);
    b.storage = storage_of(tensor.dtype());
    b.broadcast = broadcast_of(broadcast_kind(tensor.shape(), call));
    b.extent = broadcast_extent(call);
    b.accumulate = accumulate;
    return b;
}

std::vector<float> float_params(std::span<const double> params) {
    return std::vector<float>(params.begin(), params.end());
}

// ---- broadcast gradients -----------------------------------------------------------------------

/// Elements per block of the fixed-order reductions: block bounds depend on the shape only.
constexpr std::size_t reduce_block = 4096;

/// grad += the reduction of `contributions` ([rows][n], the call's elements) over the axes
/// `kind` broadcasts: everything (scalar), the rows (row: grad [n]) or each row (column: grad
/// [rows]). Blocks are summed in double, then the blocks' sums in block order.
void add_reduced(const CpuBackend& backend, BroadcastKind kind, const float* contributions,
                 std::size_t elements, std::size_t n, const Tensor& grad) {
    std::vector<double> sums;
    if (kind == BroadcastKind::scalar) {
        const std::size_t blocks = (elements + reduce_block - 1) / reduce_block;
        std::vector<double> partial(blocks, 0.0);
        parallel_for(backend, blocks, [&](std::size_t b) {
            double s = 0;
            for (std::size_t e = b * reduce_block; e < std::min(elements, (b + 1) * reduce_block); ++e)
                s += contributions[e];
            partial[b] = s;
        });
        double total = 0;
        for (const double s : partial) total += s;
        sums.assign(1, total);
    } else if (kind == BroadcastKind::row) {
        const std::size_t rows = elements / n;
        const std::size_t rows_per_block = std::max<std::size_t>(1, reduce_block / n);
        const std::size_t blocks = (rows + rows_per_block - 1) / rows_per_block;
        std::vector<double> partial(blocks * n, 0.0);
        parallel_for(backend, blocks, [&](std::size_t b) {
            double* out = partial.data() + b * n;
            for (std::size_t r = b * rows_per_block; r < std::min(rows, (b + 1) * rows_per_block); ++r)
                for (std::size_t j = 0; j < n; ++j) out[j] += contributions[r * n + j];
        });
        sums.assign(n, 0.0);
        for (std::size_t b = 0; b < blocks; ++b)
            for (std::size_t j = 0; j < n; ++j) sums[j] += partial[b * n + j];
    } else {  // column
        const std::size_t rows = elements / n;
        sums.assign(rows, 0.0);
        parallel_ranges(backend, rows, std::max<std::size_t>(1, reduce_block / n),
                        [&](std::size_t r0, std::size_t r1) {
                            for (std::size_t r = r0; r < r1; ++r) {
                                double s = 0;
                                for (std::size_t j = 0; j < n; ++j) s += contributions[r * n + j];
                                sums[r] = s;
                            }
                        });
    }
    // grad += sums, in f32 and rounded once to grad's dtype.
    std::vector<float> values(sums.size());
    load_floats(grad.dtype(), cpu_bytes(grad), values.size(), values.data());
    for (std::size_t k = 0; k < values.size(); ++k) values[k] += static_cast<float>(sums[k]);
    store_floats(grad.dtype(), values.data(), values.size(), cpu_bytes(grad));
}

}  // namespace

void cpu_elementwise(const CpuBackend& backend, const Tape& tape, std::span<const Tensor> inputs,
                     std::span<const Tensor> outputs, std::span<const double> params) {
    if (outputs.empty()) return;
    const Shape& call = outputs[0].shape();
    const std::size_t elements = element_count(call);
    if (elements == 0) return;
    std::vector<tapevm::cpu::TensorBinding> in, out;
    for (const Tensor& x : inputs) in.push_back(binding(x, call));
    for (const Tensor& y : outputs) out.push_back(binding(y, call));
    const std::vector<float> p = float_params(params);
    vm_cache().get(tape, backend.threads())->forward_tensors(elements, in, out, p);
}

void cpu_elementwise_backward(const CpuBackend& backend, const Tape& tape, std::span<const Tensor> inputs,
                              std::span<const Tensor> output_grads, std::span<const Tensor> input_grads,
                              std::span<const double> params) {
    if (output_grads.empty()) return;
    const Shape& call = output_grads[0].shape();
    const std::size_t elements = element_count(call);
    if (elements == 0) return;
    const std::size_t n = broadcast_extent(call);
    std::vector<tapevm::cpu::TensorBinding> in, seeds, results(inputs.size());
    for (const Tensor& x : inputs) in.push_back(binding(x, call));
    for (const Tensor& dy : output_grads) seeds.push_back(binding(dy, call));
    // Full-shape gradients accumulate in place; broadcast ones get the call's elements in an
    // f32 buffer each, reduced afterwards.
    std::vector<std::vector<float>> buffers(inputs.size());
    bool any = false;
    for (std::size_t i = 0; i < inputs.size() && i < input_grads.size(); ++i) {
        if (!input_grads[i].defined()) continue;
        any = true;
        if (broadcast_kind(input_grads[i].shape(), call) == BroadcastKind::full) {
            results[i] = binding(input_grads[i], call, true);
        } else {
            buffers[i].resize(elements);
            results[i].data = buffers[i].data();
        }
    }
    if (!any) return;
    const std::vector<float> p = float_params(params);
    vm_cache().get(tape, backend.threads())->vjp_tensors(elements, in, seeds, results, p);
    for (std::size_t i = 0; i < buffers.size(); ++i) {
        if (buffers[i].empty()) continue;
        add_reduced(backend, broadcast_kind(input_grads[i].shape(), call), buffers[i].data(), elements, n,
                    input_grads[i]);
    }
}

}  // namespace tapevm::nn::detail
