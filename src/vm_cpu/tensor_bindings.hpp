// Tensor bindings for the CPU VM (internal: the nn layer includes it; Vm::forward_tensors
// and Vm::vjp_tensors in tapevm/cpu.hpp take them): a tape evaluated elementwise over
// tensors, one buffer per tape input and output, instead of the [points][n_inputs] rows of batch.hpp (which would
// cost a packing pass per call). The nn layer's elementwise kernels (src/nn/cpu) run on it.
//
// Element e (0 <= e < elements) of the call reads input i at
//   full    data[e]
//   scalar  data[0]
//   row     data[e % extent]    (a [N] vector broadcast over the rows of [..., N])
//   column  data[e / extent]    (a [..., 1] column broadcast along rows of length N)
// and writes output j at data[e] (outputs and input gradients are always full). Storage is
// f32, or f16 / bf16 converted to f32 on load and rounded to nearest even on store.
// Parameters are shared by all elements. An output may be the same memory as a full input
// (in place): each block of lanes loads its inputs before it stores.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tapevm::cpu {

enum class TensorStorage : std::uint8_t { f32, f16, bf16 };
enum class Broadcast : std::uint8_t { full, scalar, row, column };

struct TensorBinding {
    /// The tensor's first element (read-only for inputs and seeds).
    void* data = nullptr;
    TensorStorage storage = TensorStorage::f32;
    Broadcast broadcast = Broadcast::full;
    /// N of row and column bindings (the call's last extent), else unused.
    std::size_t extent = 1;
    /// Results only: data[e] += value (rounded once) instead of data[e] = value.
    bool accumulate = false;
};

namespace detail {

/// Lanes [0, lanes) of a block starting at element `first` into `row`: the binding's values
/// for elements first .. first + count - 1, then zeros. add: row[l] += value instead.
void load_binding(const TensorBinding& binding, std::size_t first, std::size_t count, float* row,
                  std::size_t lanes, bool add);
/// The block's values row[0, count) to elements first .. first + count - 1 (row null: zeros).
void store_binding(const TensorBinding& binding, std::size_t first, std::size_t count, const float* row);

}  // namespace detail
}  // namespace tapevm::cpu
