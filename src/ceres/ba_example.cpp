// tapevm-ceres-ba: solves an ADBench BA instance with Ceres twice, once with every residual
// block evaluated by the tapevm adapter (tapevm/ceres/ba.hpp: one batched Jacobian per Ceres
// evaluation) and once with Ceres's own AutoDiffCostFunction (Jets), and prints both final
// costs and Ceres's own timings per evaluation (Solver::Summary), medians over --repeat solves
// with the routes alternating. A third route, the floor, times Ceres's own per-block work with
// a cost function that computes nothing (ConstantBlock below).
//
//   tapevm-ceres-ba FILE [--threads N] [--device cpu|gpu] [--iterations N]
//                   [--solver dense_schur|sparse_schur|iterative_schur] [--repeat N] [--route both|tapevm|autodiff]
//
// The problem is ADBench's (bench/adbench_reader.hpp: the file's one camera, point, weight and
// feature replicated); parameter blocks are the cameras (11) and points (3); each observation's
// weight and feature are constants. Both routes start from the same values and use the same
// Solver::Options, num_threads = --threads (the adapter's CPU VM uses as many).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include "adbench_reader.hpp"
#include "median.hpp"
#include "tapevm/ceres/ba.hpp"
#include "tapevm/error.hpp"

namespace {

using tapevm::bench::adbench::BaProblem;

struct Arguments {
    std::string file;
    unsigned threads = 1;
    tapevm::ceres::Device device = tapevm::ceres::Device::cpu;
    int iterations = 10;
    unsigned repeat = 1;
    std::string solver = "dense_schur";
    std::string route = "both";
};

struct Result {
    std::string evaluator;
    ceres::Solver::Summary summary;
    double jacobian_per_evaluation = 0, residual_per_evaluation = 0;
    /// The adapter's part of each Jacobian evaluation: gathering and the batched call.
    double gather_per_evaluation = 0, batched_per_evaluation = 0;
};

const char* usage =
    "usage: tapevm-ceres-ba FILE [--threads N] [--device cpu|gpu] [--iterations N]\n"
    "                       [--solver dense_schur|sparse_schur|iterative_schur] [--repeat N]\n"
    "                       [--route both|tapevm|autodiff]\n";

Arguments parse(int argc, char** argv) {
    Arguments a;
    for (int i = 1; i < argc; ++i) {
        const std::string_view arg = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) throw tapevm::Error(std::string(arg) + " needs a value");
            return argv[++i];
        };
        auto number = [&](long low, long high) {
            const std::string text = value();
            char* end = nullptr;
            const long n = std::strtol(text.c_str(), &end, 10);
            if (text.empty() || *end != '\0' || n < low || n > high)
                throw tapevm::Error(std::string(arg) + ": expected a whole number in [" +
                                    std::to_string(low) + ", " + std::to_string(high) + "], found '" + text +
                                    "'");
            return n;
        };
        if (arg == "--threads")
            a.threads = static_cast<unsigned>(number(1, 1024));
        else if (arg == "--iterations")
            a.iterations = static_cast<int>(number(1, 1000));
        else if (arg == "--repeat")
            a.repeat = static_cast<unsigned>(number(1, 100));
        else if (arg == "--device") {
            const std::string d = value();
            if (d == "cpu")
                a.device = tapevm::ceres::Device::cpu;
            else if (d == "gpu")
                a.device = tapevm::ceres::Device::gpu;
            else
                throw tapevm::Error("--device: expected cpu or gpu, found '" + d + "'");
        } else if (arg == "--solver") {
            a.solver = value();
            if (a.solver != "dense_schur" && a.solver != "sparse_schur" && a.solver != "iterative_schur")
                throw tapevm::Error(
                    "--solver: expected dense_schur, sparse_schur or iterative_schur, found '" + a.solver +
                    "'");
        } else if (arg == "--route") {
            a.route = value();
            if (a.route != "both" && a.route != "tapevm" && a.route != "autodiff")
                throw tapevm::Error("--route: expected both, tapevm or autodiff, found '" + a.route + "'");
        } else if (arg == "--help" || arg == "-h") {
            std::fputs(usage, stdout);
            std::exit(0);
        } else if (!arg.empty() && arg[0] != '-' && a.file.empty())
            a.file = arg;
        else
            throw tapevm::Error("unknown argument '" + std::string(arg) + "'");
    }
    if (a.file.empty()) throw tapevm::Error("no instance file given");
    return a;
}

ceres::Solver::Options solver_options(const Arguments& a) {
    ceres::Solver::Options options;
    options.linear_solver_type = a.solver == "dense_schur"    ? ceres::DENSE_SCHUR
                                 : a.solver == "sparse_schur" ? ceres::SPARSE_SCHUR
                                                              : ceres::ITERATIVE_SCHUR;
    options.max_num_iterations = a.iterations;
    options.num_threads = static_cast<int>(a.threads);
    options.logging_type = ceres::SILENT;
    return options;
}

enum class Route { autodiff, tapevm, floor };

/// The floor: Ceres's own work per residual block with a cost function that only copies one
/// block's residuals and Jacobian from a constant array (no derivative computed): what no
/// evaluator can go below inside Ceres's evaluation loop.
class ConstantBlock final : public ceres::SizedCostFunction<2, 11, 3> {
public:
    bool Evaluate(double const* const*, double* residuals, double** jacobians) const override {
        std::copy_n(values_, 2, residuals);
        if (jacobians != nullptr) {
            if (jacobians[0] != nullptr) std::copy_n(values_ + 2, 22, jacobians[0]);
            if (jacobians[1] != nullptr) std::copy_n(values_ + 24, 6, jacobians[1]);
        }
        return true;
    }

private:
    static constexpr double values_[30] = {1,  -1, 1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13,
                                           14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28};
};

const char* route_name(Route route) {
    return route == Route::autodiff ? "ceres autodiff (jets)"
           : route == Route::tapevm ? "tapevm"
                                    : "floor (constant block)";
}

/// One solve from the problem's initial values.
Result solve(const BaProblem& problem, const Arguments& a, Route route) {
    std::vector<double> cameras = problem.camera_values, points = problem.point_values;
    std::unique_ptr<tapevm::ceres::BaResiduals> adapter;
    ceres::Problem::Options problem_options;
    if (route == Route::tapevm) {
        adapter =
            std::make_unique<tapevm::ceres::BaResiduals>(tapevm::ceres::Options{a.device, a.threads, ""});
        problem_options.evaluation_callback = adapter.get();
    }
    Result result;
    {
        ceres::Problem ceres_problem(problem_options);
        for (std::size_t k = 0; k < problem.observations; ++k) {
            double* camera = cameras.data() + tapevm::ceres::camera_size * problem.observation_camera[k];
            double* point = points.data() + tapevm::ceres::point_size * problem.observation_point[k];
            const std::array<double, 2> feature{problem.features[2 * k], problem.features[2 * k + 1]};
            if (adapter)
                adapter->add_residual_block(ceres_problem, {camera, tapevm::ceres::camera_size},
                                            {point, tapevm::ceres::point_size}, problem.weights[k], feature);
            else if (route == Route::autodiff)
                ceres_problem.AddResidualBlock(
                    tapevm::ceres::make_autodiff_reprojection(problem.weights[k], feature), nullptr, camera,
                    point);
            else
                ceres_problem.AddResidualBlock(new ConstantBlock, nullptr, camera, point);
        }
        if (adapter) adapter->check_problem(ceres_problem);
        ceres::Solve(solver_options(a), &ceres_problem, &result.summary);
    }
    const auto& s = result.summary;
    if (adapter) {
        const tapevm::ceres::Timings& t = adapter->timings();
        const double calls = static_cast<double>(std::max<std::size_t>(1, t.value_calls + t.jacobian_calls));
        result.gather_per_evaluation = t.gather / calls;
        result.batched_per_evaluation =
            t.jacobians / static_cast<double>(std::max<std::size_t>(1, t.jacobian_calls));
    }
    result.evaluator = adapter ? "tapevm " + adapter->evaluator_name() : route_name(route);
    result.jacobian_per_evaluation =
        s.jacobian_evaluation_time_in_seconds / std::max(1, s.num_jacobian_evaluations);
    result.residual_per_evaluation =
        s.residual_evaluation_time_in_seconds / std::max(1, s.num_residual_evaluations);
    return result;
}

int run(const Arguments& a) {
    const BaProblem problem = tapevm::bench::adbench::replicate(tapevm::bench::adbench::read_ba_file(a.file));
    std::printf(
        "%s: %zu cameras, %zu points, %zu observations; %s, %d iterations at most, %u threads, %u repeats "
        "(routes alternating)\n",
        a.file.c_str(), problem.cameras, problem.points, problem.observations, a.solver.c_str(), a.iterations,
        a.threads, a.repeat);
    std::vector<Route> routes;
    if (a.route != "tapevm") routes.push_back(Route::autodiff);
    if (a.route != "autodiff") routes.push_back(Route::tapevm);
    if (a.route == "both") routes.push_back(Route::floor);
    struct Samples {
        std::vector<double> jacobian, residual, total, gather, batched;
        Result last;
    };
    std::vector<Samples> samples(routes.size());
    for (unsigned r = 0; r < a.repeat; ++r)
        for (std::size_t i = 0; i < routes.size(); ++i) {
            Samples& s = samples[i];
            s.last = solve(problem, a, routes[i]);
            s.jacobian.push_back(s.last.jacobian_per_evaluation);
            s.residual.push_back(s.last.residual_per_evaluation);
            s.total.push_back(s.last.summary.total_time_in_seconds);
            s.gather.push_back(s.last.gather_per_evaluation);
            s.batched.push_back(s.last.batched_per_evaluation);
        }
    std::printf("%-34s %13s %13s %5s %-15s %6s %12s %12s %9s %8s %10s %10s\n", "route", "initial cost",
                "final cost", "iter", "termination", "J evs", "J ms/ev med", "r ms/ev med", "solve s",
                "J ratio", "gather ms", "batch J ms");
    const double autodiff_jacobian =
        routes[0] == Route::autodiff ? tapevm::support::median(samples[0].jacobian) : 0;
    for (std::size_t i = 0; i < routes.size(); ++i) {
        const Samples& m = samples[i];
        const double j = tapevm::support::median(m.jacobian);
        const auto& s = m.last.summary;
        const std::string ratio = routes[i] != Route::autodiff && autodiff_jacobian > 0
                                      ? std::to_string(autodiff_jacobian / j).substr(0, 5) + "x"
                                      : "";
        std::printf(
            "%-34s %13.6e %13.6e %5d %-15s %6d %12.3f %12.3f %9.3f %8s %10.3f %10.3f\n",
            m.last.evaluator.c_str(), s.initial_cost, s.final_cost, static_cast<int>(s.iterations.size()) - 1,
            ceres::TerminationTypeToString(s.termination_type), s.num_jacobian_evaluations, 1e3 * j,
            1e3 * tapevm::support::median(m.residual), tapevm::support::median(m.total), ratio.c_str(),
            1e3 * tapevm::support::median(m.gather), 1e3 * tapevm::support::median(m.batched));
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    try {
        return run(parse(argc, argv));
    } catch (const std::exception& e) {
        std::fprintf(stderr, "tapevm-ceres-ba: %s\n%s", e.what(), usage);
        return 1;
    }
}
