// tapevm adbench: ADBench's bundle adjustment end to end (bench/adbench_run.hpp).
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <optional>
#include <string>
#include <thread>

#include <unistd.h>

#include "adbench_run.hpp"
#include "gmm_bench.hpp"
#include "arguments.hpp"
#include "backend.hpp"
#include "commands.hpp"

namespace tapevm::cli {
namespace {

constexpr std::string_view help =
    R"(usage: tapevm adbench ba FILE [--backend B] [--precision P] [--threads N] [--repeats R]
                        [--sample S] [--expected JSON] [--json OUT]
       tapevm adbench gmm D,K,N [--threads N] [--repeats R] [--json OUT]

Runs one ADBench bundle-adjustment instance (FILE: ADBench's format, one camera, point,
weight and feature replicated to n cameras, m points and p observations) as ADBench does:
the objective (every observation's reprojection error and weight error) by the native C++
template, and the sparse Jacobian (CSR: 3p rows, 11n + 3m + p columns, 31p nonzeros) by a
tapevm backend, the residual's 2x15 blocks of all observations in one batched call. Prints
the objective time, the Jacobian time (input assembly + batched Jacobian + CSR) and their
ratio, each the median of R runs after a warm-up, with the same threads for both.

Before timing, the warm-up's results are checked: the CSR structure exactly, S observations
spread over the instance against the reference VM (double), and for test.txt every value
against ADBench's expected outputs (rho <= 1e-8). A failed check exits with status 1.
bench/data/adbench/ holds ba1 and test.txt; the other instances are read from where you put them.

options:
  --backend B     cpu, reference, gpu, adolc or ceres (Ceres's AutoDiffCostFunction)
                  (default cpu)
  --precision P   f64 or f32 (default f64; adolc, ceres: f64 only)
  --threads N     threads of the objective, the assembly and the cpu and ceres backends; 0 = all
                  hardware threads (default 1)
  --repeats R     timed runs of each (default 5)
  --sample S      observations compared with the reference VM (default 64)
  --expected JSON ADBench's expected outputs to compare with (default: the
                  ba_expected_test_outputs.json beside test.txt or one folder up)
  --json OUT      also write the result as JSON

gmm: ADBench's Gaussian mixture model objective (d D, K components, N points, drawn as
ADBench's gmm-data-gen.py draws them) and its gradient with respect to alphas, means and icf:
tapevm::ReducedTape on the CPU VM (the point tape summed over the points, deterministically,
and the prior tape once), the hand-written f64 objective and gradient on the same threads,
and ADOL-C's reverse mode on the whole objective taped once (1 thread; instances whose tape
would pass 3e7 operations are left out). Prints each one's objective and gradient times and
their ratio (ADBench's figure), and checks every gradient against the hand-written one
(1e-9 relative, else exit status 1). bench/plot_gmm.py draws the JSON files of several runs.
)";

constexpr OptionSpec options[] = {{"--backend", true}, {"--precision", true}, {"--threads", true},
                                  {"--repeats", true}, {"--sample", true},    {"--expected", true},
                                  {"--json", true},    {"--help", false}};

// Opens --json OUT before anything is measured, so that a bad path fails first.
std::optional<std::ofstream> open_json(const Arguments& arguments) {
    const auto json_path = arguments.value("--json");
    if (!json_path) return std::nullopt;
    std::ofstream json{std::string(*json_path)};
    if (!json) throw Error("cannot write '" + std::string(*json_path) + "': " + std::strerror(errno));
    return json;
}

void close_json(std::optional<std::ofstream>& json, const Arguments& arguments) {
    if (!json) return;
    json->close();
    if (!*json) throw Error("cannot write '" + std::string(*arguments.value("--json")) + "'");
}

int run_gmm(const Arguments& arguments, std::ostream& out) {
    for (const char* option : {"--backend", "--precision", "--sample", "--expected"}) {
        if (arguments.has(option))
            throw UsageError(std::string("adbench gmm: ") + option + " is an option of ba");
    }
    const std::vector<std::size_t> size =
        parse_counts("gmm D,K,N", arguments.positional()[1], 3, 1, 100'000'000);
    unsigned threads =
        static_cast<unsigned>(parse_count("--threads", arguments.value("--threads").value_or("1"), 0, 1024));
    if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
    const unsigned repeats =
        static_cast<unsigned>(parse_count("--repeats", arguments.value("--repeats").value_or("5"), 1, 1000));
    std::optional<std::ofstream> json = open_json(arguments);
    const bench::GmmResult result = bench::measure_gmm(size[0], size[1], size[2], threads, repeats);
    bench::print_gmm(result, out);
    if (json) bench::write_gmm_json(result, *json);
    close_json(json, arguments);
    return result.passed() ? 0 : 1;
}

int run(std::span<const std::string_view> args, std::ostream& out, std::ostream& err) {
    const Arguments arguments = parse_arguments("adbench", args, options);
    if (arguments.answered_help(help, out)) return 0;
    arguments.expect_positional(2, 2, "a problem (ba or gmm) and an instance (ba: a file; gmm: D,K,N)");
    if (arguments.positional()[0] == "gmm") return run_gmm(arguments, out);
    if (arguments.positional()[0] != "ba")
        throw UsageError("adbench: unknown problem '" + std::string(arguments.positional()[0]) +
                         "' (known: ba, gmm)");
    bench::adbench::RunOptions run_options;
    if (const auto backend = arguments.value("--backend")) {
        if (*backend != "cpu" && *backend != "reference" && *backend != "gpu" && *backend != "adolc" &&
            *backend != "ceres")
            throw UsageError("adbench: unknown backend '" + std::string(*backend) +
                             "' (known: cpu, reference, gpu, adolc, ceres)");
        run_options.backend = std::string(*backend);
    }
    if (const auto precision = arguments.value("--precision")) {
        run_options.precision = parse_precision(*precision);
    }
    if (const auto threads = arguments.value("--threads")) {
        run_options.threads = static_cast<unsigned>(parse_count("--threads", *threads, 0, 1024));
        if (run_options.threads == 0) run_options.threads = std::max(1u, std::thread::hardware_concurrency());
    }
    if (const auto repeats = arguments.value("--repeats"))
        run_options.repeats = static_cast<unsigned>(parse_count("--repeats", *repeats, 1, 1000));
    if (const auto sample = arguments.value("--sample"))
        run_options.sample = parse_count("--sample", *sample, 1, 1 << 20);
    if (const auto expected = arguments.value("--expected"))
        run_options.expected_path = std::string(*expected);

    std::optional<std::ofstream> json = open_json(arguments);
    const bool terminal = &err == &std::cerr && isatty(STDERR_FILENO) == 1;
    bench::adbench::Progress progress(err, terminal);
    const bench::adbench::RunResult result =
        bench::adbench::run_adbench(std::string(arguments.positional()[1]), run_options, progress);
    progress.finish();
    bench::adbench::print_result(result, out);
    if (json) bench::adbench::write_result_json(result, *json);
    close_json(json, arguments);
    return result.passed() ? 0 : 1;
}

}  // namespace

Command adbench_command() {
    return {
        "adbench",
        "ADBench bundle adjustment (objective and sparse Jacobian) and GMM (objective and gradient) times, "
        "checked",
        help, run};
}

}  // namespace tapevm::cli
