#include "modes.hpp"

#include <array>

#include "tapevm/reference.hpp"

namespace tapevm::conformance {

template <class Real>
Seeds<Real> make_seeds(std::size_t points, std::size_t n_inputs, std::size_t n_outputs, std::size_t salt) {
    static constexpr std::array<double, 7> values = {1.0, -0.5, 2.0, 0.75, 0.0, -3.0, 1.25};
    auto fill = [&](std::size_t per_point, std::size_t offset) {
        std::vector<Real> seeds(points * per_point);
        for (std::size_t k = 0; k < seeds.size(); ++k) {
            seeds[k] = static_cast<Real>(values[(k * 3 + k / 7 + offset + salt) % values.size()]);
        }
        return seeds;
    };
    return Seeds<Real>{fill(n_inputs, 0), fill(n_outputs, 1), fill(n_inputs, 2)};
}

template <class Real>
Results<Real> evaluate_all(const Evaluator& evaluator, const PointSet<Real>& points,
                           const Seeds<Real>& seeds) {
    const Batch<Real> batch = points.batch();
    Results<Real> r;
    r.forward = evaluator.forward(batch);
    if (evaluator.tape().output_count() == 1) r.gradient = evaluator.gradient(batch);
    r.jacobian_forward = evaluator.jacobian(batch, JacobianMode::forward);
    r.jacobian_reverse = evaluator.jacobian(batch, JacobianMode::reverse);
    r.jvp = evaluator.jvp(batch, std::span<const Real>(seeds.tangents));
    r.vjp = evaluator.vjp(batch, std::span<const Real>(seeds.cotangents));
    r.hvp = evaluator.hvp(batch, std::span<const Real>(seeds.cotangents),
                          std::span<const Real>(seeds.directions));
    return r;
}

template <class Real>
Comparison<Real> run_all(const Evaluator& evaluator, const PointSet<Real>& points, const Seeds<Real>& seeds) {
    Comparison<Real> c;
    c.got = evaluate_all(evaluator, points, seeds);
    const reference::Vm reference(evaluator.tape());
    c.reference = evaluate_all(reference, convert<double>(points), convert<double>(seeds));
    if constexpr (sizeof(Real) == sizeof(double)) {
        c.reference_real = c.reference;
    } else {
        c.reference_real = evaluate_all(reference, points, seeds);
    }
    return c;
}

template <class Real>
void compare_all(Failures& failures, const Comparison<Real>& c, const Tape& tape,
                 const DescribePoint& describe, const ValueJudge& value_judge,
                 const ValueJudge& derivative_judge) {
    const std::size_t n = tape.input_count();
    const std::size_t m = tape.output_count();
    struct Mode {
        const char* name;
        const Evaluation<Real>& got;
        const Evaluation<double>& reference;
        const Evaluation<Real>& reference_real;
        std::size_t per_point;
    };
    const Mode modes[] = {
        {"forward", c.got.forward, c.reference.forward, c.reference_real.forward, m},
        {"gradient", c.got.gradient, c.reference.gradient, c.reference_real.gradient, n},
        {"jacobian (forward mode)", c.got.jacobian_forward, c.reference.jacobian_forward,
         c.reference_real.jacobian_forward, m * n},
        {"jacobian (reverse mode)", c.got.jacobian_reverse, c.reference.jacobian_reverse,
         c.reference_real.jacobian_reverse, m * n},
        {"jvp", c.got.jvp, c.reference.jvp, c.reference_real.jvp, m},
        {"vjp", c.got.vjp, c.reference.vjp, c.reference_real.vjp, n},
        {"hvp", c.got.hvp, c.reference.hvp, c.reference_real.hvp, n},
    };
    bool first = true;
    for (const Mode& mode : modes) {
        compare_results<Real>(failures, mode.name, mode.got.values, mode.reference.values,
                              mode.reference_real.values, mode.per_point, describe,
                              first ? value_judge : derivative_judge);
        compare_reports(failures, mode.name, mode.got.report.diverged, mode.reference.report.diverged);
        first = false;
    }
}

template <class Real>
DescribePoint describe_points(const PointSet<Real>& set, std::size_t n_inputs, std::size_t n_params) {
    return [&set, n_inputs, n_params](std::size_t point) {
        std::string text = "(";
        for (std::size_t i = 0; i < n_inputs && i < 8; ++i) {
            if (i > 0) text += ", ";
            text += show(set.inputs[point * n_inputs + i]);
        }
        if (n_inputs > 8) text += ", ...";
        if (n_params > 0) {
            const Batch<Real> batch = set.batch();
            const auto params = batch.params_of(point, n_params);
            text += ";";
            for (std::size_t j = 0; j < params.size() && j < 4; ++j) {
                text += ' ';
                text += show(params[j]);
            }
        }
        return text + ")";
    };
}

#define TAPEVM_CONFORMANCE_MODES(Real)                                                                      \
    template Seeds<Real> make_seeds<Real>(std::size_t, std::size_t, std::size_t, std::size_t);              \
    template Results<Real> evaluate_all<Real>(const Evaluator&, const PointSet<Real>&, const Seeds<Real>&); \
    template Comparison<Real> run_all<Real>(const Evaluator&, const PointSet<Real>&, const Seeds<Real>&);   \
    template void compare_all<Real>(Failures&, const Comparison<Real>&, const Tape&, const DescribePoint&,  \
                                    const ValueJudge&, const ValueJudge&);                                  \
    template DescribePoint describe_points<Real>(const PointSet<Real>&, std::size_t, std::size_t);
TAPEVM_CONFORMANCE_MODES(double)
TAPEVM_CONFORMANCE_MODES(float)

}  // namespace tapevm::conformance
