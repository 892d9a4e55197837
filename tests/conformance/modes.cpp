#include "modes.hpp"

#include <array>
#include <cmath>
#include <iterator>
#include <limits>
#include <utility>

#include "backend.hpp"
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

namespace {

/// x, or a zero of its sign when x is subnormal in Real.
template <class Real> double flush_subnormal(double x) {
    return x != 0 && std::fabs(x) < static_cast<double>(std::numeric_limits<Real>::min())
               ? std::copysign(0.0, x)
               : x;
}

/// Flushes the subnormals of `values` in place; true when there were some.
template <class Real> bool flush_subnormals(std::vector<Real>& values) {
    bool any = false;
    for (Real& value : values) {
        const Real flushed = static_cast<Real>(flush_subnormal<Real>(value));
        any = any || !(flushed == value && std::signbit(flushed) == std::signbit(value));
        value = flushed;
    }
    return any;
}

}  // namespace

template <class Real>
Comparison<Real> run_all(const Evaluator& evaluator, const PointSet<Real>& points, const Seeds<Real>& seeds) {
    Comparison<Real> c;
    c.got = evaluate_all(evaluator, points, seeds);
    const reference::Vm reference(evaluator.tape());
    const auto on_reference = [&reference](const PointSet<Real>& p, const Seeds<Real>& s,
                                           Results<double>& in_double, Results<Real>& in_real) {
        in_double = evaluate_all(reference, convert<double>(p), convert<double>(s));
        if constexpr (sizeof(Real) == sizeof(double)) {
            in_real = in_double;
        } else {
            in_real = evaluate_all(reference, p, s);
        }
    };
    on_reference(points, seeds, c.reference, c.reference_real);
    if (tolerances<Real>().subnormals_may_flush) {
        PointSet<Real> flushed_points = points;
        Seeds<Real> flushed_seeds = seeds;
        bool any = flush_subnormals(flushed_points.inputs);
        any = flush_subnormals(flushed_points.params) || any;
        any = flush_subnormals(flushed_seeds.tangents) || any;
        any = flush_subnormals(flushed_seeds.cotangents) || any;
        any = flush_subnormals(flushed_seeds.directions) || any;
        if (any) {
            c.has_flushed = true;
            on_reference(flushed_points, flushed_seeds, c.flushed, c.flushed_real);
        }
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
    const bool may_flush = tolerances<Real>().subnormals_may_flush;
    const auto flushed_of =
        [&c](std::size_t index) -> std::pair<const Evaluation<double>*, const Evaluation<Real>*> {
        if (!c.has_flushed) return {nullptr, nullptr};
        const Evaluation<double>* in_double[] = {&c.flushed.forward,
                                                 &c.flushed.gradient,
                                                 &c.flushed.jacobian_forward,
                                                 &c.flushed.jacobian_reverse,
                                                 &c.flushed.jvp,
                                                 &c.flushed.vjp,
                                                 &c.flushed.hvp};
        const Evaluation<Real>* in_real[] = {&c.flushed_real.forward,
                                             &c.flushed_real.gradient,
                                             &c.flushed_real.jacobian_forward,
                                             &c.flushed_real.jacobian_reverse,
                                             &c.flushed_real.jvp,
                                             &c.flushed_real.vjp,
                                             &c.flushed_real.hvp};
        return {in_double[index], in_real[index]};
    };
    for (std::size_t index = 0; index < std::size(modes); ++index) {
        const Mode& mode = modes[index];
        const ValueJudge& judge = index == 0 ? value_judge : derivative_judge;
        std::vector<double> expected = mode.reference.values;
        std::vector<Real> expected_real = mode.reference_real.values;
        std::vector<std::size_t> diverged = mode.reference.report.diverged;
        std::vector<Real> got_values = mode.got.values;
        const auto [flushed, flushed_real] = flushed_of(index);
        if (may_flush && expected.size() == mode.got.values.size() &&
            expected_real.size() == expected.size()) {
            // A flushing backend may match the reference with flushed results, or the
            // reference on flushed inputs (with flushed results): take the first that matches.
            // Its own subnormal results count as the zeros it treats them as.
            for (std::size_t k = 0; k < expected.size(); ++k) {
                const double got = got_values[k];
                if (judge(got, expected[k], expected_real[k])) continue;
                std::vector<std::pair<double, double>> candidates = {
                    {flush_subnormal<Real>(expected[k]), flush_subnormal<Real>(expected_real[k])}};
                if (flushed != nullptr && flushed->values.size() == expected.size()) {
                    const double fe = flushed->values[k];
                    const double fer = flushed_real->values[k];
                    candidates.push_back({fe, fer});
                    candidates.push_back({flush_subnormal<Real>(fe), flush_subnormal<Real>(fer)});
                }
                const double got_flushed = flush_subnormal<Real>(got);
                for (const auto& [e, er] : candidates) {
                    const bool as_is = judge(got, e, er);
                    if (!as_is && !judge(got_flushed, e, er)) continue;
                    expected[k] = e;
                    expected_real[k] = static_cast<Real>(er);
                    if (!as_is) got_values[k] = static_cast<Real>(got_flushed);
                    break;
                }
            }
            if (flushed != nullptr && mode.got.report.diverged == flushed->report.diverged)
                diverged = flushed->report.diverged;
        }
        compare_results<Real>(failures, mode.name, got_values, expected, expected_real, mode.per_point,
                              describe, judge);
        compare_reports(failures, mode.name, mode.got.report.diverged, diverged);
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
