// Backend "adolc": ADOL-C as its users run it. The workload's template is taped once with
// adoubles (trace_on/trace_off, at the batch's first point; BA's feature as ADOL-C
// parameters, set per point with set_param_vec), then every point replays the tape through
// the drivers function(), gradient() or jacobian(). Double only, one thread (ADOL-C's tapes
// are global state).
#include <atomic>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <adolc/adolc.h>

#include "backends.hpp"
#include "mlp.hpp"
#include "tapevm/error.hpp"
#include "tapevm/examples.hpp"

namespace tapevm::bench {
namespace {

// Each runner has its own tape tag.
std::atomic<short> next_tag{1};

class AdolcRunner final : public Runner {
public:
    explicit AdolcRunner(const Problem& problem)
        : workload_(*problem.workload), mode_(problem.mode), tag_(next_tag++),
          n_(workload_.tape.input_count()), m_(workload_.tape.output_count()) {}

    void prepare(const Points& points) override {
        points_ = points.count;
        inputs_ = points.inputs;
        params_ = points.params;
        results_.assign(points_ * result_width(workload_.tape, mode_), 0.0);
        if (points_ > 0) record(0);
    }

    void run() override {
        std::vector<double*> rows(m_);
        const std::size_t n_params = workload_.tape.param_count();
        for (std::size_t point = 0; point < points_; ++point) {
            double* x = inputs_.data() + point * n_;
            double* out = results_.data() + point * result_width(workload_.tape, mode_);
            if (n_params > 0) set_param_vec(tag_, n_params, params_.data() + point * n_params);
            switch (mode_) {
                case Mode::forward: function(tag_, static_cast<int>(m_), static_cast<int>(n_), x, out); break;
                case Mode::gradient: gradient(tag_, static_cast<int>(n_), x, out); break;
                case Mode::jacobian:
                    for (std::size_t k = 0; k < m_; ++k) rows[k] = out + k * n_;
                    jacobian(tag_, static_cast<int>(m_), static_cast<int>(n_), x, rows.data());
                    break;
            }
        }
    }

    std::vector<double> result(std::size_t point) const override {
        const std::size_t width = result_width(workload_.tape, mode_);
        const auto first = results_.begin() + static_cast<std::ptrdiff_t>(point * width);
        return std::vector<double>(first, first + static_cast<std::ptrdiff_t>(width));
    }

    Mode mode() const override { return mode_; }
    std::string isa() const override { return "scalar"; }
    unsigned threads() const override { return 1; }

private:
    // Tapes the workload at point `point`.
    void record(std::size_t point) {
        const double* x = inputs_.data() + point * n_;
        std::vector<double> y(m_);
        trace_on(tag_);
        std::vector<adouble> ax(n_);
        for (std::size_t i = 0; i < n_; ++i) ax[i] <<= x[i];
        const std::span<const adouble> xs(ax);
        std::vector<adouble> ay(m_);
        switch (workload_.kind) {
            case WorkloadKind::ba: {
                const double* feature = params_.data() + point * 2;
                const pdouble features[2] = {mkparam(feature[0]), mkparam(feature[1])};
                const auto residual = examples::ba_residual<adouble, pdouble>(xs, features);
                ay[0] = residual[0];
                ay[1] = residual[1];
                break;
            }
            case WorkloadKind::rosenbrock16: ay[0] = examples::rosenbrock16<adouble>(xs); break;
            case WorkloadKind::trig16: ay[0] = examples::trig16<adouble>(xs); break;
            case WorkloadKind::mlp:
            case WorkloadKind::mlp16: ay[0] = mlp<adouble>(xs, *workload_.mlp); break;
        }
        for (std::size_t k = 0; k < m_; ++k) ay[k] >>= y[k];
        trace_off();
    }

    const Workload& workload_;
    Mode mode_;
    short tag_;
    std::size_t n_, m_;
    std::size_t points_ = 0;
    std::vector<double> inputs_, params_, results_;
};

}  // namespace

std::unique_ptr<Runner> make_adolc_runner(const Problem& problem) {
    if (problem.precision != Precision::f64) throw Unsupported("adolc evaluates in double only");
    return std::make_unique<AdolcRunner>(problem);
}

}  // namespace tapevm::bench
