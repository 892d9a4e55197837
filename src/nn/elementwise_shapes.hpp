// How each input of an elementwise call maps onto the call's shape (kernels.hpp: elementwise),
// shared by the cpu and gpu elementwise kernels. The front end (kernels.cpp) has checked that
// every input is one of these.
#pragma once

#include <cstddef>

#include "tapevm/nn/tensor.hpp"

namespace tapevm::nn::detail {

/// full: the call's shape S (element e reads e); scalar: one element (reads 0); row: [N], N
/// S's last extent (reads e % N); column: S with last extent 1 (reads e / N).
enum class BroadcastKind : unsigned char { full, scalar, row, column };

/// The kind of an input of shape `input` in a call of shape `call`: full when the element
/// counts agree (the same elements in order), else scalar for one element, row for rank 1,
/// column otherwise.
inline BroadcastKind broadcast_kind(const Shape& input, const Shape& call) {
    const std::size_t n = element_count(input);
    if (n == element_count(call)) return BroadcastKind::full;
    if (n == 1) return BroadcastKind::scalar;
    if (input.size() == 1) return BroadcastKind::row;
    return BroadcastKind::column;
}

/// N: the call's last extent (1 for a scalar call).
inline std::size_t broadcast_extent(const Shape& call) { return call.empty() ? 1 : call.back(); }

}  // namespace tapevm::nn::detail
