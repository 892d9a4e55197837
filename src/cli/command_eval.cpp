// tapevm eval: evaluate a tape (values, gradients, Jacobians or Hessians) at the points of a CSV file.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "arguments.hpp"
#include "backend.hpp"
#include "commands.hpp"
#include "csv.hpp"
#include "files.hpp"
#include "tapevm/hessian.hpp"
#include "tapevm/reduced.hpp"
#include "tapevm/sparse.hpp"
#include "tapevm/sparse_hessian.hpp"

namespace tapevm::cli {
namespace {

constexpr std::string_view help =
    R"(usage: tapevm eval FILE --inputs X.csv --mode forward|gradient|jacobian|hessian|sparse_jacobian|
                   sparse_hessian|reduced_gradient|reduced_hessian
                   [--params P.csv] [--backend reference|cpu|gpu|compiled] [--precision f64|f32]
                   [--threads N] [--differentiate all|K,K,...] [--weights W.csv]

Evaluates the tape in FILE at every point of X.csv (one point per line, the tape's inputs
comma separated) and prints one result per line: the outputs (forward), the gradient of
the single output (gradient), the Jacobian, row-major (jacobian) or the Hessian of the single
output, row-major and symmetric (hessian: one Hessian-vector product per input), or the
Jacobian's structural nonzeros in CSR order (sparse_jacobian: one Jacobian-vector product per
colour of a ColPack column colouring; stderr says the pattern's size and colours, and
`tapevm inspect FILE --sparsity` prints the pattern), or the Hessian's structural nonzeros of
the single output in CSR order (sparse_hessian: one Hessian-vector product per colour of a
star colouring). reduced_gradient prints one line: F = sum_p w_p f(x_p; theta) and its
gradient with respect to the shared parameters theta named by --differentiate, summed over
the points deterministically (tapevm/reduced.hpp; w_p = 1 without --weights); reduced_hessian
prints the Hessian of that sum in theta, one row per line (one Hessian-vector product per
differentiated parameter). f64 results are printed
as %.17g, f32 results as %.9g. Points whose recorded branches do not hold are named in a
warning on stderr; their results follow the recorded branch.

options:
  --inputs X.csv     the points, one per line
  --mode MODE        forward, gradient, hessian or sparse_hessian (tapes with one output),
                     jacobian or sparse_jacobian
  --params P.csv     the tape's parameters: one line per point, or one line for all points
  --backend NAME     reference (default), cpu (the SIMD CPU VM), gpu (the GPU interpreter)
                     or compiled (the GPU VM running kernels compiled from the tape)
  --precision NAME   f64 (default) or f32
  --threads N        threads of the cpu backend (default 0: all hardware threads)
  --differentiate    reduced_gradient, reduced_hessian: the parameters differentiated, 0-based
                     and comma separated, in the order printed (default all)
  --weights W.csv    reduced_gradient, reduced_hessian: one weight per point, one per line
)";

constexpr OptionSpec options[] = {{"--inputs", true},        {"--mode", true},      {"--params", true},
                                  {"--backend", true},       {"--precision", true}, {"--threads", true},
                                  {"--differentiate", true}, {"--weights", true},   {"--help", false}};

enum class Mode {
    forward,
    gradient,
    jacobian,
    hessian,
    sparse_jacobian,
    sparse_hessian,
    reduced_gradient,
    reduced_hessian
};

Mode parse_mode(std::string_view name) {
    if (name == "forward") return Mode::forward;
    if (name == "gradient") return Mode::gradient;
    if (name == "jacobian") return Mode::jacobian;
    if (name == "hessian") return Mode::hessian;
    if (name == "sparse_jacobian") return Mode::sparse_jacobian;
    if (name == "sparse_hessian") return Mode::sparse_hessian;
    if (name == "reduced_gradient") return Mode::reduced_gradient;
    if (name == "reduced_hessian") return Mode::reduced_hessian;
    throw UsageError("unknown mode '" + std::string(name) +
                     "' (known: forward, gradient, jacobian, hessian, sparse_jacobian, sparse_hessian, "
                     "reduced_gradient, reduced_hessian)");
}

// What eval was asked to do, checked before anything is read.
struct Request {
    std::string_view tape_path;
    std::string_view inputs_path;
    std::optional<std::string_view> params_path;
    std::optional<std::string_view> weights_path;
    std::optional<std::string_view> differentiate;
    Mode mode = Mode::forward;
    Backend backend = Backend::reference;
    Precision precision = Precision::f64;
    BackendOptions backend_options;
};

std::size_t result_width(const Tape& tape, Mode mode, const SparseJacobianPlan& plan,
                         const SparseHessianPlan& hessian_plan) {
    switch (mode) {
        case Mode::forward: return tape.output_count();
        case Mode::gradient: return tape.input_count();
        case Mode::jacobian: return std::size_t{tape.output_count()} * tape.input_count();
        case Mode::hessian: return std::size_t{tape.input_count()} * tape.input_count();
        case Mode::sparse_jacobian: return plan.pattern.nonzeros();
        case Mode::sparse_hessian: return hessian_plan.pattern.nonzeros();
        case Mode::reduced_gradient:
        case Mode::reduced_hessian: return 0;  // evaluate_reduced
    }
    return 0;
}

// Reads the parameters: one row shared by every point, or one row per point.
template <class Real>
std::vector<Real> read_params(const Tape& tape, const Request& request, std::size_t points) {
    if (tape.param_count() == 0) {
        if (request.params_path) {
            throw UsageError("--params given, but the tape has no parameters");
        }
        return {};
    }
    if (!request.params_path) {
        throw UsageError("the tape has " + std::to_string(tape.param_count()) +
                         " parameters: give them with --params P.csv");
    }
    const std::string_view path = *request.params_path;
    NumberTable<Real> params = parse_csv<Real>(read_whole_file(path), tape.param_count(), path);
    if (params.rows() != 1 && params.rows() != points) {
        throw CsvError(std::string(path) + ": " + std::to_string(params.rows()) +
                       " lines of parameters; expected 1 (shared by all points) or " +
                       std::to_string(points) + " (one per point)");
    }
    return std::move(params.values);
}

// One line: "warning: K of N points take another branch than recorded, at input lines ...".
void warn_diverged(std::ostream& err, const std::vector<std::size_t>& diverged,
                   const std::vector<std::size_t>& line_numbers) {
    constexpr std::size_t listed = 10;
    const std::size_t count = diverged.size();
    err << "warning: " << count << " of " << line_numbers.size()
        << (count == 1 ? " point takes" : " points take") << " another branch than recorded, at input line"
        << (count == 1 ? " " : "s ");
    for (std::size_t k = 0; k < std::min(count, listed); ++k) {
        err << (k > 0 ? ", " : "") << line_numbers[diverged[k]];
    }
    if (count > listed) err << " and " << count - listed << " more";
    err << " (results follow the recorded branch)\n";
}

// The parameters --differentiate names: "all" (or nothing) or 0-based indices, comma separated.
std::vector<std::uint32_t> differentiated_params(const Tape& tape, std::optional<std::string_view> text) {
    std::vector<std::uint32_t> indices;
    if (!text || *text == "all") {
        for (std::uint32_t k = 0; k < tape.param_count(); ++k) indices.push_back(k);
        return indices;
    }
    std::string_view rest = *text;
    while (true) {
        const std::size_t comma = rest.find(',');
        const std::size_t index = parse_count("--differentiate", rest.substr(0, comma), 0,
                                              std::max<std::size_t>(tape.param_count(), 1) - 1);
        if (tape.param_count() == 0)
            throw UsageError("--differentiate names parameter " + std::to_string(index) +
                             ", but the tape has none");
        if (std::find(indices.begin(), indices.end(), index) != indices.end())
            throw UsageError("--differentiate names parameter " + std::to_string(index) + " twice");
        indices.push_back(static_cast<std::uint32_t>(index));
        if (comma == std::string_view::npos) break;
        rest = rest.substr(comma + 1);
    }
    return indices;
}

// --mode reduced_gradient: one line, F then dF/dtheta.
template <class Real>
int evaluate_reduced(const Tape& tape, const Request& request, const NumberTable<Real>& inputs,
                     const std::vector<Real>& params, std::ostream& out, std::ostream& err) {
    const std::size_t points = inputs.rows();
    if (params.size() != tape.param_count())
        throw UsageError("reduced_gradient needs one line of parameters shared by every point; " +
                         std::string(*request.params_path) + " has one per point");
    std::vector<Real> weights;
    if (request.weights_path) {
        const std::string_view path = *request.weights_path;
        NumberTable<Real> table = parse_csv<Real>(read_whole_file(path), 1, path);
        if (table.rows() != points)
            throw CsvError(std::string(path) + ": " + std::to_string(table.rows()) + " weights; expected " +
                           std::to_string(points) + " (one per point of " + std::string(request.inputs_path) +
                           ")");
        weights = std::move(table.values);
    }
    const ReducedTape reduced(tape, differentiated_params(tape, request.differentiate));
    const std::unique_ptr<Evaluator> vm =
        make_evaluator(request.backend, reduced.tape(), request.backend_options);
    const Batch<Real> batch{points, inputs.values, params};
    if (request.mode == Mode::reduced_hessian) {
        const std::size_t d = reduced.differentiated().size();
        std::vector<Real> hessian(d * d);
        const Report report =
            reduced.hessian(*vm, batch, std::span<Real>(hessian), std::span<const Real>(weights));
        std::string text;
        for (std::size_t i = 0; i < d; ++i) append_csv_line(text, hessian.data() + i * d, d);
        out << text;
        err << "reduced Hessian: " << points << " points, " << d << " of " << tape.param_count()
            << " parameters differentiated (" << d << " Hessian-vector products)\n";
        if (!report.all_guards_hold()) warn_diverged(err, report.diverged, inputs.line_numbers);
        return 0;
    }
    const ReducedGradient<Real> result = reduced.gradient(*vm, batch, std::span<const Real>(weights));
    std::vector<Real> line;
    line.push_back(result.value);
    line.insert(line.end(), result.gradient.begin(), result.gradient.end());
    std::string text;
    append_csv_line(text, line.data(), line.size());
    out << text;
    err << "reduced gradient: " << points << " points, " << result.gradient.size() << " of "
        << tape.param_count() << " parameters differentiated (the line: the sum, then its gradient)\n";
    if (!result.report.all_guards_hold()) warn_diverged(err, result.report.diverged, inputs.line_numbers);
    return 0;
}

template <class Real>
int evaluate(const Tape& tape, const Request& request, std::ostream& out, std::ostream& err) {
    const NumberTable<Real> inputs =
        parse_csv<Real>(read_whole_file(request.inputs_path), tape.input_count(), request.inputs_path);
    if (inputs.rows() == 0) {
        throw CsvError(std::string(request.inputs_path) + ": no input points (the file is empty)");
    }
    const std::size_t points = inputs.rows();
    const std::vector<Real> params = read_params<Real>(tape, request, points);
    if (request.mode == Mode::reduced_gradient || request.mode == Mode::reduced_hessian)
        return evaluate_reduced(tape, request, inputs, params, out, err);
    if (request.weights_path || request.differentiate)
        throw UsageError(
            "--weights and --differentiate are options of --mode reduced_gradient and reduced_hessian");
    const Batch<Real> batch{points, inputs.values, params};

    SparseJacobianPlan plan;
    if (request.mode == Mode::sparse_jacobian) {
        plan = plan_sparse_jacobian(tape);
        err << "sparse Jacobian: " << plan.pattern.rows << " x " << plan.pattern.cols << ", "
            << plan.pattern.nonzeros() << " structural nonzeros, " << plan.colouring.colours
            << " colours (jvps per point, instead of " << plan.pattern.cols << ")\n";
    }
    SparseHessianPlan hessian_plan;
    if (request.mode == Mode::sparse_hessian) {
        hessian_plan = plan_sparse_hessian(tape);
        err << "sparse Hessian: " << hessian_plan.pattern.rows << " x " << hessian_plan.pattern.cols << ", "
            << hessian_plan.pattern.nonzeros() << " structural nonzeros, " << hessian_plan.colouring.colours
            << " colours (hvps per point, instead of " << hessian_plan.pattern.cols << ")\n";
    }
    const std::size_t width = result_width(tape, request.mode, plan, hessian_plan);
    std::vector<Real> results(points * width);
    const std::unique_ptr<Evaluator> vm = make_evaluator(request.backend, tape, request.backend_options);
    Report report;
    switch (request.mode) {
        case Mode::forward: report = vm->forward(batch, std::span<Real>(results)); break;
        case Mode::gradient: report = vm->gradient(batch, std::span<Real>(results)); break;
        case Mode::jacobian: report = vm->jacobian(batch, std::span<Real>(results)); break;
        case Mode::hessian:
            report = hessian(*vm, batch, std::span<const Real>(), std::span<Real>(results));
            break;
        case Mode::sparse_jacobian:
            report = sparse_jacobian(*vm, batch, plan, std::span<Real>(results));
            break;
        case Mode::sparse_hessian:
            report =
                sparse_hessian(*vm, batch, std::span<const Real>(), hessian_plan, std::span<Real>(results));
            break;
        case Mode::reduced_gradient:
        case Mode::reduced_hessian: break;  // evaluate_reduced
    }

    std::string text;
    text.reserve(points * (width * 24 + 1));
    for (std::size_t point = 0; point < points; ++point) {
        append_csv_line(text, results.data() + point * width, width);
    }
    out << text;
    if (!report.all_guards_hold()) warn_diverged(err, report.diverged, inputs.line_numbers);
    return 0;
}

int run(std::span<const std::string_view> args, std::ostream& out, std::ostream& err) {
    const Arguments arguments = parse_arguments("eval", args, options);
    if (arguments.answered_help(help, out)) return 0;
    arguments.expect_positional(1, 1, "a tape file: tapevm eval FILE --inputs X.csv --mode MODE");
    Request request;
    request.tape_path = arguments.positional().front();
    request.inputs_path = arguments.required("--inputs", "X.csv (the points, one per line)");
    request.mode = parse_mode(arguments.required(
        "--mode",
        "forward, gradient, jacobian, hessian, sparse_jacobian, sparse_hessian or reduced_gradient"));
    request.params_path = arguments.value("--params");
    request.weights_path = arguments.value("--weights");
    request.differentiate = arguments.value("--differentiate");
    request.backend = parse_backend(arguments.value("--backend").value_or("reference"));
    request.precision = parse_precision(arguments.value("--precision").value_or("f64"));
    if (const auto threads = arguments.value("--threads")) {
        request.backend_options.threads = static_cast<unsigned>(parse_count("--threads", *threads, 0, 1024));
    }

    const Tape tape = read_tape_file(request.tape_path);
    if ((request.mode == Mode::gradient || request.mode == Mode::hessian ||
         request.mode == Mode::sparse_hessian || request.mode == Mode::reduced_gradient ||
         request.mode == Mode::reduced_hessian) &&
        tape.output_count() != 1) {
        throw UsageError(std::string("mode ") +
                         (request.mode == Mode::gradient           ? "gradient"
                          : request.mode == Mode::hessian          ? "hessian"
                          : request.mode == Mode::reduced_gradient ? "reduced_gradient"
                          : request.mode == Mode::reduced_hessian  ? "reduced_hessian"
                                                                   : "sparse_hessian") +
                         " needs a tape with 1 output; " + std::string(request.tape_path) + " has " +
                         std::to_string(tape.output_count()) + " (use --mode jacobian)");
    }
    switch (request.precision) {
        case Precision::f64: return evaluate<double>(tape, request, out, err);
        case Precision::f32: return evaluate<float>(tape, request, out, err);
    }
    return 0;
}

}  // namespace

Command eval_command() {
    return {"eval",
            "evaluate a tape's values, gradients, Jacobians (dense or sparse), Hessians or gradients summed "
            "over the points of a CSV file",
            help, run};
}

}  // namespace tapevm::cli
