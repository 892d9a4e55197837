// Reduced gradients (tapevm/reduced.hpp): the lifted tape, and the sum of each point's vjp
// over the batch along detail::PairwiseSum's fixed tree.
#include "tapevm/reduced.hpp"

#include <algorithm>
#include <bit>
#include <string>
#include <thread>

#include "detail/pairwise_sum.hpp"
#include "tapevm/error.hpp"

namespace tapevm {

namespace {

// About this many values in each per-call buffer of the default chunk (16 MiB in f64), but at
// least this many points per call (a backend's threads and SIMD lanes need points to share).
constexpr std::size_t chunk_values = std::size_t{1} << 21;
constexpr std::size_t min_chunk_points = 64;
// Through the shared-input hooks a point costs its own inputs and a share of the group sums
// (groups of 16 or more points on the CPU VM): chunks of about this many values over that, at
// most this many points.
constexpr std::size_t shared_chunk_values = std::size_t{1} << 23;
constexpr std::size_t max_shared_chunk_points = std::size_t{1} << 16;

// The reduction runs on several threads (one slice of the gradient's columns each) from this
// many values per chunk, with at least this many columns per slice.
constexpr std::size_t reduction_threading_values = std::size_t{1} << 18;
constexpr std::size_t min_slice_columns = 2048;
constexpr unsigned max_reduction_threads = 16;
std::size_t slice_begin(std::size_t columns, std::size_t slices, std::size_t slice) {
    return columns * slice / slices;
}

// A calling thread's scratch buffers, kept from call to call: fresh buffers of this size cost
// a page fault per page on every call (more than the reduction itself on the GMM workload).
template <class Real> struct Scratch { std::vector<Real> inputs, terms, values; };
template <class Real> Scratch<Real>& scratch() {
    thread_local Scratch<Real> buffers;
    return buffers;
}
// Grows `buffer` to at least `size` values (never shrinks; new values are not read first).
template <class Real> std::span<Real> at_least(std::vector<Real>& buffer, std::size_t size) {
    if (buffer.size() < size) buffer.resize(size);
    return std::span<Real>(buffer).first(size);
}

std::vector<std::uint32_t> checked_differentiated(const Tape& tape,
                                                  std::vector<std::uint32_t> differentiated) {
    std::vector<bool> seen(tape.param_count(), false);
    for (const std::uint32_t k : differentiated) {
        if (k >= tape.param_count())
            throw Error("ReducedTape: parameter " + std::to_string(k) +
                        " is differentiated, but the tape has " + std::to_string(tape.param_count()) +
                        " parameters");
        if (seen[k]) throw Error("ReducedTape: parameter " + std::to_string(k) + " is named twice");
        seen[k] = true;
    }
    return differentiated;
}

// The largest power of two <= n (n >= 1).
std::size_t floor_power_of_two(std::size_t n) { return std::bit_floor(std::max<std::size_t>(n, 1)); }

}  // namespace

Tape lift_params(const Tape& tape, std::span<const std::uint32_t> differentiated) {
    const std::uint32_t n = tape.input_count(), q = tape.param_count();
    const auto d = static_cast<std::uint32_t>(differentiated.size());
    // New slot of each old Param slot n + k.
    std::vector<std::uint32_t> param_slot(q, 0);
    std::vector<bool> lifted(q, false);
    for (std::uint32_t j = 0; j < d; ++j) {
        param_slot[differentiated[j]] = n + j;
        lifted[differentiated[j]] = true;
    }
    TapeParts parts = tape.parts();
    parts.inputs = n + d;
    parts.params = q - d;
    std::uint32_t kept = 0;
    for (std::uint32_t k = 0; k < q; ++k) {
        if (!lifted[k]) param_slot[k] = n + d + kept++;
    }
    auto slot = [&](std::uint32_t s) { return s >= n && s < n + q ? param_slot[s - n] : s; };
    for (std::uint32_t j = 0; j < n + d; ++j) parts.instructions[j] = Instruction{Op::Input, j, 0, 0};
    for (std::uint32_t k = 0; k < q - d; ++k) parts.instructions[n + d + k] = Instruction{Op::Param, k, 0, 0};
    for (std::size_t i = n + q; i < parts.instructions.size(); ++i) {
        Instruction& ins = parts.instructions[i];
        const std::uint32_t operands = arity(ins.op);  // Powi: 1 (b is its exponent); Const: 0
        if (operands >= 1) ins.a = slot(ins.a);
        if (operands >= 2) ins.b = slot(ins.b);
        if (operands >= 3) ins.c = slot(ins.c);
    }
    for (std::uint32_t& out : parts.outputs) out = slot(out);
    for (Guard& guard : parts.guards) guard.slot = slot(guard.slot);
    return Tape(std::move(parts));
}

ReducedTape::ReducedTape(const Tape& tape, std::vector<std::uint32_t> differentiated)
    : inputs_(tape.input_count()), params_(tape.param_count()),
      differentiated_(checked_differentiated(tape, std::move(differentiated))) {
    if (tape.output_count() != 1)
        throw Unsupported("ReducedTape: the tape has " + std::to_string(tape.output_count()) +
                          " outputs; a reduced gradient needs exactly 1");
    lifted_ = lift_params(tape, differentiated_);
    std::vector<bool> lifted(params_, false);
    for (const std::uint32_t k : differentiated_) lifted[k] = true;
    for (std::uint32_t k = 0; k < params_; ++k) {
        if (!lifted[k]) kept_.push_back(k);
    }
}

ReducedTape ReducedTape::all_params(const Tape& tape) {
    std::vector<std::uint32_t> all(tape.param_count());
    for (std::uint32_t k = 0; k < tape.param_count(); ++k) all[k] = k;
    return ReducedTape(tape, std::move(all));
}

template <class Real>
std::vector<Real> ReducedTape::check_call(const std::string& where, const Evaluator& evaluator,
                                          const Batch<Real>& batch, std::span<const Real> weights) const {
    const Tape& tape = evaluator.tape();
    if (&tape != &lifted_ && !(tape == lifted_))
        throw Error(where +
                    ": the evaluator was built for another tape (build it on ReducedTape::tape(), the " +
                    "tape with these differentiated parameters lifted to inputs)");
    check_size(where, "inputs", batch.points * inputs_, batch.inputs.size());
    check_size(where, "params (shared by every point)", params_, batch.params.size());
    if (!weights.empty()) check_size(where, "weights", batch.points, weights.size());
    std::vector<Real> kept_params(kept_.size());
    for (std::size_t k = 0; k < kept_.size(); ++k) kept_params[k] = batch.params[kept_[k]];
    return kept_params;
}

template <class Real>
Report ReducedTape::gradient(const Evaluator& evaluator, const Batch<Real>& batch, std::span<Real> gradient,
                             const ReducedOptions<Real>& options) const {
    const std::string where = "ReducedTape::gradient";
    const std::vector<Real> kept_params = check_call(where, evaluator, batch, options.weights);
    const std::size_t n = inputs_, d = differentiated_.size(), width = n + d, points = batch.points;
    check_size(where, "gradient", d, gradient.size());
    if (!options.point_values.empty()) check_size(where, "point_values", points, options.point_values.size());
    if (!options.point_gradients.empty())
        check_size(where, "point_gradients", points * width, options.point_gradients.size());
    const bool want_value = options.value != nullptr || !options.point_values.empty();

    // Without per-point gradients, the evaluator's shared-input hooks: theta given once, its
    // adjoints summed in groups (no row of n + d values per point). Else whole lifted rows.
    const bool shared = options.point_gradients.empty();
    std::size_t chunk =
        options.chunk_points != 0 ? floor_power_of_two(options.chunk_points)
        : shared ? floor_power_of_two(std::clamp<std::size_t>(shared_chunk_values / (n + 2 + d / 16),
                                                              min_chunk_points, max_shared_chunk_points))
                 : floor_power_of_two(std::max(min_chunk_points, chunk_values / (width + 2)));
    chunk = std::min(chunk, std::bit_ceil(std::max<std::size_t>(points, 1)));
    Scratch<Real>& buffers = scratch<Real>();
    const std::span<Real> inputs = shared ? std::span<Real>() : at_least(buffers.inputs, chunk * width);
    const std::span<Real> terms = shared ? at_least(buffers.terms, chunk * n) : std::span<Real>();
    const std::span<Real> values = want_value ? at_least(buffers.values, chunk) : std::span<Real>();
    std::vector<Real> cotangents(chunk), theta(d);
    for (std::size_t j = 0; j < d; ++j) theta[j] = batch.params[differentiated_[j]];
    SharedSums sums;

    // The gradient's columns in slices, each summed by its own thread: the columns are
    // independent sums, so the bits do not depend on the slicing.
    const std::size_t slices = std::clamp<std::size_t>(
        d * chunk < reduction_threading_values ? 1 : d / min_slice_columns, 1,
        std::max(1u, std::min(std::thread::hardware_concurrency(), max_reduction_threads)));
    std::vector<detail::PairwiseSum> gradient_sums;
    for (std::size_t s = 0; s < slices; ++s)
        gradient_sums.emplace_back(slice_begin(d, slices, s + 1) - slice_begin(d, slices, s));
    const auto sum_slices = [&](auto&& add_rows) {
        std::vector<std::thread> helpers;
        for (std::size_t s = 1; s < slices; ++s) helpers.emplace_back(add_rows, s);
        add_rows(std::size_t{0});
        for (std::thread& helper : helpers) helper.join();
    };
    detail::PairwiseSum value_sum(want_value ? 1 : 0);
    Report report;
    for (std::size_t first = 0; first < points; first += chunk) {
        const std::size_t count = std::min(chunk, points - first);
        for (std::size_t p = 0; p < count; ++p)
            cotangents[p] = options.weights.empty() ? Real(1) : options.weights[first + p];
        if (!shared) {
            for (std::size_t p = 0; p < count; ++p) {
                Real* row = inputs.data() + p * width;
                std::copy_n(batch.inputs.data() + (first + p) * n, n, row);
                if (first == 0) std::copy(theta.begin(), theta.end(), row + n);  // kept for later chunks
            }
        }
        // The chunk in the lifted tape's layout, or its own inputs for the shared-input hooks.
        const Batch<Real> part =
            shared ? Batch<Real>{count, batch.inputs.subspan(first * n, count * n), kept_params}
                   : Batch<Real>{count, std::span<const Real>(inputs.first(count * width)), kept_params};
        const std::span<const Real> part_cotangents = std::span<const Real>(cotangents).first(count);
        // Nothing differentiated and no per-point gradients asked for: the forward sweep alone.
        const bool sweep = d > 0 || !shared || !want_value;
        if (sweep && shared) {
            sums.group = chunk;  // groups aligned within the chunk, so every group is a node of the tree
            const Report vjp_report = evaluator.evaluate_vjp_shared(
                part, n, std::span<const Real>(theta), part_cotangents, terms.first(count * n), sums);
            for (const std::size_t point : vjp_report.diverged) report.diverged.push_back(first + point);
            const unsigned level = static_cast<unsigned>(std::countr_zero(sums.group));
            sum_slices([&](std::size_t s) {
                const std::size_t begin = slice_begin(d, slices, s);
                for (std::size_t g = 0; g * sums.group < count; ++g) {
                    const double* row = sums.sums.data() + g * d + begin;
                    gradient_sums[s].add_node(level, std::min(sums.group, count - g * sums.group),
                                              [row](std::size_t j) { return row[j]; });
                }
            });
        } else if (sweep) {
            const std::span<Real> part_terms = options.point_gradients.subspan(first * width, count * width);
            const Report vjp_report = evaluator.vjp(part, part_cotangents, part_terms);
            for (const std::size_t point : vjp_report.diverged) report.diverged.push_back(first + point);
            sum_slices([&](std::size_t s) {
                const std::size_t begin = slice_begin(d, slices, s);
                for (std::size_t p = 0; p < count; ++p) {
                    const Real* row = part_terms.data() + p * width + n + begin;
                    gradient_sums[s].add([row](std::size_t j) { return row[j]; });
                }
            });
        }
        if (!want_value) continue;
        const std::span<Real> part_values =
            options.point_values.empty() ? values.first(count) : options.point_values.subspan(first, count);
        const Report forward_report =
            shared ? evaluator.evaluate_forward_shared(part, n, std::span<const Real>(theta), part_values)
                   : evaluator.forward(part, part_values);
        if (!sweep) {  // else the same guards as the vjp's, reported once
            for (const std::size_t point : forward_report.diverged) report.diverged.push_back(first + point);
        }
        for (std::size_t p = 0; p < count; ++p) {
            const double term = static_cast<double>(cotangents[p]) * static_cast<double>(part_values[p]);
            value_sum.add([term](std::size_t) { return term; });
        }
    }
    for (std::size_t s = 0; s < slices; ++s) {
        const std::vector<double> sum = gradient_sums[s].total();
        for (std::size_t j = 0; j < sum.size(); ++j)
            gradient[slice_begin(d, slices, s) + j] = static_cast<Real>(sum[j]);
    }
    if (options.value != nullptr) *options.value = static_cast<Real>(value_sum.total()[0]);
    return report;
}

template <class Real>
ReducedGradient<Real> ReducedTape::gradient(const Evaluator& evaluator, const Batch<Real>& batch,
                                            std::span<const Real> weights) const {
    ReducedGradient<Real> result;
    result.gradient.resize(differentiated_.size());
    ReducedOptions<Real> options;
    options.weights = weights;
    options.value = &result.value;
    result.report = gradient(evaluator, batch, std::span<Real>(result.gradient), options);
    return result;
}

template <class Real>
Report ReducedTape::hvp(const Evaluator& evaluator, const Batch<Real>& batch, std::span<const Real> direction,
                        std::span<Real> result, std::span<const Real> weights) const {
    const std::string where = "ReducedTape::hvp";
    const std::vector<Real> kept_params = check_call(where, evaluator, batch, weights);
    const std::size_t n = inputs_, d = differentiated_.size(), width = n + d, points = batch.points;
    check_size(where, "direction", d, direction.size());
    check_size(where, "result", d, result.size());
    // Lifted rows (x_p, theta), directions (0, v) and the hvp's rows, a chunk at a time.
    const std::size_t chunk =
        std::min(std::max(min_chunk_points, floor_power_of_two(chunk_values / (width + 2))),
                 std::bit_ceil(std::max<std::size_t>(points, 1)));
    std::vector<Real> inputs(chunk * width), directions(chunk * width, Real(0)), terms(chunk * width),
        cotangents(chunk);
    for (std::size_t p = 0; p < chunk; ++p) {
        for (std::size_t j = 0; j < d; ++j) {
            inputs[p * width + n + j] = batch.params[differentiated_[j]];
            directions[p * width + n + j] = direction[j];
        }
    }
    detail::PairwiseSum sum(d);
    Report report;
    for (std::size_t first = 0; first < points; first += chunk) {
        const std::size_t count = std::min(chunk, points - first);
        for (std::size_t p = 0; p < count; ++p) {
            std::copy_n(batch.inputs.data() + (first + p) * n, n, inputs.data() + p * width);
            cotangents[p] = weights.empty() ? Real(1) : weights[first + p];
        }
        const Report part =
            evaluator.hvp(Batch<Real>{count, std::span<const Real>(inputs).first(count * width), kept_params},
                          std::span<const Real>(cotangents).first(count),
                          std::span<const Real>(directions).first(count * width),
                          std::span<Real>(terms).first(count * width));
        for (const std::size_t point : part.diverged) report.diverged.push_back(first + point);
        for (std::size_t p = 0; p < count; ++p) {
            const Real* row = terms.data() + p * width + n;
            sum.add([row](std::size_t j) { return row[j]; });
        }
    }
    const std::vector<double> total = sum.total();
    for (std::size_t j = 0; j < d; ++j) result[j] = static_cast<Real>(total[j]);
    return report;
}

template <class Real>
Report ReducedTape::hessian(const Evaluator& evaluator, const Batch<Real>& batch, std::span<Real> result,
                            std::span<const Real> weights) const {
    const std::size_t d = differentiated_.size();
    check_size("ReducedTape::hessian", "result", d * d, result.size());
    std::vector<Real> direction(d, Real(0)), column(d);
    Report report;
    for (std::size_t i = 0; i < d; ++i) {
        direction[i] = Real(1);
        const Report part =
            hvp(evaluator, batch, std::span<const Real>(direction), std::span<Real>(column), weights);
        direction[i] = Real(0);
        if (i == 0) report = part;
        for (std::size_t j = 0; j < d; ++j) result[j * d + i] = column[j];
    }
    for (std::size_t i = 0; i < d; ++i) {
        for (std::size_t j = i + 1; j < d; ++j) {
            const Real mean = (result[i * d + j] + result[j * d + i]) / Real(2);
            result[i * d + j] = result[j * d + i] = mean;
        }
    }
    return report;
}

template Report ReducedTape::gradient<double>(const Evaluator&, const Batch<double>&, std::span<double>,
                                              const ReducedOptions<double>&) const;
template Report ReducedTape::gradient<float>(const Evaluator&, const Batch<float>&, std::span<float>,
                                             const ReducedOptions<float>&) const;
template ReducedGradient<double> ReducedTape::gradient<double>(const Evaluator&, const Batch<double>&,
                                                               std::span<const double>) const;
template ReducedGradient<float> ReducedTape::gradient<float>(const Evaluator&, const Batch<float>&,
                                                             std::span<const float>) const;

template Report ReducedTape::hvp<double>(const Evaluator&, const Batch<double>&, std::span<const double>,
                                         std::span<double>, std::span<const double>) const;
template Report ReducedTape::hvp<float>(const Evaluator&, const Batch<float>&, std::span<const float>,
                                        std::span<float>, std::span<const float>) const;
template Report ReducedTape::hessian<double>(const Evaluator&, const Batch<double>&, std::span<double>,
                                             std::span<const double>) const;
template Report ReducedTape::hessian<float>(const Evaluator&, const Batch<float>&, std::span<float>,
                                            std::span<const float>) const;

}  // namespace tapevm
