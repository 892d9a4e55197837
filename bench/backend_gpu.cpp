// Backend "gpu": tapevm::gpu::Vm, device-resident. prepare() uploads the points once and
// allocates the results on the device; run() is one evaluation whose results stay there (as
// JAX's figures are measured); result() downloads. The GPU time of the last run, split into
// compute and transfers, is Vm::last_timing(). make_gpu_end_to_end_runner() measures the
// host-span path instead (uploads and downloads inside the clock). Backends "compiled" and
// "compiled-e2e" are the same with the tape compiler (gpu::Engine::compiled), compiled before timing.
#include <cmath>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "backends.hpp"
#include "evaluator_runner.hpp"
#include "tapevm/error.hpp"
#include "tapevm/gpu.hpp"

namespace tapevm::bench {
namespace {

template <class Real> class GpuRunner final : public Runner {
public:
    GpuRunner(std::unique_ptr<gpu::Vm> vm, Mode mode) : vm_(std::move(vm)), mode_(mode) {
        if (vm_->engine() == gpu::Engine::compiled) {
            // Compile before timing (what compiling takes is `tapevm inspect --plan --compile`'s).
            const gpu::CompilePlan plan = vm_->compile_plan<Real>(mode_name(mode_));
            engine_ = plan.compiled ? "compiled " : "compiled->interpreter ";
        }
    }

    void prepare(const Points& points) override {
        points_ = points.count;
        const std::vector<Real> inputs(points.inputs.begin(), points.inputs.end());
        const std::vector<Real> params(points.params.begin(), points.params.end());
        inputs_ = vm_->upload<Real>(inputs);
        has_params_ = !params.empty();
        if (has_params_) params_ = vm_->upload<Real>(params);
        results_ = vm_->allocate<Real>(points_ * result_width(vm_->tape(), mode_));
        downloaded_.clear();
    }

    void run() override {
        const gpu::Buffer<Real>* params = has_params_ ? &params_ : nullptr;
        switch (mode_) {
            case Mode::forward: vm_->forward(points_, inputs_, params, results_); break;
            case Mode::gradient: vm_->gradient(points_, inputs_, params, results_); break;
            case Mode::jacobian: vm_->jacobian(points_, inputs_, params, results_); break;
        }
        downloaded_.clear();
    }

    std::vector<double> result(std::size_t point) const override {
        if (downloaded_.empty()) {
            downloaded_.resize(results_.size());
            vm_->download(results_, std::span<Real>(downloaded_));
        }
        const std::size_t width = result_width(vm_->tape(), mode_);
        const auto first = downloaded_.begin() + static_cast<std::ptrdiff_t>(point * width);
        return std::vector<double>(first, first + static_cast<std::ptrdiff_t>(width));
    }

    Mode mode() const override { return mode_; }
    std::string isa() const override { return engine_ + (sizeof(Real) == 8 ? "spirv f64" : "spirv f32"); }
    std::string device() const override { return vm_->device().name; }
    unsigned threads() const override { return 1; }
    double device_seconds() const override {
        const gpu::Vm::Timing timing = vm_->last_timing();
        return timing.compute_s + timing.transfer_s > 0 ? timing.compute_s + timing.transfer_s : std::nan("");
    }

private:
    std::unique_ptr<gpu::Vm> vm_;
    Mode mode_;
    std::size_t points_ = 0;
    gpu::Buffer<Real> inputs_, params_, results_;
    bool has_params_ = false;
    std::string engine_;
    mutable std::vector<Real> downloaded_;
};

// Throughput: every call on the compiled kernel (a call waits for its build), never a first call
// on the interpreter while the kernel builds (time to first result: first_result.hpp).
gpu::Options engine_options(gpu::Engine engine) {
    gpu::Options options;
    options.engine = engine;
    options.compile = gpu::CompileWait::wait;
    return options;
}

std::unique_ptr<Runner> gpu_runner(const Problem& problem, gpu::Engine engine) {
    auto vm = std::make_unique<gpu::Vm>(problem.workload->tape, engine_options(engine));
    if (problem.precision == Precision::f64) {
        if (!vm->device().float64) throw Unsupported("gpu: the device has no shaderFloat64");
        return std::make_unique<GpuRunner<double>>(std::move(vm), problem.mode);
    }
    return std::make_unique<GpuRunner<float>>(std::move(vm), problem.mode);
}

std::unique_ptr<Runner> gpu_end_to_end_runner(const Problem& problem, gpu::Engine engine) {
    auto vm = std::make_unique<gpu::Vm>(problem.workload->tape, engine_options(engine));
    const std::string device = vm->device().name;
    const std::string what = engine == gpu::Engine::compiled ? "compiled spirv" : "spirv";
    return make_evaluator_runner(std::move(vm), problem, what + " end-to-end (" + device + ")", 1);
}

}  // namespace

std::unique_ptr<Runner> make_gpu_runner(const Problem& problem) {
    return gpu_runner(problem, gpu::Engine::interpreter);
}
std::unique_ptr<Runner> make_gpu_end_to_end_runner(const Problem& problem) {
    return gpu_end_to_end_runner(problem, gpu::Engine::interpreter);
}
std::unique_ptr<Runner> make_compiled_runner(const Problem& problem) {
    return gpu_runner(problem, gpu::Engine::compiled);
}
std::unique_ptr<Runner> make_compiled_end_to_end_runner(const Problem& problem) {
    return gpu_end_to_end_runner(problem, gpu::Engine::compiled);
}

}  // namespace tapevm::bench
