#include "tapevm/hessian.hpp"

#include <algorithm>
#include <vector>

#include "tapevm/error.hpp"

namespace tapevm {

template <class Real>
Report hessian(const Evaluator& evaluator, const Batch<Real>& batch, std::span<const Real> cotangents,
               std::span<Real> results) {
    const Tape& tape = evaluator.tape();
    const std::size_t n = tape.input_count();
    const std::size_t points = batch.points;
    check_batch(tape, batch, "hessian");
    check_size("hessian", "results", points * n * n, results.size());
    std::vector<Real> ones;
    if (cotangents.empty()) {
        if (tape.output_count() != 1) {
            throw ShapeError("hessian", "cotangents (empty means 1, for a tape with one output)",
                             points * tape.output_count(), 0);
        }
        ones.assign(points, Real(1));
        cotangents = ones;
    }
    check_size("hessian", "cotangents", points * tape.output_count(), cotangents.size());

    Report report;
    std::vector<Real> directions(points * n, Real(0));
    std::vector<Real> column(points * n);
    for (std::size_t i = 0; i < n; ++i) {
        for (std::size_t p = 0; p < points; ++p) directions[p * n + i] = Real(1);
        const Report part =
            evaluator.hvp(batch, cotangents, std::span<const Real>(directions), std::span<Real>(column));
        report.diverged.insert(report.diverged.end(), part.diverged.begin(), part.diverged.end());
        for (std::size_t p = 0; p < points; ++p) {
            directions[p * n + i] = Real(0);
            for (std::size_t j = 0; j < n; ++j) results[(p * n + j) * n + i] = column[p * n + j];  // H e_i
        }
    }
    for (std::size_t p = 0; p < points; ++p) {
        Real* h = results.data() + p * n * n;
        for (std::size_t i = 0; i < n; ++i) {
            for (std::size_t j = i + 1; j < n; ++j) {
                const Real mean = (h[i * n + j] + h[j * n + i]) / Real(2);
                h[i * n + j] = mean;
                h[j * n + i] = mean;
            }
        }
    }
    std::sort(report.diverged.begin(), report.diverged.end());
    report.diverged.erase(std::unique(report.diverged.begin(), report.diverged.end()), report.diverged.end());
    return report;
}

template <class Real>
Evaluation<Real> hessian(const Evaluator& evaluator, const Batch<Real>& batch,
                         std::span<const Real> cotangents) {
    const std::size_t n = evaluator.tape().input_count();
    Evaluation<Real> e{std::vector<Real>(batch.points * n * n), {}};
    e.report = hessian(evaluator, batch, cotangents, std::span<Real>(e.values));
    return e;
}

template Report hessian<double>(const Evaluator&, const Batch<double>&, std::span<const double>,
                                std::span<double>);
template Report hessian<float>(const Evaluator&, const Batch<float>&, std::span<const float>,
                               std::span<float>);
template Evaluation<double> hessian<double>(const Evaluator&, const Batch<double>&, std::span<const double>);
template Evaluation<float> hessian<float>(const Evaluator&, const Batch<float>&, std::span<const float>);

}  // namespace tapevm
