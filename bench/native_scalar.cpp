// native-scalar's kernel: the workloads' templates compiled for Real, one point at a time.
#include <span>

#include "native_simd.hpp"
#include "tapevm/examples.hpp"

namespace tapevm::bench {

template <class Real>
void native_scalar_primal(WorkloadKind kind, const NativeData<Real>& data, std::size_t begin,
                          std::size_t end) {
    switch (kind) {
        case WorkloadKind::ba:
            for (std::size_t point = begin; point < end; ++point) {
                const std::span<const Real> x(data.inputs + point * examples::ba_inputs, examples::ba_inputs);
                const auto residual = examples::ba_residual<Real, Real>(x, data.params + point * 2);
                data.outputs[point * 2] = residual[0];
                data.outputs[point * 2 + 1] = residual[1];
            }
            break;
        case WorkloadKind::rosenbrock16:
            for (std::size_t point = begin; point < end; ++point)
                data.outputs[point] =
                    examples::rosenbrock16<Real>(std::span<const Real>(data.inputs + point * 16, 16));
            break;
        case WorkloadKind::trig16:
            for (std::size_t point = begin; point < end; ++point)
                data.outputs[point] =
                    examples::trig16<Real>(std::span<const Real>(data.inputs + point * 16, 16));
            break;
        case WorkloadKind::mlp:
        case WorkloadKind::mlp16:
            for (std::size_t point = begin; point < end; ++point)
                data.outputs[point] =
                    mlp<Real>(std::span<const Real>(data.inputs + point * mlp_inputs, mlp_inputs), *data.mlp);
            break;
    }
}

template void native_scalar_primal<double>(WorkloadKind, const NativeData<double>&, std::size_t, std::size_t);
template void native_scalar_primal<float>(WorkloadKind, const NativeData<float>&, std::size_t, std::size_t);

}  // namespace tapevm::bench
