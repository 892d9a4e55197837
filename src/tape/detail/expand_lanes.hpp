// Points as lanes: a call that needs several lanes per point (jvps over jvp, sparse_hessian's
// colours over hvp) repeats each point's inputs (and its own params) in consecutive lanes, and
// each lane takes one of `copies` direction rows.
#pragma once

#include <algorithm>
#include <cstddef>
#include <span>
#include <vector>

#include "tapevm/batch.hpp"

namespace tapevm::detail {

/// Points [first, first + points) of `batch` (n inputs, q params each), each in `copies`
/// consecutive lanes (lane p * copies + c): inputs [lanes][n], per-point params [lanes][q], and
/// row c of `rows` ([copies][n]) as the lane's row of `lane_rows` ([lanes][n]). Returns the
/// expanded batch over `inputs` and `params` (or the batch's shared params).
template <class Real>
Batch<Real> expand_lanes(const Batch<Real>& batch, std::size_t n, std::size_t q, std::size_t first,
                         std::size_t points, std::size_t copies, std::span<const Real> rows,
                         std::vector<Real>& inputs, std::vector<Real>& params, std::vector<Real>& lane_rows) {
    const bool per_point = batch.params_per_point(q);
    const std::size_t lanes = points * copies;
    inputs.resize(lanes * n);
    lane_rows.resize(lanes * n);
    if (per_point) params.resize(lanes * q);
    for (std::size_t p = 0; p < points; ++p) {
        const auto x = batch.inputs.subspan((first + p) * n, n);
        for (std::size_t c = 0; c < copies; ++c) {
            const std::size_t lane = p * copies + c;
            std::copy(x.begin(), x.end(), inputs.begin() + static_cast<std::ptrdiff_t>(lane * n));
            const auto row = rows.subspan(c * n, n);
            std::copy(row.begin(), row.end(), lane_rows.begin() + static_cast<std::ptrdiff_t>(lane * n));
            if (per_point) {
                const auto own = batch.params_of(first + p, q);
                std::copy(own.begin(), own.end(), params.begin() + static_cast<std::ptrdiff_t>(lane * q));
            }
        }
    }
    // One lane of shared params is ambiguous with per-point ones only when lanes == 1, where
    // both mean the same.
    return Batch<Real>{lanes, inputs, per_point ? std::span<const Real>(params) : batch.params};
}

}  // namespace tapevm::detail
