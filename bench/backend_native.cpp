// Backends "native-scalar" and "native-simd": the workload's C++ template compiled, primal
// only: the objective every ratio is taken against. Points are split over the problem's
// threads, so a ratio compares equal thread counts.
#include <memory>
#include <string>
#include <vector>

#include "backends.hpp"
#include "native_simd.hpp"
#include "worker_pool.hpp"

namespace tapevm::bench {

namespace {

template <class Real> class NativeRunner final : public Runner {
public:
    NativeRunner(const Problem& problem, NativeKernel<Real> kernel, std::string isa, std::size_t granularity)
        : workload_(*problem.workload), kernel_(kernel), isa_(std::move(isa)), granularity_(granularity),
          pool_(problem.threads),
          mlp_(workload_.mlp != nullptr ? workload_.mlp->converted<Real>() : BasicMlpModel<Real>{}) {}

    void prepare(const Points& points) override {
        points_ = points.count;
        inputs_.assign(points.inputs.begin(), points.inputs.end());
        params_.assign(points.params.begin(), points.params.end());
        outputs_.assign(points_ * workload_.tape.output_count(), Real{0});
    }

    void run() override {
        const NativeData<Real> data{inputs_.data(), params_.data(), outputs_.data(), &mlp_};
        pool_.run(points_, granularity_,
                  [&](std::size_t begin, std::size_t end) { kernel_(workload_.kind, data, begin, end); });
    }

    std::vector<double> result(std::size_t point) const override {
        const std::size_t width = workload_.tape.output_count();
        const auto first = outputs_.begin() + static_cast<std::ptrdiff_t>(point * width);
        return std::vector<double>(first, first + static_cast<std::ptrdiff_t>(width));
    }

    Mode mode() const override { return Mode::forward; }
    std::string isa() const override { return isa_; }
    unsigned threads() const override { return pool_.threads(); }

private:
    const Workload& workload_;
    NativeKernel<Real> kernel_;
    std::string isa_;
    std::size_t granularity_;
    WorkerPool pool_;
    BasicMlpModel<Real> mlp_;  // the workload's weights in Real (empty for the non-MLP workloads)
    std::size_t points_ = 0;
    std::vector<Real> inputs_, params_, outputs_;
};

// Shares of 64 points keep threads off each other's cache lines.
constexpr std::size_t granularity = 64;

}  // namespace

std::unique_ptr<Runner> make_native_scalar_runner(const Problem& problem) {
    if (problem.precision == Precision::f32)
        return std::make_unique<NativeRunner<float>>(problem, &native_scalar_primal<float>, "scalar",
                                                     granularity);
    return std::make_unique<NativeRunner<double>>(problem, &native_scalar_primal<double>, "scalar",
                                                  granularity);
}

std::unique_ptr<Runner> make_native_simd_runner(const Problem& problem) {
    const NativeSimdKernels kernels = native_simd_kernels();
    const std::string isa(kernels.isa);
    if (problem.precision == Precision::f32)
        return std::make_unique<NativeRunner<float>>(problem, kernels.f32, isa, granularity);
    return std::make_unique<NativeRunner<double>>(problem, kernels.f64, isa, granularity);
}

}  // namespace tapevm::bench
