#include "adbench.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <exception>
#include <type_traits>

#if defined(__linux__)
#include <sys/mman.h>
#endif

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "check.hpp"
#include "tapevm/examples.hpp"
#include "tapevm/reference.hpp"

namespace tapevm::bench::adbench {
namespace {

// Observations per share of a pool's work: threads stay off each other's cache lines.
constexpr std::size_t granularity = 64;
// Observations the objective gathers at a time (its buffers stay in L1/L2).
constexpr std::size_t objective_chunk = 256;

double seconds_between(std::chrono::steady_clock::time_point from, std::chrono::steady_clock::time_point to) {
    return std::chrono::duration<double>(to - from).count();
}

// Observation k's 15 inputs (camera, point, weight) and 2 params (feature), as Real.
template <class Real> void gather(const BaProblem& problem, std::size_t k, Real* inputs, Real* params) {
    const double* camera =
        problem.camera_values.data() + static_cast<std::size_t>(problem.observation_camera[k]) * camera_size;
    const double* point =
        problem.point_values.data() + static_cast<std::size_t>(problem.observation_point[k]) * point_size;
    for (std::size_t i = 0; i < camera_size; ++i) inputs[i] = static_cast<Real>(camera[i]);
    for (std::size_t i = 0; i < point_size; ++i) inputs[camera_size + i] = static_cast<Real>(point[i]);
    inputs[camera_size + point_size] = static_cast<Real>(problem.weights[k]);
    params[0] = static_cast<Real>(problem.features[2 * k]);
    params[1] = static_cast<Real>(problem.features[2 * k + 1]);
}

// The expected columns of observation k's reprojection row and weight row.
struct ObservationColumns {
    std::array<std::int32_t, observation_inputs> reprojection;
    std::int32_t weight;
};

ObservationColumns columns_of(const BaProblem& problem, std::size_t k) {
    ObservationColumns columns{};
    const std::size_t camera_base = camera_size * static_cast<std::size_t>(problem.observation_camera[k]);
    const std::size_t point_base =
        camera_size * problem.cameras + point_size * static_cast<std::size_t>(problem.observation_point[k]);
    const std::size_t weight_column = camera_size * problem.cameras + point_size * problem.points + k;
    for (std::size_t i = 0; i < camera_size; ++i)
        columns.reprojection[i] = static_cast<std::int32_t>(camera_base + i);
    for (std::size_t i = 0; i < point_size; ++i)
        columns.reprojection[camera_size + i] = static_cast<std::int32_t>(point_base + i);
    columns.reprojection[observation_inputs - 1] = static_cast<std::int32_t>(weight_column);
    columns.weight = static_cast<std::int32_t>(weight_column);
    return columns;
}

// write_structure()'s writer, also compute_jacobian()'s. Int32 throughout: 31p and 11n + 3m + p are below
// 2^31. Written with non-temporal stores (SSE2, on every x86-64) where aligned: the structure is written once
// and read only after the Jacobian, so its lines go to memory without being read first (read-for-ownership)
// and without evicting the inputs from the cache (measured: 4-6 ns per observation instead of
// 11-14 with plain stores, for its 136 bytes).
class StructureWriter {
public:
    StructureWriter(const BaProblem& problem, std::int32_t* row_starts, std::int32_t* columns)
        : problem_(problem), p_(problem.observations), row_starts_(row_starts), columns_(columns),
          first_point_column_(static_cast<std::int32_t>(camera_size * problem.cameras)),
          first_weight_column_(
              static_cast<std::int32_t>(camera_size * problem.cameras + point_size * problem.points)) {}

    void write(std::size_t first, std::size_t last) const {
        std::size_t k = first;
#if defined(__SSE2__)
        // Pairs of observations from an even one: 60 column indices, 15 aligned vectors
        // when the array is (malloc aligns to 16 bytes; checked, else plain stores).
        if (aligned(columns_)) {
            if (k % 2 == 1 && k < last) reprojection_columns(k++);
            for (; k + 2 <= last; k += 2) reprojection_column_pair(k);
        }
#endif
        for (; k < last; ++k) reprojection_columns(k);
        stream_sequence(columns_ + block * p_, first, last, first_weight_column_);
        stream_sequence(row_starts_ + 2 * p_, first, last, static_cast<std::int32_t>(block * p_));
        reprojection_row_starts(first, last);
        if (last == p_) row_starts_[3 * p_] = static_cast<std::int32_t>(nonzeros_per_observation * p_);
#if defined(__SSE2__)
        _mm_sfence();  // the streamed stores are seen by the thread that joins this one
#endif
    }

private:
    static constexpr std::size_t block = 2 * observation_inputs;

    static bool aligned(const void* address) { return reinterpret_cast<std::uintptr_t>(address) % 16 == 0; }

    std::int32_t camera_column(std::size_t k) const {
        return static_cast<std::int32_t>(camera_size) * problem_.observation_camera[k];
    }
    std::int32_t point_column(std::size_t k) const {
        return first_point_column_ + static_cast<std::int32_t>(point_size) * problem_.observation_point[k];
    }
    std::int32_t weight_column(std::size_t k) const {
        return first_weight_column_ + static_cast<std::int32_t>(k);
    }

    // Observation k's two rows: camera columns, point columns, weight column; twice.
    void reprojection_columns(std::size_t k) const {
        std::int32_t row[observation_inputs];
        for (std::size_t i = 0; i < camera_size; ++i)
            row[i] = camera_column(k) + static_cast<std::int32_t>(i);
        for (std::size_t i = 0; i < point_size; ++i)
            row[camera_size + i] = point_column(k) + static_cast<std::int32_t>(i);
        row[observation_inputs - 1] = weight_column(k);
        std::memcpy(columns_ + block * k, row, sizeof row);
        std::memcpy(columns_ + block * k + observation_inputs, row, sizeof row);
    }

    void reprojection_row_starts(std::size_t first, std::size_t last) const {
        std::size_t k = first;
        const auto one = [&](std::size_t at) {
            row_starts_[2 * at] = static_cast<std::int32_t>(block * at);
            row_starts_[2 * at + 1] = static_cast<std::int32_t>(block * at + observation_inputs);
        };
#if defined(__SSE2__)
        if (aligned(row_starts_)) {
            if (k % 2 == 1 && k < last) one(k++);
            // Observations k, k + 1: 30k, 30k + 15, 30k + 30, 30k + 45.
            __m128i starts = _mm_add_epi32(_mm_set1_epi32(static_cast<std::int32_t>(block * k)),
                                           _mm_setr_epi32(0, 15, 30, 45));
            const __m128i step = _mm_set1_epi32(static_cast<std::int32_t>(2 * block));
            for (; k + 2 <= last; k += 2) {
                _mm_stream_si128(reinterpret_cast<__m128i*>(row_starts_ + 2 * k), starts);
                starts = _mm_add_epi32(starts, step);
            }
        }
#endif
        for (; k < last; ++k) one(k);
    }

    // out[k] = start + k for k in [first, last).
    static void stream_sequence(std::int32_t* out, std::size_t first, std::size_t last, std::int32_t start) {
        std::size_t k = first;
#if defined(__SSE2__)
        for (; k < last && !aligned(out + k); ++k) out[k] = start + static_cast<std::int32_t>(k);
        __m128i values =
            _mm_add_epi32(_mm_set1_epi32(start + static_cast<std::int32_t>(k)), _mm_setr_epi32(0, 1, 2, 3));
        for (; k + 4 <= last; k += 4) {
            _mm_stream_si128(reinterpret_cast<__m128i*>(out + k), values);
            values = _mm_add_epi32(values, _mm_set1_epi32(4));
        }
#endif
        for (; k < last; ++k) out[k] = start + static_cast<std::int32_t>(k);
    }

#if defined(__SSE2__)
    // Observations k (even) and k + 1: their 4 rows, 60 indices at a 16-byte boundary
    // (30k indices from an aligned start), as 15 vectors:
    //   a: camera ca..ca+10, point pa..pa+2, weight wa (15), twice; then b the same.
    void reprojection_column_pair(std::size_t k) const {
        const std::int32_t ca = camera_column(k), pa = point_column(k), wa = weight_column(k);
        const std::int32_t cb = camera_column(k + 1), pb = point_column(k + 1), wb = wa + 1;
        const __m128i vectors[15] = {
            _mm_setr_epi32(ca, ca + 1, ca + 2, ca + 3),     _mm_setr_epi32(ca + 4, ca + 5, ca + 6, ca + 7),
            _mm_setr_epi32(ca + 8, ca + 9, ca + 10, pa),    _mm_setr_epi32(pa + 1, pa + 2, wa, ca),
            _mm_setr_epi32(ca + 1, ca + 2, ca + 3, ca + 4), _mm_setr_epi32(ca + 5, ca + 6, ca + 7, ca + 8),
            _mm_setr_epi32(ca + 9, ca + 10, pa, pa + 1),    _mm_setr_epi32(pa + 2, wa, cb, cb + 1),
            _mm_setr_epi32(cb + 2, cb + 3, cb + 4, cb + 5), _mm_setr_epi32(cb + 6, cb + 7, cb + 8, cb + 9),
            _mm_setr_epi32(cb + 10, pb, pb + 1, pb + 2),    _mm_setr_epi32(wb, cb, cb + 1, cb + 2),
            _mm_setr_epi32(cb + 3, cb + 4, cb + 5, cb + 6), _mm_setr_epi32(cb + 7, cb + 8, cb + 9, cb + 10),
            _mm_setr_epi32(pb, pb + 1, pb + 2, wb)};
        auto* out = reinterpret_cast<__m128i*>(columns_ + block * k);
        for (std::size_t v = 0; v < 15; ++v) _mm_stream_si128(out + v, vectors[v]);
    }
#endif

    const BaProblem& problem_;
    std::size_t p_;
    std::int32_t* row_starts_;
    std::int32_t* columns_;
    std::int32_t first_point_column_, first_weight_column_;
};

#if defined(__SSE2__)
// Observations k and k + 1's 30 inputs (camera 11, point 3, weight; twice) as 15 pairs of
// doubles streamed to `to` (16-byte aligned).
void stream_input_pair(const BaProblem& problem, std::size_t k, double* to) {
    const auto camera = [&](std::size_t at) {
        return problem.camera_values.data() +
               camera_size * static_cast<std::size_t>(problem.observation_camera[at]);
    };
    const auto point = [&](std::size_t at) {
        return problem.point_values.data() +
               point_size * static_cast<std::size_t>(problem.observation_point[at]);
    };
    const double *ca = camera(k), *pa = point(k), *cb = camera(k + 1), *pb = point(k + 1);
    const double wa = problem.weights[k], wb = problem.weights[k + 1];
    const __m128d pairs[15] = {_mm_loadu_pd(ca),     _mm_loadu_pd(ca + 2),   _mm_loadu_pd(ca + 4),
                               _mm_loadu_pd(ca + 6), _mm_loadu_pd(ca + 8),   _mm_setr_pd(ca[10], pa[0]),
                               _mm_loadu_pd(pa + 1), _mm_setr_pd(wa, cb[0]), _mm_loadu_pd(cb + 1),
                               _mm_loadu_pd(cb + 3), _mm_loadu_pd(cb + 5),   _mm_loadu_pd(cb + 7),
                               _mm_loadu_pd(cb + 9), _mm_loadu_pd(pb),       _mm_setr_pd(pb[2], wb)};
    for (std::size_t i = 0; i < 15; ++i) _mm_stream_pd(to + 2 * i, pairs[i]);
}
#endif

// The backend's inputs of observations [begin, end) into work (and in float the params and
// weights). In double, pairs of observations are streamed (SSE2 non-temporal stores) where
// aligned: the inputs reach memory without each line being read first. Measured at 1
// thread: assembly 8 -> 6 ns per observation on ba10, 6.5 -> 3.7 on ba3, the Jacobian as
// fast or faster on ba1..ba3 too (whose inputs would otherwise stay in the cache).
template <class Real>
void assemble_inputs(const BaProblem& problem, std::size_t begin, std::size_t end, JacobianWork<Real>& work) {
    Real* inputs = work.inputs.data();
    std::size_t k = begin;
    if constexpr (std::is_same_v<Real, double>) {
#if defined(__SSE2__)
        if (reinterpret_cast<std::uintptr_t>(inputs) % 16 == 0) {
            if (k % 2 == 1 && k < end) {
                Real feature[2];
                gather(problem, k, inputs + k * observation_inputs, feature);
                ++k;
            }
            for (; k + 2 <= end; k += 2) stream_input_pair(problem, k, inputs + k * observation_inputs);
            _mm_sfence();  // seen by the backend's threads
        }
#endif
    }
    for (; k < end; ++k) {
        Real feature[2];
        Real* params = std::is_same_v<Real, double> ? feature : work.params.data() + 2 * k;
        gather(problem, k, inputs + k * observation_inputs, params);
        if constexpr (!std::is_same_v<Real, double>) work.weights[k] = static_cast<Real>(problem.weights[k]);
    }
}

// `vector` resized to `size` (zeros), its memory first advised to be backed by transparent
// huge pages where the system allows (Linux: MADV_HUGEPAGE, which THP's "madvise" mode
// needs): the Jacobian's arrays are gigabytes on the large instances, streamed through once
// per run, and with 4 KiB pages every page costs a TLB miss and a page walk. The advice
// comes before the zeros touch the pages; elsewhere a no-op. The objective's arrays get the
// same. Measured on ba10 at 1 thread, 3 interleaved pairs of runs: Jacobian 37.0-39.8 ms
// (median) against 40.9-50.0 without; structure and assembly gain most.
template <class T> void resize_on_huge_pages(std::vector<T>& vector, std::size_t size) {
    vector.reserve(size);
#if defined(__linux__)
    constexpr std::uintptr_t huge = std::uintptr_t{2} << 20;
    const auto begin = (reinterpret_cast<std::uintptr_t>(vector.data()) + huge - 1) / huge * huge;
    const auto end = reinterpret_cast<std::uintptr_t>(vector.data() + vector.capacity()) / huge * huge;
    if (begin < end) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
#endif
    vector.resize(size);
}

}  // namespace

template <class Real> Objective<Real> prepare_objective(const BaProblem& problem) {
    Objective<Real> objective;
    resize_on_huge_pages(objective.reprojection_errors, 2 * problem.observations);
    resize_on_huge_pages(objective.weight_errors, problem.observations);
    return objective;
}

template <class Real> JacobianWork<Real> prepare_jacobian(const BaProblem& problem) {
    const std::size_t p = problem.observations;
    JacobianWork<Real> work;
    resize_on_huge_pages(work.inputs, p * observation_inputs);
    if constexpr (!std::is_same_v<Real, double>) {
        resize_on_huge_pages(work.params, 2 * p);
        resize_on_huge_pages(work.weights, p);
    }
    SparseJacobian<Real>& jacobian = work.jacobian;
    jacobian.rows = 3 * p;
    jacobian.columns = problem.jacobian_columns();
    resize_on_huge_pages(jacobian.row_starts, jacobian.rows + 1);
    resize_on_huge_pages(jacobian.column_indices, nonzeros_per_observation * p);
    resize_on_huge_pages(jacobian.values, nonzeros_per_observation * p);
    return work;
}

template <class Real>
void compute_objective(const BaProblem& problem, NativeKernel<Real> kernel, WorkerPool& pool,
                       Objective<Real>& objective) {
    pool.run(problem.observations, granularity, [&](std::size_t begin, std::size_t end) {
        std::array<Real, objective_chunk * observation_inputs> inputs;
        std::array<Real, objective_chunk * 2> params;
        for (std::size_t first = begin; first < end; first += objective_chunk) {
            const std::size_t count = std::min(objective_chunk, end - first);
            for (std::size_t i = 0; i < count; ++i)
                gather(problem, first + i, inputs.data() + i * observation_inputs, params.data() + 2 * i);
            const NativeData<Real> data{inputs.data(), params.data(),
                                        objective.reprojection_errors.data() + 2 * first, nullptr};
            kernel(WorkloadKind::ba, data, 0, count);
            for (std::size_t k = first; k < first + count; ++k)
                objective.weight_errors[k] = examples::ba_weight_error(static_cast<Real>(problem.weights[k]));
        }
    });
}

template <class Real>
JacobianPhases compute_jacobian(const BaProblem& problem, const BlockJacobians& blocks, WorkerPool& pool,
                                JacobianWork<Real>& work) {
    using clock = std::chrono::steady_clock;
    constexpr bool in_double = std::is_same_v<Real, double>;
    constexpr std::size_t block = 2 * observation_inputs;
    const std::size_t p = problem.observations;
    const std::span<Real> values(work.jacobian.values);
    std::span<const Real> params, weights;
    if constexpr (in_double) {
        params = problem.features;
        weights = problem.weights;
    } else {
        params = work.params;
        weights = work.weights;
    }
    const bool weight_in_parts = blocks.weight_in_parts();
    // The weight errors' derivatives of observations [begin, end).
    const auto weight_rows = [&](std::size_t begin, std::size_t end) {
        blocks.weight(Batch<Real>{end - begin, weights.subspan(begin, end - begin), {}},
                      values.subspan(block * p + begin, end - begin));
    };

    // One pass on the pool: each thread writes its share's rows of the CSR structure (streamed
    // to memory), assembles its share's inputs (left in the cache for the reprojection
    // blocks) and, where the backend allows, evaluates its share's weight rows.
    const StructureWriter structure(problem, work.jacobian.row_starts.data(),
                                    work.jacobian.column_indices.data());
    struct ThreadTimes {
        double structure = 0, weight = 0;
        bool worked = false;
    };
    std::vector<ThreadTimes> times(pool.threads());
    std::vector<std::exception_ptr> errors(pool.threads());
    const auto start = clock::now();
    pool.run_indexed(p, granularity, [&](unsigned thread, std::size_t begin, std::size_t end) {
        try {
            ThreadTimes& mine = times[thread];
            mine.worked = true;
            const auto started = clock::now();
            structure.write(begin, end);
            const auto structured = clock::now();
            assemble_inputs(problem, begin, end, work);
            const auto assembled = clock::now();
            if (weight_in_parts) weight_rows(begin, end);
            mine.structure = seconds_between(started, structured);
            mine.weight = seconds_between(assembled, clock::now());
        } catch (...) {
            errors[thread] = std::current_exception();  // rethrown on the calling thread
        }
    });
    const auto passed = clock::now();
    for (const std::exception_ptr& error : errors)
        if (error) std::rethrow_exception(error);

    blocks.reprojection(Batch<Real>{p, work.inputs, params}, values.first(block * p));
    if (!weight_in_parts) weight_rows(0, p);
    const auto evaluated = clock::now();

    // The pass split as its threads spent it on average (those with a share).
    JacobianPhases phases;
    double structure_seconds = 0, weight_seconds = 0;
    unsigned working = 0;
    for (const ThreadTimes& mine : times) {
        if (!mine.worked) continue;
        structure_seconds += mine.structure;
        weight_seconds += mine.weight;
        ++working;
    }
    if (working > 0) {
        structure_seconds /= working;
        weight_seconds /= working;
    }
    phases.structure = structure_seconds;
    phases.inputs = seconds_between(start, passed) - structure_seconds - weight_seconds;
    phases.blocks = seconds_between(passed, evaluated) + weight_seconds;
    return phases;
}

template <class Real>
void write_structure(const BaProblem& problem, std::size_t first, std::size_t last,
                     SparseJacobian<Real>& jacobian) {
    StructureWriter(problem, jacobian.row_starts.data(), jacobian.column_indices.data()).write(first, last);
}

template <class Real>
std::string check_structure(const BaProblem& problem, const SparseJacobian<Real>& jacobian) {
    const std::size_t p = problem.observations;
    const std::size_t nonzeros = nonzeros_per_observation * p;
    if (jacobian.rows != 3 * p) return "rows: " + std::to_string(jacobian.rows) + ", expected 3p";
    if (jacobian.columns != problem.jacobian_columns())
        return "columns: " + std::to_string(jacobian.columns) + ", expected 11n + 3m + p";
    if (jacobian.row_starts.size() != 3 * p + 1 || jacobian.column_indices.size() != nonzeros ||
        jacobian.values.size() != nonzeros)
        return "array sizes differ from 3p + 1 row starts and 31p nonzeros";
    // Walk the rows in order, as a CSR reader would.
    std::size_t at = 0;
    const auto row = [&](std::size_t r, std::span<const std::int32_t> expected) -> std::string {
        if (static_cast<std::size_t>(jacobian.row_starts[r]) != at)
            return "row_starts[" + std::to_string(r) + "] = " + std::to_string(jacobian.row_starts[r]) +
                   ", expected " + std::to_string(at);
        for (const std::int32_t column : expected) {
            if (jacobian.column_indices[at] != column)
                return "row " + std::to_string(r) + ": column_indices[" + std::to_string(at) +
                       "] = " + std::to_string(jacobian.column_indices[at]) + ", expected " +
                       std::to_string(column);
            ++at;
        }
        return "";
    };
    for (std::size_t k = 0; k < p; ++k) {
        const ObservationColumns c = columns_of(problem, k);
        for (std::size_t r = 2 * k; r < 2 * k + 2; ++r)
            if (std::string error = row(r, c.reprojection); !error.empty()) return error;
    }
    for (std::size_t k = 0; k < p; ++k) {
        const std::int32_t weight_column[1] = {columns_of(problem, k).weight};
        if (std::string error = row(2 * p + k, weight_column); !error.empty()) return error;
    }
    if (static_cast<std::size_t>(jacobian.row_starts[3 * p]) != nonzeros)
        return "row_starts[3p] = " + std::to_string(jacobian.row_starts[3 * p]) + ", expected 31p";
    return "";
}

template <class Real>
double sample_error(const BaProblem& problem, const SparseJacobian<Real>& jacobian,
                    const Objective<Real>& objective, std::span<const std::size_t> observations) {
    const std::size_t count = observations.size();
    const std::size_t p = problem.observations;
    std::vector<double> inputs(count * observation_inputs), params(count * 2), weights(count);
    std::vector<double> jacobian_values, objective_values;
    for (std::size_t s = 0; s < count; ++s) {
        const std::size_t k = observations[s];
        Real x[observation_inputs], feature[2];
        gather(problem, k, x, feature);  // rounded to Real, as the backend saw them
        std::copy(x, x + observation_inputs,
                  inputs.begin() + static_cast<std::ptrdiff_t>(s * observation_inputs));
        std::copy(feature, feature + 2, params.begin() + static_cast<std::ptrdiff_t>(2 * s));
        weights[s] = x[observation_inputs - 1];
        for (std::size_t r = 2 * k; r < 2 * k + 2; ++r)
            for (std::int32_t at = jacobian.row_starts[r]; at < jacobian.row_starts[r + 1]; ++at)
                jacobian_values.push_back(jacobian.values[static_cast<std::size_t>(at)]);
        objective_values.push_back(objective.reprojection_errors[2 * k]);
        objective_values.push_back(objective.reprojection_errors[2 * k + 1]);
    }
    for (std::size_t s = 0; s < count; ++s) {
        const std::size_t row = 2 * p + observations[s];
        for (std::int32_t at = jacobian.row_starts[row]; at < jacobian.row_starts[row + 1]; ++at)
            jacobian_values.push_back(jacobian.values[static_cast<std::size_t>(at)]);
    }
    for (const std::size_t k : observations) objective_values.push_back(objective.weight_errors[k]);

    const reference::Vm reprojection(reprojection_tape()), weight(weight_error_tape());
    const Batch<double> batch{count, inputs, params}, weight_batch{count, weights, {}};
    std::vector<double> expected_jacobian = reprojection.jacobian(batch).values;
    const std::vector<double> weight_derivatives = weight.gradient(weight_batch).values;
    expected_jacobian.insert(expected_jacobian.end(), weight_derivatives.begin(), weight_derivatives.end());
    std::vector<double> expected_objective = reprojection.forward(batch).values;
    const std::vector<double> weight_errors = weight.forward(weight_batch).values;
    expected_objective.insert(expected_objective.end(), weight_errors.begin(), weight_errors.end());
    return std::max(max_error(jacobian_values, expected_jacobian),
                    max_error(objective_values, expected_objective));
}

std::size_t bytes_needed(std::size_t observations, std::size_t sizeof_real) {
    // The problem (feature, weight, two indices), then per Real: inputs 15, values 31,
    // objective 3 (and in float params 2 and weights 1); int32 columns 31 and row starts 3.
    const std::size_t problem = 2 * 8 + 8 + 2 * 4;
    const std::size_t reals = observation_inputs + nonzeros_per_observation + 3 + (sizeof_real == 8 ? 0 : 3);
    return observations * (problem + reals * sizeof_real + (nonzeros_per_observation + 3) * 4);
}

#define TAPEVM_ADBENCH_INSTANTIATE(Real)                                                                    \
    template Objective<Real> prepare_objective<Real>(const BaProblem&);                                     \
    template JacobianWork<Real> prepare_jacobian<Real>(const BaProblem&);                                   \
    template void compute_objective<Real>(const BaProblem&, NativeKernel<Real>, WorkerPool&,                \
                                          Objective<Real>&);                                                \
    template JacobianPhases compute_jacobian<Real>(const BaProblem&, const BlockJacobians&, WorkerPool&,    \
                                                   JacobianWork<Real>&);                                    \
    template void write_structure<Real>(const BaProblem&, std::size_t, std::size_t, SparseJacobian<Real>&); \
    template std::string check_structure<Real>(const BaProblem&, const SparseJacobian<Real>&);              \
    template double sample_error<Real>(const BaProblem&, const SparseJacobian<Real>&,                       \
                                       const Objective<Real>&, std::span<const std::size_t>);
TAPEVM_ADBENCH_INSTANTIATE(double)
TAPEVM_ADBENCH_INSTANTIATE(float)
#undef TAPEVM_ADBENCH_INSTANTIATE

}  // namespace tapevm::bench::adbench
