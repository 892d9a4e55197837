// tapevm-bench bench (`tapevm bench`): the benchmark driver of bench/ (bench/README.md) behind a
// command line.
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "arguments.hpp"
#include "backends.hpp"
#include "bench.hpp"
#include "commands.hpp"
#include "first_result.hpp"
#include "inputs_file.hpp"
#include "gmm_bench.hpp"
#include "sparse_bench.hpp"
#include "tapevm/tape_file.hpp"
#include "workloads.hpp"

namespace tapevm::cli {
namespace {

constexpr std::string_view help =
    R"(usage: tapevm bench [--workload W] [--mode M] [--backend B] [--precision P]
                    [--threads N] [--points N] [--repeats R] [--json FILE]
       tapevm bench --list
       tapevm bench --first-result [--cold] [--workload W] [--mode M] [--precision P] [--points N]
       tapevm bench --nn [OPTIONS]   the nn kernels (tapevm help bench-nn)
       tapevm bench --sparse N [--threads T] [--repeats R]
       tapevm bench --gmm D,K,N [--threads T] [--repeats R]
       tapevm bench --workload W --points N [--mode M] --write-inputs FILE
       tapevm bench --workload W --write-tape FILE

Times fixed workloads on every backend and compares them with a native compiled version
of the same function measured in the same run. Each option takes a comma-separated list
and every combination is measured. Before a combination is timed, its results on 64 of
its points are checked against the reference VM (in double, at the same points): a failed
check stops the run with exit status 1, and nothing unchecked is ever timed.

Each record is a checked run, warm-up runs for at least 0.5 s (a GPU raises its clocks), then R
timed runs (steady clock) of which the median counts.
The table gives ns per point, ns per instruction per lane (ns/point divided by the tape's
instruction count) and the ratio to native-simd's primal with the same workload,
precision, threads and points (always measured: it is the baseline).

options:
  --workload W    ba, rosenbrock16, trig16, mlp, mlp16 or all (default all)
  --mode M        auto (ba: jacobian, the others: gradient), forward, gradient, jacobian
                  or all (default auto); native backends always evaluate the primal
  --backend B     native-simd, native-scalar, cpu, gpu, gpu-e2e, compiled, compiled-e2e,
                  reference, adolc or all (default all: those in this build)
  --precision P   f64, f32 or all (default f64)
  --threads N     worker threads; 0 = all hardware threads (default 1)
  --points N      batch size (default 65536)
  --repeats R     timed runs per record (default 5)
  --json FILE     also write the records as JSON
  --list          the workloads and backends, and which backends this build has
  --first-result  time to first result instead: for each workload, mode, precision and points,
                  a new gpu::Vm with the tape compiler (Engine::compiled) building its kernel in
                  the background (CompileWait::background), from the Vm's construction to the
                  first call's results on the host (that call runs on the interpreter unless the
                  kernel was cached), and to the end of the first call on the compiled kernel;
                  the device is opened before; first results checked against the reference VM
  --cold          with --first-result: build every kernel from nothing (TAPEVM_CACHE_DIR set to
                  a new empty folder, removed at the end); default: the user's kernel cache
  --sparse N      the sparse Jacobian of the 1-D Bratu residual on N unknowns instead:
                  tapevm::sparse_jacobian on the CPU VM (pattern, ColPack colouring, one
                  jvp per colour, on --threads threads: default 1, 0 all cores) against
                  ADOL-C's fov_forward with the same seed matrix (Debian's ADOL-C is built
                  without ColPack, which its sparse_jac needs), checked against each other
  --gmm D,K,N     ADBench's GMM objective and its gradient instead (d D, K components, N
                  points, drawn as ADBench draws them): tapevm::ReducedTape on the CPU VM
                  (the point tape summed over the points, the prior tape once) against the
                  hand-written f64 objective and gradient on the same threads and, on small
                  instances, ADOL-C's reverse mode on the whole objective; gradient /
                  objective time ratios (ADBench's figure), gradients checked against the
                  hand-written one
  --write-inputs FILE
                  write one workload's N points (and the reference VM's results at 64 of
                  them) for bench/jax_bench.py, instead of measuring (bench/README.md)
  --write-tape FILE
                  write one workload's tape as a .tape file (for tapevm inspect, e.g. the
                  tape compiler's compile times: inspect FILE --plan --compile)
)";

constexpr OptionSpec options[] = {
    {"--workload", true},      {"--mode", true},         {"--backend", true},    {"--precision", true},
    {"--threads", true},       {"--points", true},       {"--repeats", true},    {"--json", true},
    {"--list", false},         {"--write-inputs", true}, {"--write-tape", true}, {"--help", false},
    {"--first-result", false}, {"--cold", false},        {"--sparse", true},     {"--gmm", true}};

void list(std::ostream& out) {
    out << "workloads:\n";
    for (const std::string_view name : bench::workload_names()) {
        const bench::Workload& workload = bench::workload(name);
        out << "  " << name << std::string(14 - name.size(), ' ') << workload.description << " ("
            << workload.tape.instruction_count() << " instructions, "
            << bench::mode_name(workload.default_mode) << ")\n";
    }
    out << "backends:\n";
    for (const bench::BackendInfo& info : bench::backends()) {
        out << "  " << info.name << std::string(14 - info.name.size(), ' ')
            << (info.available() ? info.description : info.unavailable) << '\n';
    }
}

// `--first-result`: time to first result (first_result.hpp), with its own cache folder when cold.
int first_result(const bench::Config& config, bool cold, std::ostream& out, std::ostream& err) {
    std::filesystem::path folder;
    if (cold) {
        std::string pattern =
            (std::filesystem::temp_directory_path() / "tapevm_first_result_XXXXXX").string();
        if (mkdtemp(pattern.data()) == nullptr)
            throw Error("cannot make a temporary cache folder: " + std::string(std::strerror(errno)));
        folder = pattern;
        setenv("TAPEVM_CACHE_DIR", folder.c_str(), 1);
    }
    const auto remove_folder = [&] {
        std::error_code ignored;
        if (!folder.empty()) std::filesystem::remove_all(folder, ignored);
    };
    double device_open_s = 0;
    std::string device;
    std::vector<bench::FirstResultRecord> records;
    try {
        records = bench::measure_first_results(config, device_open_s, device, err);
    } catch (const bench::CheckFailed& failed) {
        remove_folder();
        err << "error: " << failed.what() << '\n';
        return 1;
    } catch (...) {
        remove_folder();
        throw;
    }
    remove_folder();
    bench::print_first_results(records, device_open_s, device, cold, out);
    return 0;
}

int run(std::span<const std::string_view> args, std::ostream& out, std::ostream& err) {
    // `tapevm bench --nn` is handled by tapevm (command_bench_program.cpp): the nn kernels'
    // benchmark is tapevm's bench-nn, not part of this program.
    const Arguments arguments = parse_arguments("bench", args, options);
    if (arguments.answered_help(help, out)) return 0;
    arguments.expect_positional(0, 0, "no arguments");
    if (arguments.has("--list")) {
        list(out);
        return 0;
    }
    if (const auto unknowns = arguments.value("--sparse")) {
        const std::size_t n = parse_count("--sparse", *unknowns, 1, 100'000'000);
        const unsigned threads = static_cast<unsigned>(
            parse_count("--threads", arguments.value("--threads").value_or("1"), 0, 1024));
        const unsigned repeats = static_cast<unsigned>(
            parse_count("--repeats", arguments.value("--repeats").value_or("20"), 1, 100000));
        return bench::run_sparse_bench(n, threads, repeats, out);
    }
    if (const auto sizes = arguments.value("--gmm")) {
        const std::vector<std::size_t> size = parse_counts("--gmm", *sizes, 3, 1, 100'000'000);
        const unsigned threads = static_cast<unsigned>(
            parse_count("--threads", arguments.value("--threads").value_or("1"), 0, 1024));
        const unsigned repeats = static_cast<unsigned>(
            parse_count("--repeats", arguments.value("--repeats").value_or("5"), 1, 100000));
        return bench::run_gmm_bench(size[0], size[1], size[2], threads, repeats, out);
    }
    bench::ConfigText text;
    const auto take = [&](std::string_view name, std::string_view& field) {
        if (const auto value = arguments.value(name)) field = *value;
    };
    take("--workload", text.workload);
    take("--mode", text.mode);
    take("--backend", text.backend);
    take("--precision", text.precision);
    take("--threads", text.threads);
    take("--points", text.points);
    take("--repeats", text.repeats);
    const bench::Config config = bench::parse_config(text);
    if (const auto path = arguments.value("--write-tape")) {
        if (config.workloads.size() != 1) throw UsageError("--write-tape needs one --workload");
        const bench::Workload& workload = bench::workload(config.workloads.front());
        save_file(workload.tape, std::string(*path));
        out << "wrote the tape of " << workload.name << " (" << workload.tape.instruction_count()
            << " instructions) to " << *path << '\n';
        return 0;
    }
    if (const auto path = arguments.value("--write-inputs")) {
        if (config.workloads.size() != 1 || config.points.size() != 1 || config.modes.size() > 1)
            throw UsageError("--write-inputs needs one --workload, one --points and at most one --mode");
        const bench::Workload& workload = bench::workload(config.workloads.front());
        const bench::Mode mode = config.modes.empty() ? workload.default_mode : config.modes.front();
        bench::write_inputs_file(std::string(*path), workload, mode, config.points.front());
        out << "wrote " << config.points.front() << " points of " << workload.name << " ("
            << bench::mode_name(mode) << ") to " << *path << '\n';
        return 0;
    }

    if (arguments.has("--first-result")) return first_result(config, arguments.has("--cold"), out, err);
    if (arguments.has("--cold")) throw UsageError("--cold needs --first-result");

    // Open the JSON file first, so a bad path fails before minutes of measuring.
    std::ofstream json;
    const auto json_path = arguments.value("--json");
    if (json_path) {
        json.open(std::string(*json_path));
        if (!json) throw Error("cannot write '" + std::string(*json_path) + "': " + std::strerror(errno));
    }
    std::vector<bench::Record> records;
    try {
        records = bench::run_bench(config, err);
    } catch (const bench::CheckFailed& failed) {
        err << "error: " << failed.what() << '\n';
        return 1;
    }
    bench::print_table(records, out);
    if (json_path) {
        bench::write_json(records, json);
        json.close();
        if (!json) throw Error("cannot write '" + std::string(*json_path) + "'");
    }
    return 0;
}

}  // namespace

Command bench_command() {
    return {"bench", "time the workloads on every backend against native code, checked against the reference",
            help, run};
}

}  // namespace tapevm::cli
