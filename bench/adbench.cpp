#include "adbench.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <type_traits>

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

}  // namespace

template <class Real> Objective<Real> prepare_objective(const BaProblem& problem) {
    return {std::vector<Real>(2 * problem.observations), std::vector<Real>(problem.observations)};
}

template <class Real> JacobianWork<Real> prepare_jacobian(const BaProblem& problem) {
    const std::size_t p = problem.observations;
    JacobianWork<Real> work;
    work.inputs.resize(p * observation_inputs);
    if constexpr (!std::is_same_v<Real, double>) {
        work.params.resize(2 * p);
        work.weights.resize(p);
    }
    SparseJacobian<Real>& jacobian = work.jacobian;
    jacobian.rows = 3 * p;
    jacobian.columns = problem.jacobian_columns();
    jacobian.row_starts.resize(jacobian.rows + 1);
    jacobian.column_indices.resize(nonzeros_per_observation * p);
    jacobian.values.resize(nonzeros_per_observation * p);
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
    const std::size_t p = problem.observations;
    JacobianPhases phases;

    const auto start = clock::now();
    pool.run(p, granularity, [&](std::size_t begin, std::size_t end) {
        Real feature[2];
        for (std::size_t k = begin; k < end; ++k) {
            Real* params = in_double ? feature : work.params.data() + 2 * k;
            gather(problem, k, work.inputs.data() + k * observation_inputs, params);
            if constexpr (!in_double) work.weights[k] = static_cast<Real>(problem.weights[k]);
        }
    });
    const auto assembled = clock::now();

    std::span<const Real> params, weights;
    if constexpr (in_double) {
        params = problem.features;
        weights = problem.weights;
    } else {
        params = work.params;
        weights = work.weights;
    }
    const std::span<Real> values(work.jacobian.values);
    constexpr std::size_t block = 2 * observation_inputs;
    blocks.reprojection(Batch<Real>{p, work.inputs, params}, values.first(block * p));
    blocks.weight(Batch<Real>{p, weights, {}}, values.subspan(block * p, p));
    const auto evaluated = clock::now();

    std::int32_t* row_starts = work.jacobian.row_starts.data();
    std::int32_t* columns = work.jacobian.column_indices.data();
    pool.run(p, granularity, [&](std::size_t begin, std::size_t end) {
        for (std::size_t k = begin; k < end; ++k) {
            const ObservationColumns c = columns_of(problem, k);
            std::copy(c.reprojection.begin(), c.reprojection.end(), columns + block * k);
            std::copy(c.reprojection.begin(), c.reprojection.end(), columns + block * k + observation_inputs);
            columns[block * p + k] = c.weight;
            row_starts[2 * k] = static_cast<std::int32_t>(block * k);
            row_starts[2 * k + 1] = static_cast<std::int32_t>(block * k + observation_inputs);
            row_starts[2 * p + k] = static_cast<std::int32_t>(block * p + k);
        }
        if (end == p) row_starts[3 * p] = static_cast<std::int32_t>(nonzeros_per_observation * p);
    });
    const auto structured = clock::now();

    phases.inputs = seconds_between(start, assembled);
    phases.blocks = seconds_between(assembled, evaluated);
    phases.structure = seconds_between(evaluated, structured);
    return phases;
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

#define TAPEVM_ADBENCH_INSTANTIATE(Real)                                                                 \
    template Objective<Real> prepare_objective<Real>(const BaProblem&);                                  \
    template JacobianWork<Real> prepare_jacobian<Real>(const BaProblem&);                                \
    template void compute_objective<Real>(const BaProblem&, NativeKernel<Real>, WorkerPool&,             \
                                          Objective<Real>&);                                             \
    template JacobianPhases compute_jacobian<Real>(const BaProblem&, const BlockJacobians&, WorkerPool&, \
                                                   JacobianWork<Real>&);                                 \
    template std::string check_structure<Real>(const BaProblem&, const SparseJacobian<Real>&);           \
    template double sample_error<Real>(const BaProblem&, const SparseJacobian<Real>&,                    \
                                       const Objective<Real>&, std::span<const std::size_t>);
TAPEVM_ADBENCH_INSTANTIATE(double)
TAPEVM_ADBENCH_INSTANTIATE(float)
#undef TAPEVM_ADBENCH_INSTANTIATE

}  // namespace tapevm::bench::adbench
