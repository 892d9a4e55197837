// A Runner over any tapevm::Evaluator with host buffers (the reference VM, the CPU VM):
// prepare() converts the points to Real once, run() calls forward, gradient or jacobian.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "runner.hpp"
#include "tapevm/evaluator.hpp"

namespace tapevm::bench {

template <class Real> class EvaluatorRunner final : public Runner {
public:
    /// `evaluator` evaluates problem.workload's tape; `isa` and `threads` describe it.
    EvaluatorRunner(std::unique_ptr<Evaluator> evaluator, Mode mode, std::string isa, unsigned threads)
        : evaluator_(std::move(evaluator)), mode_(mode), isa_(std::move(isa)), threads_(threads) {}

    void prepare(const Points& points) override {
        points_ = points.count;
        inputs_.assign(points.inputs.begin(), points.inputs.end());
        params_.assign(points.params.begin(), points.params.end());
        results_.assign(points_ * result_width(evaluator_->tape(), mode_), Real{0});
    }

    void run() override {
        const Batch<Real> batch{points_, inputs_, params_};
        const std::span<Real> out(results_);
        switch (mode_) {
            case Mode::forward: evaluator_->forward(batch, out); break;
            case Mode::gradient: evaluator_->gradient(batch, out); break;
            case Mode::jacobian: evaluator_->jacobian(batch, out); break;
        }
    }

    std::vector<double> result(std::size_t point) const override {
        const std::size_t width = result_width(evaluator_->tape(), mode_);
        const auto first = results_.begin() + static_cast<std::ptrdiff_t>(point * width);
        return std::vector<double>(first, first + static_cast<std::ptrdiff_t>(width));
    }

    Mode mode() const override { return mode_; }
    std::string isa() const override { return isa_; }
    unsigned threads() const override { return threads_; }

private:
    std::unique_ptr<Evaluator> evaluator_;
    Mode mode_;
    std::string isa_;
    unsigned threads_;
    std::size_t points_ = 0;
    std::vector<Real> inputs_, params_, results_;
};

/// An EvaluatorRunner in the problem's precision.
inline std::unique_ptr<Runner> make_evaluator_runner(std::unique_ptr<Evaluator> evaluator,
                                                     const Problem& problem, std::string isa,
                                                     unsigned threads) {
    if (problem.precision == Precision::f32)
        return std::make_unique<EvaluatorRunner<float>>(std::move(evaluator), problem.mode, std::move(isa),
                                                        threads);
    return std::make_unique<EvaluatorRunner<double>>(std::move(evaluator), problem.mode, std::move(isa),
                                                     threads);
}

}  // namespace tapevm::bench
