// Helpers the cpu kernels share: parallel loops over fixed blocks, f32 views of tensors of any
// float dtype, and the row primitives (xsimd, per instruction set).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstring>
#include <vector>

#include "cpu/backend.hpp"
#include "cpu/row_functions.hpp"

namespace tapevm::nn::detail {

/// Runs body(block) for every block in [0, blocks) on up to backend.threads() threads. Blocks
/// are claimed from a shared counter, so which thread runs a block varies; callers make each
/// block's result depend on the block alone (deterministic whatever the thread count).
/// `min_blocks_per_thread` > 1 keeps small loops on fewer threads.
template <class Body> void parallel_for(const CpuBackend& backend, std::size_t blocks, Body&& body) {
    if (blocks == 0) return;
    const unsigned helpers = static_cast<unsigned>(std::min<std::size_t>(backend.threads() - 1, blocks - 1));
    if (helpers == 0) {
        for (std::size_t block = 0; block < blocks; ++block) body(block);
        return;
    }
    struct Context {
        std::atomic<std::size_t> next{0};
        std::size_t blocks;
        Body* body;
    };
    Context context;
    context.blocks = blocks;
    context.body = &body;
    backend.pool().run(
        helpers,
        [](void* opaque) {
            Context& c = *static_cast<Context*>(opaque);
            for (;;) {
                const std::size_t block = c.next.fetch_add(1, std::memory_order_relaxed);
                if (block >= c.blocks) return;
                (*c.body)(block);
            }
        },
        &context);
}

/// Splits `count` items into blocks of about `items_per_block` (at least 1) and runs
/// body(begin, end) over them in parallel.
template <class Body>
void parallel_ranges(const CpuBackend& backend, std::size_t count, std::size_t items_per_block, Body&& body) {
    items_per_block = std::max<std::size_t>(items_per_block, 1);
    const std::size_t blocks = (count + items_per_block - 1) / items_per_block;
    parallel_for(backend, blocks, [&](std::size_t block) {
        const std::size_t begin = block * items_per_block;
        body(begin, std::min(count, begin + items_per_block));
    });
}

/// Converts `count` values of `dtype` (f32, f16, bf16) at `src` to f32, and back.
void load_floats(DType dtype, const std::byte* src, std::size_t count, float* dst);
void store_floats(DType dtype, const float* src, std::size_t count, std::byte* dst);

/// A tensor's elements as f32: the tensor's own memory when it is f32, else a converted copy
/// (made in parallel when `load`; uninitialised otherwise, for outputs that are only
/// written). store() rounds a copy back into the tensor (nothing to do for f32). An undefined
/// tensor gives a null view.
class F32View {
public:
    F32View(const CpuBackend& backend, const Tensor& tensor, bool load = true);
    float* data() { return data_; }
    const float* data() const { return data_; }
    explicit operator bool() const { return data_ != nullptr; }
    void store();

private:
    const CpuBackend* backend_;
    Tensor tensor_;
    std::vector<float> copy_;
    float* data_ = nullptr;
};

// ---- row primitives (row_functions.hpp: per instruction set, chosen at run time) -----------

inline float row_max(const float* x, std::size_t n) { return row_functions().max(x, n); }
inline float row_sum(const float* x, std::size_t n) { return row_functions().sum(x, n); }
inline float row_dot(const float* x, const float* y, std::size_t n) { return row_functions().dot(x, y, n); }
inline float row_exp_shifted(const float* x, float shift, float* y, std::size_t n) {
    return row_functions().exp_shifted(x, shift, y, n);
}
inline void row_scale(float* y, float factor, std::size_t n) { row_functions().scale(y, factor, n); }
inline void row_axpy(float a, const float* x, float* y, std::size_t n) { row_functions().axpy(a, x, y, n); }

}  // namespace tapevm::nn::detail
