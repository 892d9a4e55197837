#include "adbench_backend.hpp"

#include <string>
#include <utility>

#include "tapevm/cpu.hpp"
#include "tapevm/error.hpp"
#include "tapevm/examples.hpp"
#include "tapevm/gpu.hpp"
#include "tapevm/reference.hpp"
#include "tapevm/var.hpp"

#if !defined(TAPEVM_BENCH_ADOLC) || !defined(TAPEVM_BENCH_CERES)
#error "bench/meson.build defines TAPEVM_BENCH_ADOLC and TAPEVM_BENCH_CERES"
#endif

namespace tapevm::bench::adbench {
namespace {

void check_guards(const Report& report, const char* tape) {
    if (report.all_guards_hold()) return;
    throw Error(std::string("observation ") + std::to_string(report.diverged.front()) + " (and " +
                std::to_string(report.diverged.size() - 1) + " more) leaves the branch the " + tape +
                " tape recorded (a camera with zero rotation): not supported");
}

// Two Evaluators of one kind, one per tape; weight_in_parts when the weight Evaluator's calls
// run on the calling thread (Evaluators' const calls may run from several threads at once).
class EvaluatorBlocks final : public BlockJacobians {
public:
    EvaluatorBlocks(std::unique_ptr<Evaluator> reprojection, std::unique_ptr<Evaluator> weight, bool in_parts)
        : reprojection_(std::move(reprojection)), weight_(std::move(weight)), weight_in_parts_(in_parts) {}

    void reprojection(const Batch<double>& batch, std::span<double> jacobians) const override {
        check_guards(reprojection_->jacobian(batch, jacobians), "reprojection");
    }
    void reprojection(const Batch<float>& batch, std::span<float> jacobians) const override {
        check_guards(reprojection_->jacobian(batch, jacobians), "reprojection");
    }
    void weight(const Batch<double>& batch, std::span<double> derivatives) const override {
        weight_->gradient(batch, derivatives);
    }
    void weight(const Batch<float>& batch, std::span<float> derivatives) const override {
        weight_->gradient(batch, derivatives);
    }
    bool weight_in_parts() const override { return weight_in_parts_; }
    std::string name() const override { return reprojection_->name(); }

private:
    std::unique_ptr<Evaluator> reprojection_, weight_;
    bool weight_in_parts_;
};

}  // namespace

const Tape& weight_error_tape() {
    static const Tape tape = [] {
        Tape t = record(1, [](std::span<const Var> x) { return examples::ba_weight_error(x[0]); });
        t.optimize();
        return t;
    }();
    return tape;
}

const Tape& reprojection_tape() {
    static const Tape tape = examples::example_tape("ba-param");
    return tape;
}

std::unique_ptr<BlockJacobians> make_block_jacobians(std::string_view backend, Precision precision,
                                                     unsigned threads) {
    if (backend == "reference")
        return std::make_unique<EvaluatorBlocks>(std::make_unique<reference::Vm>(reprojection_tape()),
                                                 std::make_unique<reference::Vm>(weight_error_tape()), true);
    if (backend == "cpu") {
        cpu::Options options;
        options.threads = threads;
        if (precision == Precision::f64) options.block_lanes = cpu_reprojection_block_lanes;
        auto reprojection = std::make_unique<cpu::Vm>(reprojection_tape(), options);
        options.threads = 1;  // called from each of the caller's threads
        options.block_lanes = 0;
        return std::make_unique<EvaluatorBlocks>(
            std::move(reprojection), std::make_unique<cpu::Vm>(weight_error_tape(), options), true);
    }
    if (backend == "gpu")
        return std::make_unique<EvaluatorBlocks>(std::make_unique<gpu::Vm>(reprojection_tape()),
                                                 std::make_unique<gpu::Vm>(weight_error_tape()), false);
    if (backend == "adolc") {
        if (precision != Precision::f64) throw Unsupported("adolc evaluates in double only");
#if TAPEVM_BENCH_ADOLC
        return make_adolc_block_jacobians();
#else
        throw Unsupported("adolc is not in this build (ADOL-C, Debian's libadolc-dev, was not found)");
#endif
    }
    if (backend == "ceres") {
        if (precision != Precision::f64) throw Unsupported("ceres evaluates in double only");
#if TAPEVM_BENCH_CERES
        return make_ceres_block_jacobians(threads);
#else
        throw Unsupported("ceres is not in this build (Ceres Solver, Debian's libceres-dev, was not found)");
#endif
    }
    throw Error("unknown backend '" + std::string(backend) + "' (known: " + std::string(backend_names) + ")");
}

}  // namespace tapevm::bench::adbench
