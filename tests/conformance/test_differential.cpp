// Differential fuzzing of the backends (issue 24 item 2): seeded random hand-built tapes
// (optimize_support.hpp's random_tape: every op of the op table with a formula, special
// constants, repeated instructions with same and swapped operands, identities, selects on
// constants, guards, parameters) with some constants and inputs replaced by extreme values,
// evaluated in double and float on the backend of this executable. It is part of the
// conformance suite, so every conformance executable runs it: the reference VM (its float
// evaluation against its double one), the CPU VM at each instruction set (one Meson test
// each), the GPU interpreter and the compiled GPU kernels.
//
// Two judges, because random tapes are often ill-conditioned (atanh near 1 feeding sinh
// feeding cos turns a 4-ulp error into 1e-8), and a whole-tape bound would then either
// fail correct backends or be too loose to see a wrong op:
//   - local, at every point: the tape with every slot an output, forward values and jvp
//     tangents; each slot against its op applied by the reference VM to the backend's own
//     operand values and tangents, within the op table's accuracy for the backend
//     (Tolerances::value_ulp_for, derivative_bound_for); leaves exact; the diverged points
//     exactly those where the backend's own guard slots break a guard.
//   - whole, at the points where the tape is well-conditioned (every slot value and tangent
//     within Tolerances::tapes of the reference's, guard slots of the same truth): every mode
//     (modes.hpp: forward, gradient, jacobian forward and reverse, jvp, vjp, hvp) against the
//     reference VM in double and in float, diverged points included (compare_all, as
//     test_tapes.cpp does for random trees).
//
// A disagreement prints the backend, precision, seed, mode, point (inputs; params), the value
// got and the reference's (double, and float), the tape's listing, and the command that
// reruns that one seed.
//
// Environment:
//   TAPEVM_DIFF_SEEDS=N       run N seeds (default: the CI slice, `ci_seeds` below)
//   TAPEVM_DIFF_FIRST_SEED=S  start at seed S (default 1)
//   TAPEVM_DIFF_POINTS=P      points per tape (default 6: lavapipe is slow)
//   TAPEVM_DIFF_SAVE_DIR=D    write each failing tape to D/diff-<seed>.tape (tape_file.hpp)
//
// Long runs (a GPU machine, or hours here): only this test case, one executable per backend,
// from the repository root after `ninja -C build tests/conformance/test_conformance_{reference,cpu,gpu}`:
//   export TAPEVM_DIFF_SEEDS=20000 TAPEVM_DIFF_POINTS=64 TAPEVM_DIFF_SAVE_DIR=/tmp; T=build/tests/conformance
//   $T/test_conformance_reference -tc='differential*'
//   for isa in sse2 avx2 avx512; do TAPEVM_CPU_ISA=$isa $T/test_conformance_cpu -tc='differential*'; done
//   $T/test_conformance_gpu -tc='differential*'
//   TAPEVM_TEST_GPU_ENGINE=compiled TAPEVM_DIFF_SEEDS=2000 $T/test_conformance_gpu -tc='differential*'
// (exit 77: the backend cannot run here; bench/RESULTS.md "Differential fuzzing" has results.)
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <doctest/doctest.h>

#include "backend.hpp"
#include "judge.hpp"
#include "modes.hpp"
#include "optimize_support.hpp"
#include "tapevm/error.hpp"
#include "tapevm/reference.hpp"
#include "tapevm/tape_file.hpp"
#include "test_util.hpp"

namespace tapevm::conformance {
namespace {

/// Seeds of the CI slice: each executable runs them in double and float. The GPU runs fewer
/// (lavapipe: about 0.5 s a seed in the interpreter; the compiled kernels compile each tape,
/// up to 5 s a seed in double).
constexpr std::uint64_t ci_seeds = 24;
constexpr std::uint64_t ci_seeds_gpu = 12;
constexpr std::uint64_t ci_seeds_compiled = 6;
constexpr std::size_t ci_points = 6;

std::uint64_t environment_number(const char* name, std::uint64_t fallback) {
    const char* text = std::getenv(name);
    if (text == nullptr || *text == '\0') return fallback;
    char* end = nullptr;
    const unsigned long long value = std::strtoull(text, &end, 10);
    if (end == text || *end != '\0') throw Error(std::string(name) + "=" + text + " is not a number");
    return value;
}

/// Values at the edges of double and float: subnormals, the extremes, the overflow
/// thresholds of exp and of float, values next to 1 and to the domain boundaries.
constexpr double dmax = std::numeric_limits<double>::max();
constexpr double float_max = static_cast<double>(std::numeric_limits<float>::max());
constexpr std::array<double, 20> extreme_constants = {4.9406564584124654e-324,
                                                      -2.2250738585072014e-308,
                                                      1e-300,
                                                      dmax,
                                                      -dmax,
                                                      1e308,
                                                      float_max,
                                                      -3.5e38,
                                                      1.4012984643248171e-45,
                                                      1.1754943508222875e-38,
                                                      709.78,
                                                      -745.2,
                                                      88.73,
                                                      -103.98,
                                                      1.0000001192092896,
                                                      0.99999999999999989,
                                                      -1.0000000000000002,
                                                      1e16,
                                                      9007199254740991.0,
                                                      1.5707963267948966};

/// The CI slice's tapes and points, or those the environment asks for.
struct Plan {
    std::uint64_t first = 1;
    std::uint64_t seeds = ci_seeds;
    std::size_t points = ci_points;
    std::string save_dir;
};

Plan plan() {
    Plan p;
    p.first = environment_number("TAPEVM_DIFF_FIRST_SEED", 1);
    const std::string& name = backend().name;
    const std::uint64_t slice = name.rfind("gpu compiled", 0) == 0 ? ci_seeds_compiled
                                : name.rfind("gpu", 0) == 0        ? ci_seeds_gpu
                                                                   : ci_seeds;
    p.seeds = environment_number("TAPEVM_DIFF_SEEDS", slice);
    p.points = static_cast<std::size_t>(environment_number("TAPEVM_DIFF_POINTS", ci_points));
    if (const char* dir = std::getenv("TAPEVM_DIFF_SAVE_DIR")) p.save_dir = dir;
    return p;
}

/// One seed's tape and points, in double (the same for every backend and precision).
struct Case {
    Tape tape;
    test::optimize_support::Points points;
    bool shared_params = false;
};

/// The tape and points of `seed`: random_tape around a random recording point, a quarter of
/// its constants (every constant on odd seeds that are multiples of 5) replaced by extreme
/// ones, points half near the recording point and half random (a third of those coordinates
/// special: zeros, infinities, NaN, 1e300), a few coordinates extreme; parameters shared by
/// every point on every third seed.
Case make_case(std::uint64_t seed, std::size_t points) {
    std::mt19937_64 rng(seed * 0x9e3779b97f4a7c15ULL + 0x5eed);
    std::uniform_real_distribution<double> coordinate(-2.0, 2.0);
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    auto below = [&](std::size_t n) { return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng); };
    const std::size_t inputs = 1 + below(4);
    const std::size_t params = below(3);
    std::vector<double> centre(inputs), centre_params(params);
    for (double& x : centre) x = coordinate(rng);
    for (double& x : centre_params) x = coordinate(rng);
    const Tape built = test::optimize_support::random_tape(rng, centre, centre_params);
    TapeParts parts = built.parts();
    const double share = seed % 10 == 5 ? 1.0 : 0.25;
    for (double& constant : parts.constants) {
        if (unit(rng) < share) constant = extreme_constants[below(extreme_constants.size())];
    }
    Case c{Tape(std::move(parts)), {}, seed % 3 == 0};
    c.points = test::optimize_support::points_around(rng, c.tape, centre, centre_params, points);
    for (double& x : c.points.inputs) {
        if (unit(rng) < 0.08) x = extreme_constants[below(extreme_constants.size())];
    }
    if (c.shared_params) c.points.params.resize(c.tape.param_count());
    return c;
}

template <class Real> PointSet<Real> point_set(const test::optimize_support::Points& points) {
    return PointSet<Real>{points.count, convert<Real>(points.inputs), convert<Real>(points.params)};
}

/// `tape` with every slot an output (guards kept): what the backend computed in each slot.
Tape every_slot(const Tape& tape) {
    TapeParts parts = tape.parts();
    parts.outputs.clear();
    for (std::uint32_t slot = 0; slot < parts.instructions.size(); ++slot) parts.outputs.push_back(slot);
    return Tape(std::move(parts));
}

/// x, or a zero of its sign when x is subnormal in Real.
template <class Real> double flushed(double x) {
    return x != 0 && std::fabs(x) < static_cast<double>(std::numeric_limits<Real>::min())
               ? std::copysign(0.0, x)
               : x;
}

/// The partial of Expm1 (r + 1) and Tanh ((1 - r)(1 + r)) computed from the result r: the op
/// table's formulas read the result, and where they cancel (r near -1, near +-1) the backend's
/// partial follows its own r, which may be a few ulp from the reference's.
std::optional<double> partial_from_result(Op op, double r) {
    if (op == Op::Expm1) return r + 1;
    if (op == Op::Tanh) return (1 - r) * (1 + r);
    return std::nullopt;
}

/// The local judge: each slot of the backend's forward values, and of its tangents along the
/// jvp seeds and along every input (the forward-mode Jacobian), against its op applied by the
/// reference VM to the backend's own operand values and tangents of that slot, within the op
/// table's accuracy for the backend (Tolerances::value_ulp_for; derivative_bound_for scaled by
/// the sum of |partial * tangent| over the operands, which may cancel). Leaves must be exact;
/// the diverged points must be those where the backend's own guard slots break a guard.
/// Ill-conditioning cannot hide a wrong op here: no error is carried from one slot to the
/// next. Returns, per point, whether every slot value and tangent is also within the
/// whole-tape bound of the reference's, with guard slots of the same truth.
template <class Real>
std::vector<bool> check_slots(Failures& failures, const Tape& tape, const PointSet<Real>& set,
                              const Seeds<Real>& seeds, const DescribePoint& describe) {
    const Tape all = every_slot(tape);
    const auto evaluator = make_evaluator(all);
    const Batch<Real> batch = set.batch();
    const Evaluation<Real> values = evaluator->forward(batch);
    const Evaluation<Real> jvp = evaluator->jvp(batch, std::span<const Real>(seeds.tangents));
    const Evaluation<Real> jacobian = evaluator->jacobian(batch, JacobianMode::forward);
    const std::size_t slots = all.slot_count();
    const std::size_t points = set.points;
    const std::size_t n = tape.input_count();
    if (values.values.size() != points * slots || jvp.values.size() != points * slots ||
        jacobian.values.size() != points * slots * n) {
        failures.add("every-slot tape: " + std::to_string(values.values.size()) + " values, " +
                     std::to_string(jvp.values.size()) + " tangents, " +
                     std::to_string(jacobian.values.size()) + " jacobian entries for " +
                     std::to_string(points) + " points of " + std::to_string(slots) + " slots");
        return std::vector<bool>(points, false);
    }
    const Tolerances& tol = tolerances<Real>();
    // Direction 0: the jvp seeds; direction 1 + i: input i (column i of the Jacobian).
    const std::size_t directions = 1 + n;
    auto value = [&](std::size_t p, std::uint32_t slot) { return values.values[p * slots + slot]; };
    auto tangent = [&](std::size_t d, std::size_t p, std::uint32_t slot) {
        return d == 0 ? jvp.values[p * slots + slot] : jacobian.values[(p * slots + slot) * n + (d - 1)];
    };
    auto input_tangent = [&](std::size_t d, std::size_t p, std::uint32_t input) -> Real {
        return d == 0 ? seeds.tangents[p * n + input] : (input == d - 1 ? Real(1) : Real(0));
    };
    auto direction_name = [](std::size_t d) {
        return d == 0 ? std::string("jvp") : "jacobian column " + std::to_string(d - 1);
    };
    auto slot_name = [&](std::uint32_t slot) {
        const Instruction& ins = all.instructions()[slot];
        std::string text = "slot %" + std::to_string(slot) + " " + std::string(info(ins.op).text);
        if (ins.op == Op::Powi) return text + " " + std::to_string(powi_exponent(ins));
        if (has_flag(ins.op, op_flag::leaf)) return text + " " + std::to_string(ins.a);
        const std::uint32_t operands[] = {ins.a, ins.b, ins.c};
        for (std::uint32_t k = 0; k < arity(ins.op); ++k)
            text += (k ? ", %" : " %") + std::to_string(operands[k]);
        return text;
    };

    // The reference's own slot values and tangents in double: the conditioning of each point.
    std::vector<bool> well_conditioned(points, true);
    {
        const PointSet<double> set_double = convert<double>(set);
        const std::vector<double> seeds_double = convert<double>(seeds.tangents);
        const reference::Vm oracle(all);
        const auto oracle_values = oracle.forward(set_double.batch());
        const auto oracle_jvp = oracle.jvp(set_double.batch(), std::span<const double>(seeds_double));
        const auto oracle_jacobian = oracle.jacobian(set_double.batch(), JacobianMode::forward);
        for (std::size_t p = 0; p < points; ++p) {
            for (const Guard& guard : all.guards())
                if ((value(p, guard.slot) != 0) != (oracle_values.values[p * slots + guard.slot] != 0))
                    well_conditioned[p] = false;
            for (std::uint32_t slot = 0; slot < slots; ++slot) {
                bool close = within(value(p, slot), oracle_values.values[p * slots + slot], tol.tapes) &&
                             within(tangent(0, p, slot), oracle_jvp.values[p * slots + slot], tol.tapes);
                for (std::size_t i = 0; i < n && close; ++i)
                    close = within(tangent(1 + i, p, slot),
                                   oracle_jacobian.values[(p * slots + slot) * n + i], tol.tapes);
                if (!close) well_conditioned[p] = false;
            }
        }
    }

    for (std::uint32_t slot = 0; slot < slots; ++slot) {
        const Instruction& ins = all.instructions()[slot];
        if (has_flag(ins.op, op_flag::leaf)) {
            for (std::size_t p = 0; p < points; ++p) {
                Real expected = 0;
                if (ins.op == Op::Input) {
                    expected = set.inputs[p * n + ins.a];
                } else if (ins.op == Op::Param) {
                    expected = batch.params_of(p, tape.param_count())[ins.a];
                } else {
                    expected = static_cast<Real>(all.constants()[ins.a]);
                }
                const bool may_flush = tol.subnormals_may_flush;
                bool ok = value_matches<Real>(value(p, slot), expected, 0.0, true) ||
                          (may_flush && value_matches<Real>(static_cast<Real>(flushed<Real>(value(p, slot))),
                                                            flushed<Real>(expected), 0.0, true));
                std::string tangents_text;
                for (std::size_t d = 0; d < directions; ++d) {
                    const Real want = ins.op == Op::Input ? input_tangent(d, p, ins.a) : Real(0);
                    ok = ok && within(tangent(d, p, slot), want, {});
                    tangents_text += " " + show(tangent(d, p, slot)) + " (expected " + show(want) + ")";
                }
                if (!ok)
                    failures.add(slot_name(slot) + " at point " + std::to_string(p) + " " + describe(p) +
                                 ": value " + show(value(p, slot)) + " (expected " + show(expected) +
                                 "), tangents" + tangents_text);
            }
            continue;
        }
        // The op on the backend's operands: a single-op tape on the reference, in double (and in
        // Real, the other correct evaluation derivative_judge accepts).
        const std::uint32_t arity_of = arity(ins.op);
        const std::uint32_t operands[] = {ins.a, ins.b, ins.c};
        const reference::Vm oracle_op(
            test::single_op_tape(ins.op, ins.op == Op::Powi ? powi_exponent(ins) : 0));
        PointSet<Real> local{points, std::vector<Real>(points * arity_of), {}};
        for (std::size_t p = 0; p < points; ++p)
            for (std::uint32_t k = 0; k < arity_of; ++k)
                local.inputs[p * arity_of + k] = value(p, operands[k]);
        const PointSet<double> local_double = convert<double>(local);
        const auto value_double = oracle_op.forward(local_double.batch());
        const auto partials = oracle_op.jacobian(local_double.batch(), JacobianMode::forward);
        // Where the backend may flush subnormals: the op on flushed operands too.
        std::vector<double> flushed_inputs = local_double.inputs;
        for (double& x : flushed_inputs) x = flushed<Real>(x);
        const auto value_flushed =
            oracle_op.forward(Batch<double>{points, std::span<const double>(flushed_inputs), {}});
        const double ulps = tol.value_ulp_for(ins.op);
        const bool signed_zero = tol.unsigned_zeros.count(ins.op) == 0;
        const ErrorBound bound = tol.derivative_bound_for(ins.op);
        const ValueJudge real_judge = derivative_judge<Real>(bound);
        std::vector<bool> value_ok(points);
        for (std::size_t p = 0; p < points; ++p) {
            const Real got = value(p, slot);
            const double want = value_double.values[p];
            bool ok = value_matches<Real>(got, want, ulps, signed_zero);
            if (!ok && sizeof(Real) < sizeof(double) && ins.op == Op::Fma) {
                // The double fma rounded to float is not the correctly rounded float fma where
                // the exact product lies half-way between two floats and the addend breaks the tie.
                const auto a = static_cast<Real>(local.inputs[p * 3]),
                           b = static_cast<Real>(local.inputs[p * 3 + 1]),
                           c = static_cast<Real>(local.inputs[p * 3 + 2]);
                ok = value_matches<Real>(got, static_cast<double>(std::fma(a, b, c)), ulps, signed_zero);
            }
            if (!ok && tol.subnormals_may_flush) {
                const Real got_flushed = static_cast<Real>(flushed<Real>(got));
                for (const double w :
                     {flushed<Real>(want), value_flushed.values[p], flushed<Real>(value_flushed.values[p])})
                    ok = ok || value_matches<Real>(got, w, ulps, signed_zero) ||
                         value_matches<Real>(got_flushed, w, ulps, signed_zero);
            }
            value_ok[p] = ok;
        }
        for (std::size_t d = 0; d < directions; ++d) {
            std::vector<Real> local_tangents(points * arity_of);
            for (std::size_t p = 0; p < points; ++p)
                for (std::uint32_t k = 0; k < arity_of; ++k)
                    local_tangents[p * arity_of + k] = tangent(d, p, operands[k]);
            const std::vector<double> tangents_double = convert<double>(local_tangents);
            const auto jvp_double =
                oracle_op.jvp(local_double.batch(), std::span<const double>(tangents_double));
            const auto jvp_real = oracle_op.jvp(local.batch(), std::span<const Real>(local_tangents));
            // Where the backend may flush subnormals (NVIDIA's f32: sqrt's tangent at 1.4e-45 is
            // then 1 / (2 sqrt(0)) = inf): the op's jvp at flushed operands and tangents too.
            std::vector<double> jvp_flushed;
            if (tol.subnormals_may_flush) {
                std::vector<double> flushed_tangents = tangents_double;
                for (double& t : flushed_tangents) t = flushed<Real>(t);
                jvp_flushed = oracle_op
                                  .jvp(Batch<double>{points, std::span<const double>(flushed_inputs), {}},
                                       std::span<const double>(flushed_tangents))
                                  .values;
            }
            for (std::size_t p = 0; p < points; ++p) {
                // sum_k partial_k * tangent_k, bounded relative to the sum of |terms|; a zero
                // tangent absorbs its partial.
                double scale = 0;
                for (std::uint32_t k = 0; k < arity_of; ++k) {
                    const double t = tangents_double[p * arity_of + k];
                    if (t != 0) scale += std::fabs(partials.values[p * arity_of + k] * t);
                }
                const double got = tangent(d, p, slot);
                const double want = jvp_double.values[p];
                bool ok = within(got, want, {0, bound.relative * scale + bound.absolute}) ||
                          real_judge(got, want, jvp_real.values[p]) ||
                          (std::isfinite(scale) &&
                           within(got, jvp_real.values[p], {0, 4 * bound.relative * scale + bound.absolute}));
                if (!ok && !jvp_flushed.empty()) {
                    const double at_flushed = jvp_flushed[p];
                    ok = within(got, at_flushed,
                                {0, bound.relative * std::fabs(at_flushed) + bound.absolute}) ||
                         within(static_cast<double>(static_cast<Real>(flushed<Real>(got))),
                                flushed<Real>(at_flushed),
                                {0, bound.relative * std::fabs(at_flushed) + bound.absolute});
                }
                if (const auto own = partial_from_result(ins.op, value(p, slot)); !ok && own) {
                    const double t = tangents_double[p];
                    const double term = t == 0 ? 0.0 : *own * t;
                    ok = within(got, term,
                                {bound.relative + 8 * std::numeric_limits<Real>::epsilon(), bound.absolute});
                }
                if (ok && value_ok[p]) continue;
                if (d > 0 && !value_ok[p] && ok) continue;  // the value is reported once, with direction 0
                std::string text = slot_name(slot) + " at point " + std::to_string(p) + " " + describe(p) +
                                   ", " + direction_name(d) + ": operands (";
                for (std::uint32_t k = 0; k < arity_of; ++k)
                    text += (k ? ", " : "") + show(local_double.inputs[p * arity_of + k]);
                text += "), tangents (";
                for (std::uint32_t k = 0; k < arity_of; ++k)
                    text += (k ? ", " : "") + show(tangents_double[p * arity_of + k]);
                text += ")";
                if (!value_ok[p]) {
                    const Real v = value(p, slot);
                    text += ": value " + show(v) + ", the op gives " + show(value_double.values[p]);
                    if (std::isfinite(v) && std::isfinite(static_cast<Real>(value_double.values[p])))
                        text += " (" + show(ulp_distance(v, static_cast<Real>(value_double.values[p]))) +
                                " ulp, bound " + show(ulps) + ")";
                }
                if (!ok) text += ": tangent " + show(got) + ", the op's jvp gives " + show(want);
                failures.add(text);
            }
        }
    }
    // Diverged points: exactly those where the backend's own guard slots break a guard.
    std::vector<std::size_t> expected_diverged;
    for (std::size_t p = 0; p < points; ++p) {
        bool holds = true;
        for (const Guard& guard : all.guards())
            holds = holds && ((value(p, guard.slot) != 0) == (guard.expected != 0));
        if (!holds) expected_diverged.push_back(p);
    }
    compare_reports(failures, "forward (every slot), against its own guard slots", values.report.diverged,
                    expected_diverged);
    compare_reports(failures, "jvp (every slot), against its own guard slots", jvp.report.diverged,
                    expected_diverged);
    compare_reports(failures, "jacobian (every slot), against its own guard slots", jacobian.report.diverged,
                    expected_diverged);
    return well_conditioned;
}

/// The points of `set` (and their seeds) where `keep` holds.
template <class Real>
std::pair<PointSet<Real>, Seeds<Real>> subset(const PointSet<Real>& set, const Seeds<Real>& seeds,
                                              const Tape& tape, const std::vector<bool>& keep) {
    const std::size_t n = tape.input_count(), m = tape.output_count(), q = tape.param_count();
    const bool per_point = set.batch().params_per_point(q);
    PointSet<Real> out;
    Seeds<Real> out_seeds;
    if (!per_point) out.params = set.params;
    const auto append = [](std::vector<Real>& to, const std::vector<Real>& from, std::size_t p,
                           std::size_t width) {
        to.insert(to.end(), from.begin() + static_cast<std::ptrdiff_t>(p * width),
                  from.begin() + static_cast<std::ptrdiff_t>((p + 1) * width));
    };
    for (std::size_t p = 0; p < set.points; ++p) {
        if (!keep[p]) continue;
        ++out.points;
        append(out.inputs, set.inputs, p, n);
        if (per_point) append(out.params, set.params, p, q);
        append(out_seeds.tangents, seeds.tangents, p, n);
        append(out_seeds.cotangents, seeds.cotangents, p, m);
        append(out_seeds.directions, seeds.directions, p, n);
    }
    return {std::move(out), std::move(out_seeds)};
}

/// Clears keep[p] where some mode of the tape is ill-conditioned at point p: the reference VM
/// in float (on the points rounded to float) is not within 1e-6 relative of the reference in
/// double, or diverges elsewhere. Float arithmetic then loses no more than a factor of about
/// 16 over its precision, so a correct backend in either precision is within the whole-tape
/// bounds. (Second-order cancellation, as in hvp of -745.2 * cbrt(x) * (x / cbrt(x)), is
/// invisible to the slot-by-slot conditioning of check_slots.)
template <class Real>
void drop_ill_conditioned(const Tape& tape, const PointSet<Real>& set, const Seeds<Real>& seeds,
                          std::vector<bool>& keep) {
    const reference::Vm oracle(tape);
    const Results<double> d = evaluate_all(oracle, convert<double>(set), convert<double>(seeds));
    const Results<float> f = evaluate_all(oracle, convert<float>(set), convert<float>(seeds));
    const std::pair<const Evaluation<double>*, const Evaluation<float>*> modes[] = {
        {&d.forward, &f.forward},
        {&d.gradient, &f.gradient},
        {&d.jacobian_forward, &f.jacobian_forward},
        {&d.jacobian_reverse, &f.jacobian_reverse},
        {&d.jvp, &f.jvp},
        {&d.vjp, &f.vjp},
        {&d.hvp, &f.hvp}};
    for (const auto& [in_double, in_float] : modes) {
        if (in_double->values.empty() || in_double->values.size() != in_float->values.size()) continue;
        const std::size_t per_point = in_double->values.size() / set.points;
        for (std::size_t k = 0; k < in_double->values.size(); ++k) {
            if (!within(in_float->values[k], in_double->values[k], {1e-6, 1e-30}))
                keep[k / per_point] = false;
        }
        const auto& a = in_double->report.diverged;
        const auto& b = in_float->report.diverged;
        for (const std::size_t p : a)
            if (std::find(b.begin(), b.end(), p) == b.end()) keep[p] = false;
        for (const std::size_t p : b)
            if (std::find(a.begin(), a.end(), p) == a.end()) keep[p] = false;
    }
}

/// Counts over a run, for the summary line.
struct Tally {
    std::size_t tapes = 0, points = 0, well_conditioned = 0, failing = 0;
};

/// One seed on the backend: the local judge at every point (check_slots), then every mode of
/// the tape against the reference within the whole-tape bound (Tolerances::tapes) at the
/// well-conditioned points.
template <class Real> void check_seed(std::uint64_t seed, const Plan& p, Tally& tally) {
    const Case c = make_case(seed, p.points);
    const std::string rerun = "rerun: TAPEVM_DIFF_FIRST_SEED=" + std::to_string(seed) +
                              " TAPEVM_DIFF_SEEDS=1 TAPEVM_DIFF_POINTS=" + std::to_string(p.points) +
                              " <this executable> -tc='differential*'";
    Failures failures(backend().name + " " + precision_name<Real>() + " differential seed " +
                      std::to_string(seed));
    failures.note(rerun + (c.shared_params ? " (params shared)\n" : "\n") + c.tape.dump());
    ++tally.tapes;
    tally.points += p.points;
    try {
        const PointSet<Real> set = point_set<Real>(c.points);
        const std::size_t n = c.tape.input_count();
        const Seeds<Real> seeds = make_seeds<Real>(set.points, n, c.tape.output_count(), seed);
        auto keep = check_slots(failures, c.tape, set, seeds, describe_points(set, n, c.tape.param_count()));
        drop_ill_conditioned(c.tape, set, seeds, keep);
        const auto [good, good_seeds] = subset(set, seeds, c.tape, keep);
        tally.well_conditioned += good.points;
        if (good.points > 0) {
            const auto evaluator = make_evaluator(c.tape);
            const Comparison<Real> comparison = run_all(*evaluator, good, good_seeds);
            const ValueJudge judge = derivative_judge<Real>(tolerances<Real>().tapes);
            compare_all(failures, comparison, c.tape, describe_points(good, n, c.tape.param_count()), judge,
                        judge);
        }
    } catch (const Error& error) {
        failures.add(std::string("threw: ") + error.what());
    }
    if (failures.count() > 0) {
        ++tally.failing;
        if (!p.save_dir.empty()) {
            const auto path = std::filesystem::path(p.save_dir) / ("diff-" + std::to_string(seed) + ".tape");
            save_file(c.tape, path);
            MESSAGE("tape of seed " << seed << " saved to " << path.string());
        }
    }
}

TEST_CASE_TEMPLATE("differential: seeded random hand-built tapes, every mode, against the reference VM", Real,
                   double, float) {
    const Plan p = plan();
    Tally tally;
    for (std::uint64_t seed = p.first; seed < p.first + p.seeds; ++seed) check_seed<Real>(seed, p, tally);
    MESSAGE(backend().name << " " << std::string(precision_name<Real>()) << ": " << tally.tapes
                           << " tapes from seed " << p.first << ", " << tally.points << " points ("
                           << tally.well_conditioned << " well-conditioned, also judged whole), "
                           << tally.failing << " tapes with mismatches");
}

}  // namespace
}  // namespace tapevm::conformance
