// tapevm::cpu::Vm: turns each Evaluator call into a Request, cuts the batch into blocks of
// lanes and hands them to the participants of the call (this thread and idle pool workers)
// through an atomic counter. Each participant owns a workspace (scratch and decoded programs)
// for the call, kept by the Engine for the next calls; guards are
// checked here, after each block, and the diverged points merged and sorted at the end.
#include <algorithm>
#include <atomic>
#include <bit>
#include <memory>
#include <cstdlib>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include "isa.hpp"
#include "plan.hpp"
#include "point_program.hpp"
#include "request.hpp"
#include "tapevm/cpu.hpp"
#include "tapevm/error.hpp"
#include "thread_pool.hpp"

namespace tapevm::cpu {
namespace detail {

/// TAPEVM_CPU_BLOCK_LANES (a tuning knob, like TAPEVM_CPU_ISA): lanes per block, 0 when unset.
std::size_t block_lanes_from_environment() {
    const char* text = std::getenv("TAPEVM_CPU_BLOCK_LANES");
    if (text == nullptr || *text == '\0') return 0;
    char* end = nullptr;
    const unsigned long long lanes = std::strtoull(text, &end, 10);
    if (*end != '\0' || text[0] == '-' || lanes == 0 || lanes > (1u << 16)) {
        throw Error("TAPEVM_CPU_BLOCK_LANES must be a whole number from 1 to 65536, not '" +
                    std::string(text) + "'");
    }
    return static_cast<std::size_t>(lanes);
}

/// Scratch of one participant, aligned for every instruction set's loads.
template <class Real> struct Scratch {
    explicit Scratch(std::size_t reals)
        : data(static_cast<Real*>(
              ::operator new[](std::max<std::size_t>(1, reals) * sizeof(Real), std::align_val_t{64}))) {}
    ~Scratch() { ::operator delete[](data, std::align_val_t{64}); }
    Scratch(const Scratch&) = delete;
    Scratch& operator=(const Scratch&) = delete;
    Real* data;
};

/// What one participant evaluates blocks in: its scratch, its staging buffer (streamed
/// results) and its decoded programs, which hold addresses in that scratch. Kept by the
/// Engine from call to call: on a long tape, allocating them and decoding the programs
/// (about 180 bytes per instruction) cost more than a small call's sweeps.
template <class Real> struct Workspace {
    Workspace(Mode m, std::size_t r, std::size_t l, std::size_t scratch_reals, std::size_t staging_reals,
              std::size_t entries_count, std::size_t value_entries)
        : mode(m), rows(r), lanes(l), staging_size(staging_reals), scratch(scratch_reals),
          staging(staging_reals), entries(entries_count) {
        program.values = entries.data();
        program.adjoints = entries.data() + value_entries;
    }
    bool fits(Mode m, std::size_t r, std::size_t l, std::size_t staging_reals) const {
        return mode == m && rows == r && lanes == l && staging_size == staging_reals;
    }
    Mode mode;
    std::size_t rows, lanes, staging_size;
    Scratch<Real> scratch;
    Scratch<Real> staging;
    std::vector<Entry<Real>> entries;
    Program<Real> program;
    bool built = false;  // program decoded (over this scratch)
};

/// Everything a Vm holds; behind a pointer so Vm stays movable and its header light.
struct Engine {
    Engine(Tape t, const Options& options)
        : tape(std::move(t)), plan(tape), isa(resolve_isa(options.isa)),
          threads(options.threads != 0 ? options.threads : std::max(1u, std::thread::hardware_concurrency())),
          block_lanes_option(options.block_lanes != 0 ? options.block_lanes : block_lanes_from_environment()),
          l1_bytes(l1_data_cache_bytes()), l2_bytes(l2_cache_bytes()), pool(threads - 1) {
        switch (isa) {
#if TAPEVM_CPU_BUILT_AVX512
            case Isa::avx512:
                f64 = kernels_avx512<double>();
                f32 = kernels_avx512<float>();
                break;
#endif
#if TAPEVM_CPU_BUILT_AVX2
            case Isa::avx2:
                f64 = kernels_avx2<double>();
                f32 = kernels_avx2<float>();
                break;
#endif
            default:  // resolve_isa() returns only instruction sets built in
                f64 = kernels_sse2<double>();
                f32 = kernels_sse2<float>();
                break;
        }
    }

    template <class Real> const KernelSet<Real>& kernels() const {
        if constexpr (std::is_same_v<Real, double>) {
            return f64;
        } else {
            return f32;
        }
    }

    /// Lanes per block: the option, or what keeps a block's scratch (`reals_per_lane`)
    /// within half of L2 and its rows that every step of a sweep may touch
    /// (`hot_reals_per_lane`: the reverse sweep's adjoint rows) within one and a half times
    /// L1 (the input adjoints among them, which are the results, are touched by few steps;
    /// on the AVX-512 machine of bench/RESULTS.md, 1.5 x L1 was 2-6% faster than 1 x L1 on
    /// every workload but trig16 in float, and 3 x L1 slower); a multiple of `width`,
    /// 16..1024 lanes when sized here.
    std::size_t lanes_for(std::size_t width, std::size_t reals_per_lane, std::size_t hot_reals_per_lane,
                          std::size_t sizeof_real) const {
        std::size_t lanes = 0;
        if (block_lanes_option != 0) {
            lanes = block_lanes_option;
        } else {
            const std::size_t bytes_per_lane = std::max<std::size_t>(1, reals_per_lane * sizeof_real);
            lanes = l2_bytes / 2 / bytes_per_lane;
            if (hot_reals_per_lane != 0)
                lanes = std::min(lanes, l1_bytes * 3 / 2 / (hot_reals_per_lane * sizeof_real));
            lanes = std::clamp<std::size_t>(lanes, 16, 1024);
            lanes -= lanes % width;
        }
        return std::max(width, (lanes + width - 1) / width * width);
    }

    /// Evaluates `request`; with shared inputs in reverse mode, `sums` gets their group sums.
    template <class Real> Report run(const Request<Real>& request, SharedSums* sums = nullptr) const;

    Tape tape;
    Plan plan;
    Isa isa;
    unsigned threads;
    std::size_t block_lanes_option;
    std::size_t l1_bytes;
    std::size_t l2_bytes;
    /// Result arrays larger than this are written with non-temporal stores.
    static constexpr std::size_t stream_bytes = std::size_t{4} << 20;
    mutable ThreadPool pool;  // run() is safe from several threads at once
    KernelSet<double> f64;
    KernelSet<float> f32;

    /// point_parts() of the tape in 1 and in `threads` parts, built on first use (jvps).
    const std::vector<PointPart>& point_program(bool split) const {
        std::call_once(split ? split_once : whole_once, [&] {
            (split ? split_parts : whole_parts) = point_parts(tape, plan, split ? threads : 1u);
        });
        return split ? split_parts : whole_parts;
    }
    mutable std::once_flag whole_once, split_once;
    mutable std::vector<PointPart> whole_parts, split_parts;

    /// A workspace for one participant of a call (a kept one that fits, else a new one).
    template <class Real>
    std::unique_ptr<Workspace<Real>> take_workspace(Mode mode, std::size_t rows, std::size_t lanes,
                                                    std::size_t staging_reals) const {
        {
            const std::lock_guard lock(workspaces_mutex);
            auto& kept = workspaces<Real>();
            for (auto it = kept.rbegin(); it != kept.rend(); ++it) {
                if ((*it)->fits(mode, rows, lanes, staging_reals)) {
                    std::unique_ptr<Workspace<Real>> found = std::move(*it);
                    kept.erase(std::next(it).base());
                    return found;
                }
            }
        }
        return std::make_unique<Workspace<Real>>(mode, rows, lanes, scratch_reals(plan, mode, rows, lanes),
                                                 staging_reals, program_entries(plan, mode),
                                                 plan.compute_slots.size());
    }
    /// Keeps a workspace for later calls: the newest 2 x threads of each precision (a call
    /// uses at most `threads`), so the memory kept is about that of two calls' scratch.
    template <class Real> void give_back(std::unique_ptr<Workspace<Real>> workspace) const {
        const std::lock_guard lock(workspaces_mutex);
        auto& kept = workspaces<Real>();
        kept.push_back(std::move(workspace));
        if (kept.size() > 2 * std::size_t{threads}) kept.erase(kept.begin());
    }
    template <class Real> std::vector<std::unique_ptr<Workspace<Real>>>& workspaces() const {
        if constexpr (std::is_same_v<Real, double>) {
            return f64_workspaces;
        } else {
            return f32_workspaces;
        }
    }
    mutable std::mutex workspaces_mutex;
    mutable std::vector<std::unique_ptr<Workspace<double>>> f64_workspaces;
    mutable std::vector<std::unique_ptr<Workspace<float>>> f32_workspaces;
};

namespace {

template <class Real> struct Call {
    const Engine* engine;
    const Request<Real>* request;
    std::size_t points;
    std::size_t lanes;
    std::size_t blocks;
    std::atomic<std::size_t> next_block{0};
    std::mutex mutex;
    std::vector<std::size_t> diverged;
};

/// Appends the points of the block whose guards fail; values in rows of `lanes`, the slot's
/// row Plan::value_row (hvp: the slot itself).
template <class Real>
void check_guards(const Tape& tape, const Plan& plan, bool hvp, const Real* values, std::size_t lanes,
                  std::size_t first, std::size_t count, std::vector<std::size_t>& diverged) {
    // Usually every point passes: a branch-free pass (vectorised) says whether any fails.
    bool any_failed = false;
    for (const Guard& guard : tape.guards()) {
        const Real* row = values + (hvp ? guard.slot : plan.value_row[guard.slot]) * lanes;
        const bool expected = guard.expected != 0;
        bool failed = false;
        for (std::size_t l = 0; l < count; ++l) failed |= (row[l] != Real(0)) != expected;
        any_failed = any_failed || failed;
    }
    if (!any_failed) return;
    for (std::size_t l = 0; l < count; ++l) {
        for (const Guard& guard : tape.guards()) {
            const std::size_t row = hvp ? guard.slot : plan.value_row[guard.slot];
            if ((values[row * lanes + l] != Real(0)) != (guard.expected != 0)) {
                diverged.push_back(first + l);
                break;
            }
        }
    }
}

/// One participant: evaluates blocks until none is left.
template <class Real> void participate(void* context) {
    Call<Real>& call = *static_cast<Call<Real>*>(context);
    const Engine& engine = *call.engine;
    const Request<Real>& request = *call.request;
    const KernelSet<Real>& kernels = engine.kernels<Real>();
    // Streamed results wait in a staging buffer of a block's results (background.hpp).
    std::unique_ptr<Workspace<Real>> workspace = engine.take_workspace<Real>(
        request.mode, request.rows, call.lanes,
        request.stream_results ? result_columns(engine.plan, request) * call.lanes + 64 : 0);
    BlockState<Real> state{workspace->scratch.data, call.lanes, false, workspace->program, 0, 0,
                           workspace->staging.data, {}};
    state.programs_built = workspace->built;
    const Real* scratch = workspace->scratch.data;
    std::vector<std::size_t> diverged;
    // Each participant claims its next block before it evaluates the current one, so the
    // kernels can prefetch the next block's inputs and results meanwhile.
    const auto claim = [&] { return call.next_block.fetch_add(1, std::memory_order_relaxed); };
    const auto count_of = [&](std::size_t block) {
        return block < call.blocks ? std::min(call.lanes, call.points - block * call.lanes) : 0;
    };
    for (std::size_t block = claim(); block < call.blocks;) {
        const std::size_t next = claim();
        const std::size_t first = block * call.lanes;
        const std::size_t count = count_of(block);
        state.next_first = next * call.lanes;
        state.next_count = count_of(next);
        kernels.run_block(engine.tape, engine.plan, request, state, first, count);
        block = next;
        if (engine.tape.guard_count() != 0) {
            check_guards(engine.tape, engine.plan, request.mode == Mode::hvp, scratch, call.lanes, first,
                         count, diverged);
        }
    }
    kernels.finish(state);
    workspace->program = state.program;
    workspace->built = state.programs_built;
    engine.give_back(std::move(workspace));
    if (!diverged.empty()) {
        const std::lock_guard lock(call.mutex);
        call.diverged.insert(call.diverged.end(), diverged.begin(), diverged.end());
    }
}

}  // namespace

template <class Real> Report Engine::run(const Request<Real>& request, SharedSums* sums) const {
    const std::size_t points = request.batch->points;
    if (points == 0) return {};
    const std::size_t width = kernels<Real>().width;
    const std::size_t hot = request.mode == Mode::reverse ? request.rows * plan.adjoint_rows : 0;
    std::size_t lanes =
        lanes_for(width, scratch_reals(plan, request.mode, request.rows, 1), hot, sizeof(Real));
    lanes = std::min(lanes, (points + width - 1) / width * width);
    // Shared inputs: blocks of a power of two lanes, so that each block's sums are one group
    // (a node of the tree ReducedTape sums along).
    if (request.has_shared) lanes = std::bit_floor(sums != nullptr ? std::min(lanes, sums->group) : lanes);
    Request<Real> streaming = request;
    streaming.stream_results =
        !request.tensors && points * result_columns(plan, request) * sizeof(Real) > stream_bytes;
    Call<Real> call{this, &streaming, points, lanes, (points + lanes - 1) / lanes, {}, {}, {}};
    if (request.has_shared && request.mode == Mode::reverse && sums != nullptr) {
        sums->group = lanes;
        sums->sums.resize(call.blocks * (plan.inputs - request.shared_from));
        streaming.group_sums = sums->sums.data();
    }
    const auto participants = static_cast<unsigned>(std::min<std::size_t>(threads, call.blocks));
    pool.run(participants - 1, &participate<Real>, &call);
    Report report;
    report.diverged = std::move(call.diverged);
    std::sort(report.diverged.begin(), report.diverged.end());
    return report;
}

}  // namespace detail

Vm::Vm(Tape tape, Options options) : engine_(std::make_unique<detail::Engine>(std::move(tape), options)) {}
Vm::~Vm() = default;
Vm::Vm(Vm&&) noexcept = default;
Vm& Vm::operator=(Vm&&) noexcept = default;

const Tape& Vm::tape() const { return engine_->tape; }

std::string Vm::name() const {
    const unsigned threads = engine_->threads;
    return "cpu (" + std::string(isa_name(engine_->isa)) + ", " + std::to_string(threads) +
           (threads == 1 ? " thread)" : " threads)");
}

Isa Vm::isa() const { return engine_->isa; }
unsigned Vm::threads() const { return engine_->threads; }

std::size_t Vm::block_lanes(std::size_t sizeof_real) const {
    const std::size_t width = sizeof_real == sizeof(float) ? engine_->f32.width : engine_->f64.width;
    return engine_->lanes_for(width, engine_->plan.value_rows, 0, sizeof_real);
}

namespace {

template <class Real>
detail::Request<Real> request_for(const Tape& tape, detail::Mode mode, const Batch<Real>& batch) {
    detail::Request<Real> request;
    request.mode = mode;
    request.batch = &batch;
    request.params_per_point = batch.params_per_point(tape.param_count());
    return request;
}

}  // namespace

template <class Real> Report Vm::forward_impl(const Batch<Real>& batch, std::span<Real> outputs) const {
    auto request = request_for(tape(), detail::Mode::forward, batch);
    request.results = outputs.data();
    return engine_->run(request);
}

template <class Real> Report Vm::gradient_impl(const Batch<Real>& batch, std::span<Real> gradients) const {
    auto request = request_for(tape(), detail::Mode::reverse, batch);
    request.rows = 1;
    request.results = gradients.data();
    return engine_->run(request);
}

template <class Real>
Report Vm::jacobian_impl(const Batch<Real>& batch, std::span<Real> jacobians, JacobianMode mode) const {
    const bool forward_mode = jacobian_uses_forward_mode(tape(), mode);
    auto request = request_for(tape(), forward_mode ? detail::Mode::tangent : detail::Mode::reverse, batch);
    request.rows = forward_mode ? tape().input_count() : tape().output_count();
    request.results = jacobians.data();
    return engine_->run(request);
}

template <class Real>
Report Vm::jvp_impl(const Batch<Real>& batch, std::span<const Real> tangents, std::span<Real> results) const {
    auto request = request_for(tape(), detail::Mode::tangent, batch);
    request.rows = 1;
    request.seeds = tangents.data();
    request.results = results.data();
    return engine_->run(request);
}

template <class Real>
Report Vm::vjp_impl(const Batch<Real>& batch, std::span<const Real> cotangents,
                    std::span<Real> results) const {
    auto request = request_for(tape(), detail::Mode::reverse, batch);
    request.rows = 1;
    request.seeds = cotangents.data();
    request.results = results.data();
    return engine_->run(request);
}

template <class Real>
Report Vm::forward_shared_impl(const Batch<Real>& batch, std::size_t from, std::span<const Real> shared,
                               std::span<Real> outputs) const {
    auto request = request_for(tape(), detail::Mode::forward, batch);
    request.results = outputs.data();
    request.has_shared = true;
    request.shared_from = from;
    request.shared = shared.data();
    return engine_->run(request);
}

template <class Real>
Report Vm::vjp_shared_impl(const Batch<Real>& batch, std::size_t from, std::span<const Real> shared,
                           std::span<const Real> cotangents, std::span<Real> point_results,
                           SharedSums& sums) const {
    auto request = request_for(tape(), detail::Mode::reverse, batch);
    request.rows = 1;
    request.seeds = cotangents.data();
    request.results = point_results.data();
    request.has_shared = true;
    request.shared_from = from;
    request.shared = shared.data();
    // Groups smaller than a SIMD vector: the rows of every point (Evaluator's default).
    if (sums.group < engine_->kernels<Real>().width)
        return Evaluator::evaluate_vjp_shared(batch, from, shared, cotangents, point_results, sums);
    return engine_->run(request, &sums);
}

template <class Real>
Report Vm::hvp_impl(const Batch<Real>& batch, std::span<const Real> cotangents,
                    std::span<const Real> directions, std::span<Real> results) const {
    auto request = request_for(tape(), detail::Mode::hvp, batch);
    request.seeds = cotangents.data();
    request.directions = directions.data();
    request.results = results.data();
    return engine_->run(request);
}

namespace {

/// One call of jvps on the point_directions kernel: participants take (point, part) units
/// in turn.
template <class Real> struct DirectionsCall {
    const detail::Engine* engine;
    const std::vector<detail::PointPart>* parts;
    const Batch<Real>* batch;
    const Real* directions;
    std::size_t count;
    Real* results;
    std::atomic<std::size_t> next_unit{0};
    std::mutex mutex;
    std::vector<std::size_t> diverged;
};

template <class Real> void participate_directions(void* context) {
    auto& call = *static_cast<DirectionsCall<Real>*>(context);
    const detail::Engine& engine = *call.engine;
    const detail::KernelSet<Real>& kernels = engine.kernels<Real>();
    const std::size_t n = engine.plan.inputs, m = engine.plan.outputs, q = engine.plan.params;
    const std::vector<detail::PointPart>& parts = *call.parts;
    std::size_t reals = 0;
    for (const detail::PointPart& part : parts)
        reals = std::max(reals, detail::point_directions_reals(part, call.count, kernels.width));
    detail::Scratch<Real> scratch(reals);
    std::vector<std::size_t> diverged;
    const std::size_t units = call.batch->points * parts.size();
    for (std::size_t unit = call.next_unit.fetch_add(1); unit < units; unit = call.next_unit.fetch_add(1)) {
        const std::size_t point = unit / parts.size();
        const bool holds = kernels.point_directions(
            engine.tape, parts[unit % parts.size()], call.batch->inputs.data() + point * n,
            call.batch->params_of(point, q).data(), call.directions, call.count,
            call.results + point * call.count * m, scratch.data);
        if (!holds) diverged.push_back(point);
    }
    if (!diverged.empty()) {
        const std::lock_guard lock(call.mutex);
        call.diverged.insert(call.diverged.end(), diverged.begin(), diverged.end());
    }
}

}  // namespace

template <class Real>
Report Vm::jvps_impl(const Batch<Real>& batch, std::span<const Real> directions, std::size_t count,
                     std::span<Real> results) const {
    const detail::Engine& engine = *engine_;
    const std::size_t width = engine.kernels<Real>().width;
    // Few points: the lanes of run_block would be mostly padding or copies of one point's
    // values; past a few vectors of points x directions, its blocks use the lanes better.
    if (batch.points * count > 4 * width) return Evaluator::evaluate_jvps(batch, directions, count, results);
    Report report;
    if (batch.points == 0 || count == 0) return report;
    // Fewer points than threads: each point's tape in parts (by outputs) that run at once.
    const std::vector<detail::PointPart>& parts = engine.point_program(batch.points < engine.threads);
    DirectionsCall<Real> call{&engine, &parts, &batch, directions.data(), count, results.data(), {}, {}, {}};
    const auto participants =
        static_cast<unsigned>(std::min<std::size_t>(engine.threads, batch.points * parts.size()));
    engine.pool.run(participants - 1, &participate_directions<Real>, &call);
    report.diverged = std::move(call.diverged);
    std::sort(report.diverged.begin(), report.diverged.end());
    return report;
}

namespace {

void check_bindings(const std::string& where, const std::string& argument, std::size_t expected,
                    std::span<const TensorBinding> bindings, bool results) {
    check_size(where, argument, expected, bindings.size());
    for (std::size_t k = 0; k < bindings.size(); ++k) {
        const TensorBinding& b = bindings[k];
        if (results && b.broadcast != Broadcast::full)
            throw Error(where + ": " + argument + "[" + std::to_string(k) + "] must not broadcast");
        if ((b.broadcast == Broadcast::row || b.broadcast == Broadcast::column) && b.extent == 0)
            throw Error(where + ": " + argument + "[" + std::to_string(k) + "] has extent 0");
    }
}

}  // namespace

Report Vm::forward_tensors(std::size_t elements, std::span<const TensorBinding> inputs,
                           std::span<const TensorBinding> outputs, std::span<const float> params) const {
    const std::string where = "cpu::Vm::forward_tensors";
    check_bindings(where, "inputs", tape().input_count(), inputs, false);
    check_bindings(where, "outputs", tape().output_count(), outputs, true);
    check_size(where, "params", tape().param_count(), params.size());
    const Batch<float> batch{elements, {}, params};
    auto request = request_for(tape(), detail::Mode::forward, batch);
    request.params_per_point = false;
    request.tensors = true;
    request.tensor_inputs = inputs.data();
    request.tensor_results = outputs.data();
    return engine_->run(request);
}

Report Vm::vjp_tensors(std::size_t elements, std::span<const TensorBinding> inputs,
                       std::span<const TensorBinding> cotangents, std::span<const TensorBinding> results,
                       std::span<const float> params) const {
    const std::string where = "cpu::Vm::vjp_tensors";
    check_bindings(where, "inputs", tape().input_count(), inputs, false);
    check_bindings(where, "cotangents", tape().output_count(), cotangents, false);
    check_bindings(where, "results", tape().input_count(), results, true);
    check_size(where, "params", tape().param_count(), params.size());
    const Batch<float> batch{elements, {}, params};
    auto request = request_for(tape(), detail::Mode::reverse, batch);
    request.params_per_point = false;
    request.rows = 1;
    request.tensors = true;
    request.tensor_inputs = inputs.data();
    request.tensor_seeds = cotangents.data();
    request.tensor_results = results.data();
    return engine_->run(request);
}

#define TAPEVM_INSTANTIATE(Real)                                                                           \
    template Report Vm::forward_impl(const Batch<Real>&, std::span<Real>) const;                           \
    template Report Vm::gradient_impl(const Batch<Real>&, std::span<Real>) const;                          \
    template Report Vm::jacobian_impl(const Batch<Real>&, std::span<Real>, JacobianMode) const;            \
    template Report Vm::jvp_impl(const Batch<Real>&, std::span<const Real>, std::span<Real>) const;        \
    template Report Vm::jvps_impl(const Batch<Real>&, std::span<const Real>, std::size_t, std::span<Real>) \
        const;                                                                                             \
    template Report Vm::vjp_impl(const Batch<Real>&, std::span<const Real>, std::span<Real>) const;        \
    template Report Vm::forward_shared_impl(const Batch<Real>&, std::size_t, std::span<const Real>,        \
                                            std::span<Real>) const;                                        \
    template Report Vm::vjp_shared_impl(const Batch<Real>&, std::size_t, std::span<const Real>,            \
                                        std::span<const Real>, std::span<Real>, SharedSums&) const;        \
    template Report Vm::hvp_impl(const Batch<Real>&, std::span<const Real>, std::span<const Real>,         \
                                 std::span<Real>) const;
TAPEVM_INSTANTIATE(double)
TAPEVM_INSTANTIATE(float)
#undef TAPEVM_INSTANTIATE

}  // namespace tapevm::cpu
