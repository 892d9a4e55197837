// tapevm inspect: print a .tape file's counts and instructions, the GLSL the tape compiler
// generates for it, or what the GPU VM's compiled engine would run for each mode.
#include <cstdio>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "arguments.hpp"
#include "backend.hpp"
#include "commands.hpp"
#include "files.hpp"
#include "tapevm/gpu.hpp"
#include "tapevm/sparse.hpp"
#include "tapevm/sparse_hessian.hpp"

namespace tapevm::cli {
namespace {

constexpr std::string_view help = R"(usage: tapevm inspect FILE
       tapevm inspect FILE --glsl MODE [--precision f32|f64]
       tapevm inspect FILE --plan [--mode MODE] [--precision f32|f64] [--compile] [--device D]
       tapevm inspect FILE --sparsity

Prints the counts of the .tape file FILE (inputs, parameters, outputs, instructions,
constants, guards) and its instructions, one per line, then its outputs and guards.

options:
  --glsl MODE       print instead the GLSL compute kernel the tape compiler generates for
                    MODE: forward, gradient, jacobian, jvp, vjp, hvp or value_and_gradient
  --plan            print instead, for every mode, what the GPU VM's compiled engine runs:
                    the compiled kernel and its size, or the interpreter and why (a kernel
                    over TAPEVM_GPU_COMPILE_LIMIT statements falls back to the interpreter)
  --compile         with --plan: also compile each kernel on the GPU device and print what
                    it took (generating the GLSL, glslang, the driver's pipeline) and whether
                    the SPIR-V came from the cache
  --sparsity        print instead the Jacobian's structural sparsity pattern (one line per
                    output: its input columns) and the column colouring's size, what
                    `tapevm eval --mode sparse_jacobian` evaluates, then the same line for the
                    Hessian of the weighted outputs (sparse_hessian: star colouring)
  --mode MODE       with --plan: that mode only (e.g. to time one kernel of a large tape)
  --device D        the device for --compile (index or name substring)
  --precision NAME  f32 (default) or f64
)";

constexpr OptionSpec options[] = {{"--glsl", true},      {"--plan", false},  {"--compile", false},
                                  {"--precision", true}, {"--device", true}, {"--mode", true},
                                  {"--sparsity", false}, {"--help", false}};

constexpr std::string_view modes[] = {"forward", "gradient", "jacobian",          "jvp",
                                      "vjp",     "hvp",      "value_and_gradient"};

std::string milliseconds(double seconds) {
    char text[32];
    std::snprintf(text, sizeof text, "%.2f ms", seconds * 1e3);
    return text;
}

// Whether the tape has `mode` (gradient and value_and_gradient need one output).
bool has_mode(const Tape& tape, std::string_view mode) {
    return (mode != "gradient" && mode != "value_and_gradient") || tape.output_count() == 1;
}

// The modes --plan reports: `only` (checked by check_mode) where given, else every mode the tape has.
std::vector<std::string_view> planned_modes(const Tape& tape, std::optional<std::string_view> only) {
    if (only) return {*only};
    std::vector<std::string_view> chosen;
    for (const std::string_view mode : modes)
        if (has_mode(tape, mode)) chosen.push_back(mode);
    return chosen;
}

template <class Real>
void print_compiled_plans(const Tape& tape, std::span<const std::string_view> chosen,
                          const std::string& device, std::ostream& out) {
    gpu::Options options;
    options.device = device;
    options.engine = gpu::Engine::compiled;
    const gpu::Vm vm(tape, options);
    out << "device: " << vm.device().name << "\n";
    for (const std::string_view mode : chosen) {
        const gpu::CompilePlan plan = vm.compile_plan<Real>(mode);
        out << mode << ": ";
        if (!plan.compiled) {
            out << "interpreter (" << plan.reason << ")\n";
            continue;
        }
        out << "compiled, " << plan.statements << " statements, " << plan.library_calls
            << " math-library calls; total " << milliseconds(plan.total_s) << ": lookup "
            << milliseconds(plan.spirv_load_s);
        if (plan.pipeline_from_identifier)
            out << " (module identifier)";
        else if (plan.spirv_from_cache)
            out << " (SPIR-V cached)";
        else
            out << ", generate " << milliseconds(plan.generate_s) << ", glslang "
                << milliseconds(plan.glslang_s);
        out << ", pipeline " << milliseconds(plan.pipeline_s);
        if (plan.pipeline_reused) {
            out << " (made earlier in this process)\n";
            continue;
        }
        out << " (pipeline cache " << milliseconds(plan.pipeline_cache_s) << ", driver "
            << milliseconds(plan.pipeline_create_s);
        if (plan.driver_cache_hit) out << (*plan.driver_cache_hit ? " hit" : " miss");
        if (plan.pipeline_store_s > 0) out << ", store " << milliseconds(plan.pipeline_store_s);
        out << ")\n";
    }
}

// The Jacobian's pattern, a line per output ("output 3: 2 3 4"), then its size and colours.
void print_sparsity(const Tape& tape, std::ostream& out) {
    const SparseJacobianPlan plan = plan_sparse_jacobian(tape);
    const SparsityPattern& pattern = plan.pattern;
    for (std::size_t row = 0; row < pattern.rows; ++row) {
        out << "output " << row << ":";
        for (std::size_t k = pattern.row_starts[row]; k < pattern.row_starts[row + 1]; ++k)
            out << ' ' << pattern.columns[k];
        out << '\n';
    }
    out << "sparse Jacobian: " << pattern.rows << " x " << pattern.cols << ", " << pattern.nonzeros()
        << " structural nonzeros, " << plan.colouring.colours << " colours (jvps per point, instead of "
        << pattern.cols << ")\n";
    const SparseHessianPlan hessian = plan_sparse_hessian(tape);
    out << "sparse Hessian: " << hessian.pattern.rows << " x " << hessian.pattern.cols << ", "
        << hessian.pattern.nonzeros() << " structural nonzeros, " << hessian.colouring.colours
        << " colours (hvps per point, instead of " << hessian.pattern.cols << ")\n";
}

// Throws UsageError unless `mode` is a mode the tape has.
void check_mode(const Tape& tape, std::string_view mode) {
    bool known = false;
    std::string names;
    for (const std::string_view name : modes) {
        known = known || name == mode;
        names += (names.empty() ? "" : ", ") + std::string(name);
    }
    if (!known) throw UsageError("inspect: unknown mode '" + std::string(mode) + "' (known: " + names + ")");
    if (!has_mode(tape, mode))
        throw UsageError("inspect: " + std::string(mode) + " needs a tape with one output; this one has " +
                         std::to_string(tape.output_count()));
}

int run(std::span<const std::string_view> args, std::ostream& out, std::ostream&) {
    const Arguments arguments = parse_arguments("inspect", args, options);
    if (arguments.answered_help(help, out)) return 0;
    arguments.expect_positional(1, 1, "a tape file: tapevm inspect FILE");
    const bool double_precision =
        parse_precision(arguments.value("--precision").value_or("f32")) == Precision::f64;
    if (arguments.has("--compile") && !arguments.has("--plan"))
        throw UsageError("inspect: --compile needs --plan");
    if (arguments.has("--device") && !arguments.has("--compile"))
        throw UsageError("inspect: --device needs --compile");
    if (arguments.has("--glsl") && arguments.has("--plan"))
        throw UsageError("inspect: give --glsl or --plan, not both");
    if (arguments.has("--mode") && !arguments.has("--plan"))
        throw UsageError("inspect: --mode needs --plan (--glsl takes its mode itself)");
    if (arguments.has("--sparsity") && (arguments.has("--glsl") || arguments.has("--plan")))
        throw UsageError("inspect: give --sparsity alone");
    const Tape tape = read_tape_file(arguments.positional().front());
    if (arguments.has("--sparsity")) {
        print_sparsity(tape, out);
        return 0;
    }
    if (const auto mode = arguments.value("--glsl")) {
        check_mode(tape, *mode);
        out << gpu::generated_glsl(tape, *mode, double_precision);
        return 0;
    }
    if (arguments.has("--plan")) {
        const auto only = arguments.value("--mode");
        if (only) check_mode(tape, *only);
        const std::vector<std::string_view> chosen = planned_modes(tape, only);
        if (arguments.has("--compile")) {
            const std::string device(arguments.value("--device").value_or(""));
            if (double_precision)
                print_compiled_plans<double>(tape, chosen, device, out);
            else
                print_compiled_plans<float>(tape, chosen, device, out);
            return 0;
        }
        out << "compiled engine on a GPU, " << (double_precision ? "f64" : "f32")
            << " (a kernel over TAPEVM_GPU_COMPILE_LIMIT statements, default 20000, runs the interpreter):\n";
        for (const std::string_view mode : chosen) {
            const gpu::CompilePlan plan = gpu::planned_compile(tape, mode, double_precision);
            out << mode << ": "
                << (plan.compiled ? "compiled, " + std::to_string(plan.statements) + " statements, " +
                                        std::to_string(plan.library_calls) + " math-library calls"
                                  : "interpreter (" + plan.reason + ")")
                << "\n";
        }
        return 0;
    }
    out << tape.dump();
    return 0;
}

}  // namespace

Command inspect_command() {
    return {"inspect", "print a .tape file's counts and instructions, generated GLSL or compile plan", help,
            run};
}

}  // namespace tapevm::cli
