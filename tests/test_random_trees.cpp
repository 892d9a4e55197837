// Seeded random expression trees: record -> optimize -> save -> load -> evaluate equals a direct
// C++ evaluation of the same expression (plain double and <cmath>, with the semantics
// op_table.py documents, written here independently of it). The trees use every op the
// recording API reaches: the arithmetic operators (also as compound assignments), comparisons
// through Cond::var(), select() on comparisons and on values, C++ branches (guards), every
// <cmath> name of var.hpp including the pow overloads, fma, fmin/fmax, sign, fract and recip;
// inputs, parameters and shared subexpressions.
//
// On the same trees: forward-mode Jacobians equal reverse-mode ones (up to rounding scaled by
// the terms that cancel, see path_magnitudes), and on trees without step functions,
// comparisons, selects, branches, abs, fmod, min or max the gradient matches central finite
// differences wherever a difference can see it (see check_finite_differences).
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "detail/sweeps.hpp"
#include "tapevm/optimize.hpp"
#include "tapevm/tape_file.hpp"
#include "tapevm/var.hpp"
#include "test_util.hpp"

using namespace tapevm;

namespace {

constexpr double not_a_number = std::numeric_limits<double>::quiet_NaN();
constexpr double infinity = std::numeric_limits<double>::infinity();

// ---------------------------------------------------------------------------------------------
// The trees

// clang-format off
enum class Kind {
    // leaves
    input, param, constant,
    // one operand
    negate, unary_plus, sqrt, cbrt, exp, exp2, expm1, log, log2, log10, log1p, sin, cos, tan, asin, acos,
    atan, sinh, cosh, tanh, asinh, acosh, atanh, abs, fabs, floor, ceil, round, trunc, sign, fract, recip,
    pow_int,        // pow(x, int n)
    powi,           // powi(x, n)
    pow_double,     // pow(x, double c)
    pow_of_double,  // pow(double c, x)
    // two operands
    add, subtract, multiply, divide, add_assign, subtract_assign, multiply_assign, divide_assign, pow, atan2,
    hypot, fmod, fmax, fmin, max, min, less, less_equal, greater, greater_equal, equal, not_equal,
    // three operands
    fma,
    select_value,  // select(Cond(c), x, y): c != 0 (NaN counts true)
    // four operands: a and b compared with `comparison`, then x and y
    select_comparison,  // select(a OP b, x, y)
    branch,             // if (a OP b) x else y: a C++ branch, recorded as a guard
};
// clang-format on
constexpr int kind_count = static_cast<int>(Kind::branch) + 1;

int operand_count(Kind kind) {
    if (kind <= Kind::constant) return 0;
    if (kind <= Kind::pow_of_double) return 1;
    if (kind <= Kind::not_equal) return 2;
    if (kind <= Kind::select_value) return 3;
    return 4;
}

/// Kinds with a kink, a step or a jump (trees using them skip the finite-difference check).
bool is_non_smooth(Kind kind) {
    static const std::set<Kind> non_smooth = {Kind::abs,       Kind::fabs,          Kind::floor,
                                              Kind::ceil,      Kind::round,         Kind::trunc,
                                              Kind::sign,      Kind::fract,         Kind::fmod,
                                              Kind::fmax,      Kind::fmin,          Kind::max,
                                              Kind::min,       Kind::less,          Kind::less_equal,
                                              Kind::greater,   Kind::greater_equal, Kind::equal,
                                              Kind::not_equal, Kind::select_value,  Kind::select_comparison,
                                              Kind::branch};
    return non_smooth.count(kind) != 0;
}

/// The comparison of select_comparison and branch nodes.
enum class Comparison { less, less_equal, greater, greater_equal, equal, not_equal };

struct Node {
    Kind kind = Kind::constant;
    std::array<int, 4> operands = {-1, -1, -1, -1};  // node indices
    std::uint32_t index = 0;                         // input / param
    double constant = 0.0;                           // constant, pow_double, pow_of_double
    std::int32_t exponent = 0;                       // pow_int, powi
    Comparison comparison = Comparison::less;        // select_comparison, branch
};

/// A DAG of nodes (operands always earlier) with one or two roots, the outputs. Shared nodes
/// are recorded once (a Var used twice); copied nodes are recorded twice (merged by CSE).
struct Tree {
    std::uint32_t inputs = 0;
    std::uint32_t params = 0;
    std::vector<Node> nodes;
    std::vector<int> roots;
};

class TreeGenerator {
public:
    explicit TreeGenerator(std::uint64_t seed) : rng_(seed) {}

    std::mt19937_64& rng() { return rng_; }

    /// The next tree; with `smooth_only`, of kinds without steps, comparisons or kinks only.
    Tree next(bool smooth_only) {
        smooth_only_ = smooth_only;
        tree_ = Tree{};
        tree_.inputs = 3 + static_cast<std::uint32_t>(below(2));
        tree_.params = static_cast<std::uint32_t>(below(2));
        const std::size_t outputs = 1 + below(2);
        for (std::size_t k = 0; k < outputs; ++k) tree_.roots.push_back(grow(3 + static_cast<int>(below(4))));
        return std::move(tree_);
    }

private:
    std::size_t below(std::size_t n) { return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng_); }
    double unit() { return std::uniform_real_distribution<double>(0.0, 1.0)(rng_); }

    double random_constant() {
        static constexpr std::array<double, 9> specials = {0.0, -0.0, 1.0, 2.0, 0.5, -1.0, 3.0, -0.5, 10.0};
        if (unit() < 0.6) return specials[below(specials.size())];
        return std::round(std::uniform_real_distribution<double>(-3.0, 3.0)(rng_) * 1000) / 1000;
    }

    int add(Node node) {
        tree_.nodes.push_back(node);
        return static_cast<int>(tree_.nodes.size() - 1);
    }

    int leaf() {
        Node node;
        const double choice = unit();
        if (choice < 0.65 || (choice < 0.75 && tree_.params == 0)) {
            node.kind = Kind::input;
            node.index = static_cast<std::uint32_t>(below(tree_.inputs));
        } else if (choice < 0.75) {
            node.kind = Kind::param;
            node.index = static_cast<std::uint32_t>(below(tree_.params));
        } else {
            node.kind = Kind::constant;
            node.constant = random_constant();
        }
        return add(node);
    }

    // A node of height at most `depth` (a leaf has height 0).
    int grow(int depth) {
        if (!tree_.nodes.empty() && unit() < 0.08) {
            const int shared = static_cast<int>(below(tree_.nodes.size()));
            if (height(shared) <= depth) {
                if (unit() < 0.5) return shared;  // the same Var used again
                Node copy = tree_.nodes[static_cast<std::size_t>(shared)];
                return add(copy);  // the same expression recorded again
            }
        }
        if (depth == 0 || unit() < 0.08) return leaf();
        Node node;
        // Every operation alike, and C++ branches more often (there is one kind of them).
        do {
            node.kind =
                unit() < 0.05
                    ? Kind::branch
                    : static_cast<Kind>(static_cast<int>(Kind::negate) +
                                        static_cast<int>(below(kind_count - static_cast<int>(Kind::negate))));
        } while (smooth_only_ && is_non_smooth(node.kind));
        for (int k = 0; k < operand_count(node.kind); ++k)
            node.operands[static_cast<std::size_t>(k)] = grow(depth - 1);
        node.exponent = static_cast<std::int32_t>(below(8)) - 3;
        node.comparison = static_cast<Comparison>(below(6));
        if (node.kind == Kind::pow_double) {
            static constexpr std::array<double, 7> exponents = {0.5, 2.0, -1.5, 3.0, 0.0, 1.0, 1.0 / 3.0};
            node.constant = exponents[below(exponents.size())];
        } else if (node.kind == Kind::pow_of_double) {
            static constexpr std::array<double, 6> bases = {2.0, 0.5, 10.0, 0.0, -2.0, 1.0};
            node.constant = bases[below(bases.size())];
        }
        return add(node);
    }

    int height(int index) const {
        const Node& node = tree_.nodes[static_cast<std::size_t>(index)];
        int result = 0;
        for (int k = 0; k < operand_count(node.kind); ++k) {
            result = std::max(result, 1 + height(node.operands[static_cast<std::size_t>(k)]));
        }
        return result;
    }

    std::mt19937_64 rng_;
    Tree tree_;
    bool smooth_only_ = false;
};

/// Every node reachable from the roots (through both sides of a branch).
std::vector<bool> reachable(const Tree& tree) {
    std::vector<bool> seen(tree.nodes.size(), false);
    std::vector<int> stack(tree.roots.begin(), tree.roots.end());
    while (!stack.empty()) {
        const int index = stack.back();
        stack.pop_back();
        if (seen[static_cast<std::size_t>(index)]) continue;
        seen[static_cast<std::size_t>(index)] = true;
        const Node& node = tree.nodes[static_cast<std::size_t>(index)];
        for (int k = 0; k < operand_count(node.kind); ++k)
            stack.push_back(node.operands[static_cast<std::size_t>(k)]);
    }
    return seen;
}

/// True when some node is an operand twice (a shared Var) or two nodes are the same expression.
bool has_shared_or_copied_nodes(const Tree& tree) {
    std::set<int> operands;
    std::set<std::pair<int, std::array<int, 4>>> expressions;
    for (const Node& node : tree.nodes) {
        if (operand_count(node.kind) == 0) continue;
        if (!expressions.emplace(static_cast<int>(node.kind), node.operands).second) return true;
        for (int k = 0; k < operand_count(node.kind); ++k) {
            if (!operands.insert(node.operands[static_cast<std::size_t>(k)]).second) return true;
        }
    }
    return false;
}

bool is_smooth(const Tree& tree) {
    const std::vector<bool> used = reachable(tree);
    for (std::size_t k = 0; k < tree.nodes.size(); ++k) {
        if (used[k] && is_non_smooth(tree.nodes[k].kind)) return false;
    }
    return true;
}

// ---------------------------------------------------------------------------------------------
// Direct evaluation in double: the semantics op_table.py documents, written out by hand.

/// IEEE maximumNumber: a NaN operand is ignored; +0 is larger than -0.
double maximum_number(double a, double b) {
    if (std::isnan(a)) return b;
    if (std::isnan(b)) return a;
    if (a == b) return std::signbit(a) ? b : a;
    return a > b ? a : b;
}

/// IEEE minimumNumber: a NaN operand is ignored; -0 is smaller than +0.
double minimum_number(double a, double b) {
    if (std::isnan(a)) return b;
    if (std::isnan(b)) return a;
    if (a == b) return std::signbit(a) ? a : b;
    return a < b ? a : b;
}

/// -1, 0 or 1, keeping -0, +0 and NaN.
double sign_of(double x) {
    if (x > 0) return 1.0;
    if (x < 0) return -1.0;
    return x;
}

bool compare(Comparison comparison, double a, double b) {
    switch (comparison) {
        case Comparison::less: return a < b;
        case Comparison::less_equal: return a <= b;
        case Comparison::greater: return a > b;
        case Comparison::greater_equal: return a >= b;
        case Comparison::equal: return a == b;
        case Comparison::not_equal: return a != b;
    }
    return false;
}

double flag(bool value) { return value ? 1.0 : 0.0; }

/// Evaluates a tree at one point. Branch nodes follow `recorded` (the outcome of each branch
/// node while recording, by node index) when given, and note in `diverged` where the point
/// itself would branch otherwise; without `recorded` they branch freely and fill `outcomes`.
/// Also notes whether the point is irregular for a finite difference: a value computed was not
/// finite or beyond 1e+-100 (where partials such as -r*r for 1/x under- or overflow), or an atan2
/// was on its branch cut or at the origin (where it jumps).
class DirectEvaluation {
public:
    DirectEvaluation(const Tree& tree, std::span<const double> x, std::span<const double> p,
                     const std::vector<int>* recorded = nullptr)
        : tree_(tree), x_(x), p_(p), recorded_(recorded), outcomes_(tree.nodes.size(), -1) {}

    std::vector<double> outputs() {
        std::vector<double> values;
        for (int root : tree_.roots) values.push_back(at(root));
        return values;
    }
    double output(std::size_t k) { return at(tree_.roots[k]); }
    bool diverged() const { return diverged_; }
    const std::vector<int>& outcomes() const { return outcomes_; }
    bool irregular() const { return irregular_; }

private:
    double at(int index) {
        const double value = compute(index);
        const double magnitude = std::fabs(value);
        irregular_ =
            irregular_ || !std::isfinite(value) || magnitude > 1e100 || (value != 0.0 && magnitude < 1e-100);
        return value;
    }

    double compute(int index) {
        const Node& node = tree_.nodes[static_cast<std::size_t>(index)];
        auto operand = [&](int k) { return at(node.operands[static_cast<std::size_t>(k)]); };
        switch (node.kind) {
            case Kind::input: return x_[node.index];
            case Kind::param: return p_[node.index];
            case Kind::constant: return node.constant;
            case Kind::negate: return -operand(0);
            case Kind::unary_plus: return operand(0);
            case Kind::sqrt: return std::sqrt(operand(0));
            case Kind::cbrt: return std::cbrt(operand(0));
            case Kind::exp: return std::exp(operand(0));
            case Kind::exp2: return std::exp2(operand(0));
            case Kind::expm1: return std::expm1(operand(0));
            case Kind::log: return std::log(operand(0));
            case Kind::log2: return std::log2(operand(0));
            case Kind::log10: return std::log10(operand(0));
            case Kind::log1p: return std::log1p(operand(0));
            case Kind::sin: return std::sin(operand(0));
            case Kind::cos: return std::cos(operand(0));
            case Kind::tan: return std::tan(operand(0));
            case Kind::asin: return std::asin(operand(0));
            case Kind::acos: return std::acos(operand(0));
            case Kind::atan: return std::atan(operand(0));
            case Kind::sinh: return std::sinh(operand(0));
            case Kind::cosh: return std::cosh(operand(0));
            case Kind::tanh: return std::tanh(operand(0));
            case Kind::asinh: return std::asinh(operand(0));
            case Kind::acosh: return std::acosh(operand(0));
            case Kind::atanh: return std::atanh(operand(0));
            case Kind::abs:
            case Kind::fabs: return std::fabs(operand(0));
            case Kind::floor: return std::floor(operand(0));
            case Kind::ceil: return std::ceil(operand(0));
            case Kind::round: return std::round(operand(0));
            case Kind::trunc: return std::trunc(operand(0));
            case Kind::sign: return sign_of(operand(0));
            case Kind::fract: {
                const double a = operand(0);
                return a - std::trunc(a);
            }
            case Kind::recip: return 1.0 / operand(0);
            case Kind::pow_int:
            case Kind::powi: return std::pow(operand(0), static_cast<double>(node.exponent));
            case Kind::pow_double: return std::pow(operand(0), node.constant);
            case Kind::pow_of_double: return std::pow(node.constant, operand(0));
            case Kind::add:
            case Kind::add_assign: return operand(0) + operand(1);
            case Kind::subtract:
            case Kind::subtract_assign: return operand(0) - operand(1);
            case Kind::multiply:
            case Kind::multiply_assign: return operand(0) * operand(1);
            case Kind::divide:
            case Kind::divide_assign: return operand(0) / operand(1);
            case Kind::pow: return std::pow(operand(0), operand(1));
            case Kind::atan2: {
                const double y = operand(0), x = operand(1);
                irregular_ = irregular_ || (y == 0.0 && x <= 0.0);  // jumps (pi to -pi, or at 0)
                return std::atan2(y, x);
            }
            case Kind::hypot: return std::hypot(operand(0), operand(1));
            case Kind::fmod: return std::fmod(operand(0), operand(1));
            case Kind::fmax:
            case Kind::max: return maximum_number(operand(0), operand(1));
            case Kind::fmin:
            case Kind::min: return minimum_number(operand(0), operand(1));
            case Kind::less: return flag(operand(0) < operand(1));
            case Kind::less_equal: return flag(operand(0) <= operand(1));
            case Kind::greater: return flag(operand(0) > operand(1));
            case Kind::greater_equal: return flag(operand(0) >= operand(1));
            case Kind::equal: return flag(operand(0) == operand(1));
            case Kind::not_equal: return flag(operand(0) != operand(1));
            case Kind::fma: {
                const double a = operand(0), b = operand(1);
                return std::fma(a, b, operand(2));
            }
            case Kind::select_value: {
                const double condition = operand(0);
                const double if_true = operand(1);
                const double if_false = operand(2);
                return std::isnan(condition) || condition != 0.0 ? if_true : if_false;
            }
            case Kind::select_comparison: {
                const double a = operand(0), b = operand(1);
                const double if_true = operand(2);
                const double if_false = operand(3);
                return compare(node.comparison, a, b) ? if_true : if_false;
            }
            case Kind::branch: {
                const double a = operand(0), b = operand(1);
                const bool outcome = compare(node.comparison, a, b);
                bool taken = outcome;
                if (recorded_ != nullptr) {
                    taken = (*recorded_)[static_cast<std::size_t>(index)] == 1;
                    diverged_ = diverged_ || taken != outcome;
                }
                outcomes_[static_cast<std::size_t>(index)] = outcome ? 1 : 0;
                return taken ? operand(2) : operand(3);
            }
        }
        return not_a_number;
    }

    const Tree& tree_;
    std::span<const double> x_;
    std::span<const double> p_;
    const std::vector<int>* recorded_;
    std::vector<int> outcomes_;
    bool diverged_ = false;
    bool irregular_ = false;
};

// ---------------------------------------------------------------------------------------------
// Recording: the same tree through the public API, each node once (shared nodes reuse their Var).

Cond compare(Comparison comparison, const Var& a, const Var& b) {
    switch (comparison) {
        case Comparison::less: return a < b;
        case Comparison::less_equal: return a <= b;
        case Comparison::greater: return a > b;
        case Comparison::greater_equal: return a >= b;
        case Comparison::equal: return a == b;
        case Comparison::not_equal: return a != b;
    }
    return a < b;
}

class TreeRecorder {
public:
    TreeRecorder(const Tree& tree, std::span<const Var> x, std::span<const Var> p)
        : tree_(tree), x_(x), p_(p), memo_(tree.nodes.size()) {}

    std::vector<Var> outputs() {
        std::vector<Var> values;
        for (int root : tree_.roots) values.push_back(at(root));
        return values;
    }

private:
    Var at(int index) {
        auto& memo = memo_[static_cast<std::size_t>(index)];
        if (!memo) memo = record(tree_.nodes[static_cast<std::size_t>(index)]);
        return *memo;
    }

    Var record(const Node& node) {
        auto operand = [&](int k) { return at(node.operands[static_cast<std::size_t>(k)]); };
        switch (node.kind) {
            case Kind::input: return x_[node.index];
            case Kind::param: return p_[node.index];
            case Kind::constant: return Var(node.constant);
            case Kind::negate: return -operand(0);
            case Kind::unary_plus: return +operand(0);
            case Kind::sqrt: return sqrt(operand(0));
            case Kind::cbrt: return cbrt(operand(0));
            case Kind::exp: return exp(operand(0));
            case Kind::exp2: return exp2(operand(0));
            case Kind::expm1: return expm1(operand(0));
            case Kind::log: return log(operand(0));
            case Kind::log2: return log2(operand(0));
            case Kind::log10: return log10(operand(0));
            case Kind::log1p: return log1p(operand(0));
            case Kind::sin: return sin(operand(0));
            case Kind::cos: return cos(operand(0));
            case Kind::tan: return tan(operand(0));
            case Kind::asin: return asin(operand(0));
            case Kind::acos: return acos(operand(0));
            case Kind::atan: return atan(operand(0));
            case Kind::sinh: return sinh(operand(0));
            case Kind::cosh: return cosh(operand(0));
            case Kind::tanh: return tanh(operand(0));
            case Kind::asinh: return asinh(operand(0));
            case Kind::acosh: return acosh(operand(0));
            case Kind::atanh: return atanh(operand(0));
            case Kind::abs: return abs(operand(0));
            case Kind::fabs: return fabs(operand(0));
            case Kind::floor: return floor(operand(0));
            case Kind::ceil: return ceil(operand(0));
            case Kind::round: return round(operand(0));
            case Kind::trunc: return trunc(operand(0));
            case Kind::sign: return sign(operand(0));
            case Kind::fract: return fract(operand(0));
            case Kind::recip: return recip(operand(0));
            case Kind::pow_int: return pow(operand(0), static_cast<int>(node.exponent));
            case Kind::powi: return powi(operand(0), node.exponent);
            case Kind::pow_double: return pow(operand(0), node.constant);
            case Kind::pow_of_double: return pow(node.constant, operand(0));
            case Kind::add: return operand(0) + operand(1);
            case Kind::subtract: return operand(0) - operand(1);
            case Kind::multiply: return operand(0) * operand(1);
            case Kind::divide: return operand(0) / operand(1);
            case Kind::add_assign: {
                Var result = operand(0);
                result += operand(1);
                return result;
            }
            case Kind::subtract_assign: {
                Var result = operand(0);
                result -= operand(1);
                return result;
            }
            case Kind::multiply_assign: {
                Var result = operand(0);
                result *= operand(1);
                return result;
            }
            case Kind::divide_assign: {
                Var result = operand(0);
                result /= operand(1);
                return result;
            }
            case Kind::pow: return pow(operand(0), operand(1));
            case Kind::atan2: return atan2(operand(0), operand(1));
            case Kind::hypot: return hypot(operand(0), operand(1));
            case Kind::fmod: return fmod(operand(0), operand(1));
            case Kind::fmax: return fmax(operand(0), operand(1));
            case Kind::fmin: return fmin(operand(0), operand(1));
            case Kind::max: return max(operand(0), operand(1));
            case Kind::min: return min(operand(0), operand(1));
            case Kind::less: return (operand(0) < operand(1)).var();
            case Kind::less_equal: return (operand(0) <= operand(1)).var();
            case Kind::greater: return (operand(0) > operand(1)).var();
            case Kind::greater_equal: return (operand(0) >= operand(1)).var();
            case Kind::equal: return (operand(0) == operand(1)).var();
            case Kind::not_equal: return (operand(0) != operand(1)).var();
            case Kind::fma: return fma(operand(0), operand(1), operand(2));
            case Kind::select_value: return select(Cond(operand(0)), operand(1), operand(2));
            case Kind::select_comparison:
                return select(compare(node.comparison, operand(0), operand(1)), operand(2), operand(3));
            case Kind::branch:
                if (compare(node.comparison, operand(0), operand(1))) return operand(2);
                return operand(3);
        }
        return Var(not_a_number);
    }

    const Tree& tree_;
    std::span<const Var> x_;
    std::span<const Var> p_;
    std::vector<std::optional<Var>> memo_;
};

// ---------------------------------------------------------------------------------------------
// The pipeline and the checks

/// A tree recorded at a point, optimised, saved and loaded, with what the direct evaluation
/// saw while recording.
struct Pipeline {
    Tape recorded;
    Tape loaded;
    std::vector<double> recording_inputs;
    std::vector<double> recording_params;
    std::vector<int> outcomes;  // per node: the branch taken while recording (-1: not a branch)
};

Pipeline run_pipeline(const Tree& tree, std::vector<double> recording_inputs,
                      std::vector<double> recording_params) {
    Pipeline pipeline;
    pipeline.recorded = record(
        std::span<const double>(recording_inputs), std::span<const double>(recording_params),
        [&](std::span<const Var> x, std::span<const Var> p) { return TreeRecorder(tree, x, p).outputs(); });
    Tape optimised = pipeline.recorded;
    optimised.optimize();
    const std::vector<std::byte> bytes = to_bytes(optimised);
    pipeline.loaded = from_bytes(bytes);
    CHECK(pipeline.loaded == optimised);
    DirectEvaluation at_recording(tree, recording_inputs, recording_params);
    at_recording.outputs();
    pipeline.outcomes = at_recording.outcomes();
    pipeline.recording_inputs = std::move(recording_inputs);
    pipeline.recording_params = std::move(recording_params);
    return pipeline;
}

std::string describe(const Tree& tree) {
    std::ostringstream text;
    text << tree.inputs << " inputs, " << tree.params << " params, roots";
    for (int root : tree.roots) text << " " << root;
    text << "\n";
    for (std::size_t k = 0; k < tree.nodes.size(); ++k) {
        const Node& node = tree.nodes[k];
        text << "  n" << k << " = kind " << static_cast<int>(node.kind);
        for (int j = 0; j < operand_count(node.kind); ++j)
            text << " n" << node.operands[static_cast<std::size_t>(j)];
        if (node.kind == Kind::input || node.kind == Kind::param) text << " #" << node.index;
        if (node.kind == Kind::constant || node.kind == Kind::pow_double ||
            node.kind == Kind::pow_of_double) {
            text << " c=" << node.constant;
        }
        if (node.kind == Kind::pow_int || node.kind == Kind::powi) text << " n=" << node.exponent;
        if (node.kind == Kind::select_comparison || node.kind == Kind::branch) {
            text << " cmp=" << static_cast<int>(node.comparison);
        }
        text << "\n";
    }
    return text.str();
}

std::string show_point(std::span<const double> x, std::span<const double> p) {
    std::ostringstream text;
    text.precision(17);
    text << "x =";
    for (double v : x) text << " " << v;
    if (!p.empty()) text << ", p =";
    for (double v : p) text << " " << v;
    return text.str();
}

/// Evaluation points for a tree: the recording point, points near it, ordinary points (half of
/// them positive, where logs and roots are defined) and points with special coordinates.
struct TreePoints {
    std::size_t count = 0;
    std::vector<double> inputs;  // [count][n_inputs]
    std::vector<double> params;  // [count][n_params]

    std::span<const double> inputs_of(std::size_t point, std::size_t n) const {
        return std::span<const double>(inputs).subspan(point * n, n);
    }
    std::span<const double> params_of(std::size_t point, std::size_t n) const {
        return std::span<const double>(params).subspan(point * n, n);
    }
};

TreePoints make_points(std::mt19937_64& rng, const Pipeline& pipeline) {
    static constexpr std::array<double, 9> specials = {0.0, -0.0, infinity, -infinity, not_a_number,
                                                       1.0, -1.0, 0.5,      2.0};
    std::uniform_real_distribution<double> ordinary(-2.0, 2.0);
    std::uniform_real_distribution<double> positive(0.1, 2.0);
    std::normal_distribution<double> nudge(0.0, 1e-3);
    std::uniform_int_distribution<std::size_t> pick(0, specials.size() - 1);
    std::bernoulli_distribution special(0.4);
    TreePoints points;
    auto add = [&](auto&& coordinate) {
        for (double centre : pipeline.recording_inputs) points.inputs.push_back(coordinate(centre));
        for (double centre : pipeline.recording_params) points.params.push_back(coordinate(centre));
        ++points.count;
    };
    add([](double centre) { return centre; });
    for (int k = 0; k < 2; ++k) add([&](double centre) { return centre + nudge(rng); });
    for (int k = 0; k < 2; ++k) add([&](double) { return ordinary(rng); });
    for (int k = 0; k < 2; ++k) add([&](double) { return positive(rng); });
    for (int k = 0; k < 2; ++k)
        add([&](double) { return special(rng) ? specials[pick(rng)] : ordinary(rng); });
    return points;
}

/// The tape's value and the direct evaluation's agree: both NaN, or zeros of the same sign
/// (the semantics fix the sign of every zero result), or within 1e-12 of max(1, |value|).
bool same_result(double tape, double direct) {
    if (tape == 0.0 && direct == 0.0) return std::signbit(tape) == std::signbit(direct);
    return test::close(tape, direct, 1e-12);
}

/// The Jacobian with every partial replaced by its magnitude: entry (k, i) is the sum over all
/// paths from input i to output k of |product of partials|, the scale of the terms forward and
/// reverse mode add up in different orders (so their difference is bounded by a few ulps of
/// it, however much the terms cancel).
std::vector<double> path_magnitudes(const Tape& tape, std::span<const double> x, std::span<const double> p) {
    using Math = detail::ScalarMath<double>;
    using Sweeps = detail::Sweeps<Math, double>;
    const std::size_t n = tape.input_count();
    const std::size_t m = tape.output_count();
    std::vector<double> values(tape.slot_count()), tangents(tape.slot_count());
    Sweeps::evaluate(tape, x, p, values);
    std::vector<double> magnitudes(m * n);
    for (std::size_t i = 0; i < n; ++i) {
        for (std::size_t slot = 0; slot < tape.slot_count(); ++slot) {
            const Instruction& ins = tape.instructions()[slot];
            if (ins.op == Op::Input) {
                tangents[slot] = ins.a == i ? 1.0 : 0.0;
                continue;
            }
            double partials[3];
            const std::uint32_t count = Sweeps::partials(ins, slot, values, partials);
            const std::uint32_t operands[3] = {ins.a, ins.b, ins.c};
            double sum = 0.0;
            for (std::uint32_t k = 0; k < count; ++k) {
                sum += detail::contribution<Math>(std::fabs(partials[k]), tangents[operands[k]]);
            }
            tangents[slot] = sum;
        }
        for (std::size_t k = 0; k < m; ++k) magnitudes[k * n + i] = tangents[tape.outputs()[k]];
    }
    return magnitudes;
}

/// What the tape says about output k at (x, p) that limits a finite-difference check.
struct Sensitivity {
    /// A first-order bound on the rounding error of the output: 4 eps times the sum over slots
    /// of |d output / d slot| * |value of slot| (each result rounded once, library functions
    /// within a few ulps). A central difference with step h is off by up to this / h. It sees
    /// the ill-conditioning a magnitude alone misses: acosh(cosh(t)) for t near 0 amplifies the
    /// rounding of cosh(t) near 1 by 1 / sqrt(2 (cosh(t) - 1)).
    double rounding_error = 0.0;
    /// A partial on the way to the output is not finite: the chain rule meets inf * 0 (cbrt(x)^3
    /// at x = 0 has the derivative 1, AD gives 0 by the zero-absorbs rule).
    bool infinite_partial = false;
};

Sensitivity sensitivity(const Tape& tape, std::span<const double> x, std::span<const double> p,
                        std::size_t k) {
    using Sweeps = detail::Sweeps<detail::ScalarMath<double>, double>;
    const std::size_t slots = tape.slot_count();
    std::vector<double> values(slots), adjoints(slots, 0.0);
    Sweeps::evaluate(tape, x, p, values);
    adjoints[tape.outputs()[k]] = 1.0;
    Sweeps::reverse(tape, values, adjoints);
    Sensitivity result;
    std::vector<bool> feeds_output(slots, false);
    feeds_output[tape.outputs()[k]] = true;
    for (std::size_t slot = slots; slot-- > 0;) {
        if (adjoints[slot] != 0.0)
            result.rounding_error += std::fabs(adjoints[slot]) * std::fabs(values[slot]);
        if (!feeds_output[slot]) continue;
        const Instruction& ins = tape.instructions()[slot];
        double partials[3];
        const std::uint32_t count = Sweeps::partials(ins, slot, values, partials);
        const std::uint32_t operands[3] = {ins.a, ins.b, ins.c};
        for (std::uint32_t j = 0; j < count; ++j) {
            result.infinite_partial = result.infinite_partial || !std::isfinite(partials[j]);
            feeds_output[operands[j]] = true;
        }
    }
    result.rounding_error *= 4 * std::numeric_limits<double>::epsilon();
    return result;
}

/// Counts of the finite-difference check.
struct FiniteDifferenceCounts {
    std::size_t checked = 0;
    std::size_t irregular = 0;   // DirectEvaluation::irregular, or Sensitivity::infinite_partial
    std::size_t unresolved = 0;  // rounding noise, curvature, or two step sizes disagreeing
};

/// Checks `gradient` (d output k / d x from the tape) against central differences of the
/// direct evaluation at (x, p), with steps 1e-6 and 1e-5 (times max(1, |x_i|)). Skips a
/// partial where the point or a perturbed one is irregular or a partial on the way is not
/// finite (Sensitivity), where the rounding noise of the
/// difference (rounding_error / step) exceeds 1e-3, where the step does not resolve the
/// curvature (step * |d2 f / dx_i2| > 1e-3 max(1, |derivative|), e.g. cos(cosh(t)) with
/// cosh(t) near 1e17) or where the two steps disagree beyond 1e-6 plus noise. Otherwise the
/// partial must match within 1e-6 of max(1, |partial|) plus the noise.
void check_finite_differences(const Tree& tree, const reference::Vm& vm, std::span<const double> x,
                              std::span<const double> p, std::size_t k, std::span<const double> gradient,
                              FiniteDifferenceCounts& counts) {
    const std::size_t n = x.size();
    DirectEvaluation at_point(tree, x, p);
    at_point.output(k);
    if (at_point.irregular()) {
        counts.irregular += n;
        return;
    }
    const Sensitivity tape_says = sensitivity(vm.tape(), x, p, k);
    if (tape_says.infinite_partial) {
        counts.irregular += n;
        return;
    }
    const double error = tape_says.rounding_error;
    bool perturbed_irregular = false;
    auto f = [&](std::span<const double> at) {
        DirectEvaluation evaluation(tree, at, p);
        const double value = evaluation.output(k);
        perturbed_irregular = perturbed_irregular || evaluation.irregular();
        return value;
    };
    std::vector<double> cotangents(vm.tape().output_count(), 0.0);
    cotangents[k] = 1.0;
    for (std::size_t i = 0; i < n; ++i) {
        INFO("d output " << k << " / d x" << i << " at " << show_point(x, p));
        perturbed_irregular = false;
        const std::vector<double> at(x.begin(), x.end());
        const double coarse = test::central_difference(f, at, i, 1e-5);
        const double fine = test::central_difference(f, at, i, 1e-6);
        const double derivative = gradient[i];
        if (perturbed_irregular || !std::isfinite(error) || !std::isfinite(derivative) ||
            !std::isfinite(coarse) || !std::isfinite(fine)) {
            ++counts.irregular;
            continue;
        }
        std::vector<double> direction(n, 0.0), curvature(n);
        direction[i] = 1.0;
        vm.hvp(single_point<double>(x, p), std::span<const double>(cotangents),
               std::span<const double>(direction), std::span<double>(curvature));
        const double step = 1e-6 * std::fmax(1.0, std::fabs(x[i]));
        const double noise = error / step;
        const double scale = std::fmax(1.0, std::fabs(fine));
        if (noise > 1e-3 * scale ||
            !(step * std::fabs(curvature[i]) <= 1e-3 * std::fmax(1.0, std::fabs(derivative))) ||
            std::fabs(coarse - fine) > 1e-6 * scale + 2 * noise) {
            ++counts.unresolved;
            continue;
        }
        ++counts.checked;
        CHECK_MESSAGE(
            std::fabs(derivative - fine) <= 1e-6 * std::fmax(1.0, std::fabs(derivative)) + noise,
            "tape " << derivative << ", finite difference " << fine << ", rounding noise " << noise);
    }
}

/// Counts of the forward-against-reverse comparison. Entries agree when equal or both NaN, or
/// within 1e-10 of max(1, |value|), or within 1e-12 of their path magnitude (terms that cancel:
/// f(x) = log10(1 / (cbrt(x) - pow(x, 1/3))) has partials near 1e32 whose products nearly
/// cancel). Where the path magnitude is not finite, an infinite partial makes the order of the
/// sums matter (inf - inf is NaN in one order, 0 in the other): those are counted, not failed.
struct ModeAgreement {
    std::size_t compared = 0;
    std::size_t ill_conditioned = 0;   // agreeing only within the path magnitude
    std::size_t non_finite_order = 0;  // disagreeing where the path magnitude is not finite
};

}  // namespace

TEST_CASE("random trees: record, optimize, save, load and evaluate equal direct evaluation") {
    constexpr int tree_count = 1000;
    TreeGenerator generator(0x5eed7ee5ULL);
    std::set<Op> ops_seen;
    std::size_t points_checked = 0, values_checked = 0, values_bitwise = 0, diverged_points = 0;
    std::size_t guarded_trees = 0, shared_or_copied = 0, recorded_instructions = 0, loaded_instructions = 0;
    ModeAgreement modes;
    FiniteDifferenceCounts fd;
    std::size_t fd_trees = 0;
    std::uniform_real_distribution<double> coordinate(-2.0, 2.0);

    for (int t = 0; t < tree_count; ++t) {
        CAPTURE(t);
        const Tree tree = generator.next(t % 4 == 3);
        INFO("tree: " << describe(tree));
        std::vector<double> recording_inputs(tree.inputs), recording_params(tree.params);
        for (double& v : recording_inputs) v = coordinate(generator.rng());
        for (double& v : recording_params) v = coordinate(generator.rng());
        const Pipeline pipeline = run_pipeline(tree, recording_inputs, recording_params);
        INFO("recorded tape:\n" << pipeline.recorded.dump());
        INFO("loaded tape:\n" << pipeline.loaded.dump());
        for (const Instruction& ins : pipeline.recorded.instructions()) ops_seen.insert(ins.op);
        recorded_instructions += pipeline.recorded.instruction_count();
        loaded_instructions += pipeline.loaded.instruction_count();
        guarded_trees += pipeline.loaded.guard_count() > 0;
        shared_or_copied += has_shared_or_copied_nodes(tree);

        const TreePoints points = make_points(generator.rng(), pipeline);
        const std::size_t n = tree.inputs;
        const std::size_t m = tree.roots.size();
        const std::size_t np = tree.params;
        const reference::Vm vm(pipeline.loaded);
        const Batch<double> batch{points.count, points.inputs, points.params};
        std::vector<double> outputs(points.count * m);
        const Report report = vm.forward(batch, std::span<double>(outputs));

        // Values and diverged points against the direct evaluation.
        std::vector<std::size_t> expected_diverged;
        for (std::size_t point = 0; point < points.count; ++point) {
            const auto x = points.inputs_of(point, n);
            const auto p = points.params_of(point, np);
            INFO("point " << point << ": " << show_point(x, p));
            DirectEvaluation direct(tree, x, p, &pipeline.outcomes);
            const std::vector<double> expected = direct.outputs();
            if (direct.diverged()) expected_diverged.push_back(point);
            for (std::size_t k = 0; k < m; ++k) {
                const double actual = outputs[point * m + k];
                CHECK_MESSAGE(same_result(actual, expected[k]),
                              "output " << k << ": tape " << actual << ", direct " << expected[k]);
                values_bitwise += test::same_value(actual, expected[k]);
                ++values_checked;
            }
            ++points_checked;
        }
        CHECK(report.diverged == expected_diverged);
        // Point 0 is the recording point: it keeps its branches.
        CHECK((report.diverged.empty() || report.diverged[0] != 0));
        diverged_points += report.diverged.size();

        // Forward mode against reverse mode.
        std::vector<double> forward(points.count * m * n), reverse(points.count * m * n);
        CHECK(vm.jacobian(batch, std::span<double>(forward), JacobianMode::forward).diverged ==
              report.diverged);
        CHECK(vm.jacobian(batch, std::span<double>(reverse), JacobianMode::reverse).diverged ==
              report.diverged);
        for (std::size_t point = 0; point < points.count; ++point) {
            std::vector<double> magnitudes;  // computed where needed
            for (std::size_t entry = 0; entry < m * n; ++entry) {
                const double f = forward[point * m * n + entry];
                const double r = reverse[point * m * n + entry];
                ++modes.compared;
                if (test::close(f, r, 1e-10)) continue;
                if (magnitudes.empty()) {
                    magnitudes = path_magnitudes(pipeline.loaded, points.inputs_of(point, n),
                                                 points.params_of(point, np));
                }
                const double scale = magnitudes[entry];
                if (!std::isfinite(scale)) {
                    ++modes.non_finite_order;
                    continue;
                }
                ++modes.ill_conditioned;
                CHECK_MESSAGE(std::fabs(f - r) <= 1e-12 * scale,
                              "Jacobian entry " << entry << " at point " << point << ": forward " << f
                                                << ", reverse " << r << ", path magnitude " << scale);
            }
        }

        // The gradient against finite differences of the direct evaluation, on smooth trees.
        if (!is_smooth(tree)) continue;
        ++fd_trees;
        for (std::size_t point = 0; point < points.count; ++point) {
            for (std::size_t k = 0; k < m; ++k) {
                const auto gradient = std::span<const double>(reverse).subspan((point * m + k) * n, n);
                check_finite_differences(tree, vm, points.inputs_of(point, n), points.params_of(point, np), k,
                                         gradient, fd);
            }
        }
    }

    MESSAGE(tree_count << " trees (" << guarded_trees << " with guards, " << shared_or_copied
                       << " with shared or copied nodes; " << recorded_instructions
                       << " instructions recorded, " << loaded_instructions << " after optimize): "
                       << points_checked << " points, " << values_checked << " values (" << values_bitwise
                       << " bit for bit), " << diverged_points << " diverged points; " << modes.compared
                       << " Jacobian entries forward against reverse (" << modes.ill_conditioned
                       << " agreeing within their path magnitude only, " << modes.non_finite_order
                       << " differing through infinite partials); " << fd_trees << " smooth trees, "
                       << fd.checked << " partials checked against finite differences, " << fd.irregular
                       << " skipped at irregular points, " << fd.unresolved
                       << " as not resolved by the steps");

    // Not vacuous: the generator reaches every op, branches and shared nodes, and most checks run.
    for (std::uint32_t number = 0; number < op_count; ++number) {
        const Op op = static_cast<Op>(number);
        CHECK_MESSAGE(ops_seen.count(op) == 1, "no random tree recorded ", info(op).name);
    }
    CHECK(values_bitwise >= values_checked * 999 / 1000);
    CHECK(guarded_trees > tree_count / 10);
    CHECK(shared_or_copied > tree_count / 10);
    CHECK(diverged_points > 50);
    CHECK(modes.compared > 10000);
    CHECK(modes.non_finite_order < modes.compared / 100);
    CHECK(fd_trees > tree_count / 4);
    CHECK(fd.checked > 3000);
    CHECK(fd.checked > 10 * fd.unresolved);
}
