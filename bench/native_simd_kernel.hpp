// The body of every native_simd_<arch>.cpp: the workloads' templates on SimdReal<batch<Real,
// Arch>>, W points at a time. Include only from those translation units (they carry the
// instruction set's compiler flags).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <span>
#include <type_traits>

#include <xsimd/xsimd.hpp>

#include "mlp.hpp"
#include "native_simd.hpp"
#include "simd_real.hpp"
#include "tapevm/examples.hpp"

namespace tapevm::bench::native_simd_detail {

// Transposes W points' inputs and params (AoS) into batches, calls f(x, params, outputs) and
// writes the first `count` lanes of each output back. Lanes past the end repeat the last point.
template <class Arch, class Real, std::size_t n_inputs, std::size_t n_params, std::size_t n_outputs, class F>
void over_points(const NativeData<Real>& data, std::size_t begin, std::size_t end, F&& f) {
    static_assert(n_params <= 2 && n_outputs <= 2);
    using Batch = xsimd::batch<Real, Arch>;
    using S = SimdReal<Batch>;
    constexpr std::size_t width = Batch::size;
    alignas(64) std::array<std::array<Real, width>, n_inputs + n_params> lanes{};
    alignas(64) std::array<std::array<Real, width>, n_outputs> out_lanes{};
    std::array<S, n_inputs> x;
    std::array<S, 2> params;  // n_params of them
    std::array<S, 2> outputs;
    // Full batches gather each input across W points; the last, partial one is copied lane by
    // lane, repeating its last point.
    using Index = std::conditional_t<sizeof(Real) == 8, std::int64_t, std::int32_t>;
    using IndexBatch = xsimd::batch<Index, Arch>;
    static_assert(IndexBatch::size == width);
    alignas(64) std::array<Index, width> input_offsets{}, param_offsets{};
    for (std::size_t lane = 0; lane < width; ++lane) {
        input_offsets[lane] = static_cast<Index>(lane * n_inputs);
        param_offsets[lane] = static_cast<Index>(lane * n_params);
    }
    const IndexBatch input_index = IndexBatch::load_aligned(input_offsets.data());
    const IndexBatch param_index = IndexBatch::load_aligned(param_offsets.data());
    for (std::size_t first = begin; first < end; first += width) {
        const std::size_t count = std::min(width, end - first);
        if (count == width) {
            const Real* inputs = data.inputs + first * n_inputs;
            for (std::size_t i = 0; i < n_inputs; ++i) x[i] = S(Batch::gather(inputs + i, input_index));
            if constexpr (n_params > 0) {
                const Real* point_params = data.params + first * n_params;
                for (std::size_t k = 0; k < n_params; ++k)
                    params[k] = S(Batch::gather(point_params + k, param_index));
            }
        } else {
            for (std::size_t lane = 0; lane < width; ++lane) {
                const std::size_t point = first + std::min(lane, count - 1);
                for (std::size_t i = 0; i < n_inputs; ++i) lanes[i][lane] = data.inputs[point * n_inputs + i];
                for (std::size_t k = 0; k < n_params; ++k)
                    lanes[n_inputs + k][lane] = data.params[point * n_params + k];
            }
            for (std::size_t i = 0; i < n_inputs; ++i) x[i] = S(Batch::load_aligned(lanes[i].data()));
            for (std::size_t k = 0; k < n_params; ++k)
                params[k] = S(Batch::load_aligned(lanes[n_inputs + k].data()));
        }
        f(std::span<const S>(x.data(), n_inputs), params.data(), outputs.data());
        for (std::size_t k = 0; k < n_outputs; ++k) {
            outputs[k].lanes().store_aligned(out_lanes[k].data());
            for (std::size_t lane = 0; lane < count; ++lane)
                data.outputs[(first + lane) * n_outputs + k] = out_lanes[k][lane];
        }
    }
}

template <class Arch, class Real>
void primal(WorkloadKind kind, const NativeData<Real>& data, std::size_t begin, std::size_t end) {
    using S = SimdReal<xsimd::batch<Real, Arch>>;
    switch (kind) {
        case WorkloadKind::ba:
            over_points<Arch, Real, examples::ba_inputs, 2, 2>(
                data, begin, end, [](std::span<const S> x, const S* feature, S* out) {
                    const auto residual = examples::ba_residual<S, S>(x, feature);
                    out[0] = residual[0];
                    out[1] = residual[1];
                });
            break;
        case WorkloadKind::rosenbrock16:
            over_points<Arch, Real, 16, 0, 1>(data, begin, end, [](std::span<const S> x, const S*, S* out) {
                out[0] = examples::rosenbrock16<S>(x);
            });
            break;
        case WorkloadKind::trig16:
            over_points<Arch, Real, 16, 0, 1>(data, begin, end, [](std::span<const S> x, const S*, S* out) {
                out[0] = examples::trig16<S>(x);
            });
            break;
        case WorkloadKind::mlp:
        case WorkloadKind::mlp16: {
            const BasicMlpModel<Real>& model = *data.mlp;
            over_points<Arch, Real, mlp_inputs, 0, 1>(
                data, begin, end,
                [&model](std::span<const S> x, const S*, S* out) { out[0] = mlp<S>(x, model); });
            break;
        }
    }
}

template <class Arch> NativeSimdKernels kernels(std::string_view isa) {
    return {isa, &primal<Arch, double>, &primal<Arch, float>, xsimd::batch<double, Arch>::size};
}

}  // namespace tapevm::bench::native_simd_detail
