// Seeded random expression trees for test_random_trees.cpp: the trees (a DAG of nodes of
// every kind the recording API reaches), their generator, a direct evaluation in plain double
// and <cmath> with the semantics op_table.py documents (written here independently of it), and
// their recording through the public API.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <random>
#include <set>
#include <span>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "tapevm/var.hpp"

namespace tapevm::test::random_trees {

inline constexpr double not_a_number = std::numeric_limits<double>::quiet_NaN();
inline constexpr double infinity = std::numeric_limits<double>::infinity();

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
inline constexpr int kind_count = static_cast<int>(Kind::branch) + 1;

inline int operand_count(Kind kind) {
    if (kind <= Kind::constant) return 0;
    if (kind <= Kind::pow_of_double) return 1;
    if (kind <= Kind::not_equal) return 2;
    if (kind <= Kind::select_value) return 3;
    return 4;
}

/// Kinds with a kink, a step or a jump (trees using them skip the finite-difference check).
inline bool is_non_smooth(Kind kind) {
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
inline std::vector<bool> reachable(const Tree& tree) {
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
inline bool has_shared_or_copied_nodes(const Tree& tree) {
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

inline bool is_smooth(const Tree& tree) {
    const std::vector<bool> used = reachable(tree);
    for (std::size_t k = 0; k < tree.nodes.size(); ++k) {
        if (used[k] && is_non_smooth(tree.nodes[k].kind)) return false;
    }
    return true;
}

// ---------------------------------------------------------------------------------------------
// Direct evaluation in double: the semantics op_table.py documents, written out by hand.

/// IEEE maximumNumber: a NaN operand is ignored; +0 is larger than -0.
inline double maximum_number(double a, double b) {
    if (std::isnan(a)) return b;
    if (std::isnan(b)) return a;
    if (a == b) return std::signbit(a) ? b : a;
    return a > b ? a : b;
}

/// IEEE minimumNumber: a NaN operand is ignored; -0 is smaller than +0.
inline double minimum_number(double a, double b) {
    if (std::isnan(a)) return b;
    if (std::isnan(b)) return a;
    if (a == b) return std::signbit(a) ? a : b;
    return a < b ? a : b;
}

/// -1, 0 or 1, keeping -0, +0 and NaN.
inline double sign_of(double x) {
    if (x > 0) return 1.0;
    if (x < 0) return -1.0;
    return x;
}

/// The comparison on doubles (a bool) or on Vars (a Cond, recorded).
template <class T> auto compare(Comparison comparison, const T& a, const T& b) -> decltype(a < b) {
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

inline double flag(bool value) { return value ? 1.0 : 0.0; }

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

/// The tree, one node a line (for failure messages).
inline std::string describe(const Tree& tree) {
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

}  // namespace tapevm::test::random_trees
