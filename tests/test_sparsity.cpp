// Jacobian and Hessian sparsity patterns (tapevm/sparse.hpp, tapevm/sparse_hessian.hpp):
// exact on hand-built tapes (ops whose partials vanish add nothing, dead code costs nothing,
// repeated operands), never missing an entry the reference VM finds nonzero on the example
// tapes, and the column colourings (distance-2, star).
#include <random>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "tapevm/error.hpp"
#include "tapevm/examples.hpp"
#include "tapevm/reference.hpp"
#include "tapevm/hessian.hpp"
#include "tapevm/sparse.hpp"
#include "tapevm/sparse_hessian.hpp"
#include "tapevm/var.hpp"

namespace tapevm::test {
namespace {

SparsityPattern csr(std::size_t cols, const std::vector<std::vector<std::uint32_t>>& rows) {
    SparsityPattern pattern;
    pattern.rows = rows.size();
    pattern.cols = cols;
    for (const auto& row : rows) {
        pattern.columns.insert(pattern.columns.end(), row.begin(), row.end());
        pattern.row_starts.push_back(pattern.columns.size());
    }
    return pattern;
}

TEST_CASE("the pattern follows operands with nonzero partials only") {
    const Tape tape = record(7, [](std::span<const Var> x) {
        const Var unused = exp(x[6]) * x[5];  // dead code: in no output
        (void)unused;
        return std::vector<Var>{
            select(x[2] > x[3], x[1] * x[1], sin(x[0])),  // the condition adds nothing
            x[0] * x[4] + floor(x[3]),                    // floor's partial is 0
            x[4] * x[4],                                  // one operand twice
            x[2],                                         // an input as an output
            Var(2.5) + sign(x[1]),                        // constant and step: an empty row
            x[0] + x[1] + x[2] + x[3] + x[4],             // a chain over five inputs
        };
    });
    const SparsityPattern pattern = jacobian_sparsity(tape);
    CHECK(pattern == csr(7, {{0, 1}, {0, 4}, {4}, {2}, {}, {0, 1, 2, 3, 4}}));
    CHECK(pattern.contains(1, 4));
    CHECK_FALSE(pattern.contains(1, 3));
    CHECK_FALSE(pattern.contains(9, 0));
}

TEST_CASE("the pattern holds every entry the reference VM finds nonzero on the example tapes") {
    std::mt19937_64 rng(5);
    std::uniform_real_distribution<double> value(-1.5, 1.5);
    for (const examples::ExampleInfo& example : examples::example_list()) {
        const std::string name(example.name);
        CAPTURE(name);
        const Tape tape = examples::example_tape(name);
        const SparsityPattern pattern = jacobian_sparsity(tape);
        CHECK(pattern.rows == tape.output_count());
        CHECK(pattern.cols == tape.input_count());
        const std::size_t points = 4, n = tape.input_count(), m = tape.output_count();
        std::vector<double> inputs(points * n), params(tape.param_count());
        for (double& v : inputs) v = value(rng);
        for (double& v : params) v = value(rng);
        const Evaluation<double> dense = reference::Vm(tape).jacobian(Batch<double>{points, inputs, params});
        std::size_t missing = 0, seen_nonzero = 0;
        for (std::size_t p = 0; p < points; ++p)
            for (std::size_t i = 0; i < m; ++i)
                for (std::size_t j = 0; j < n; ++j) {
                    if (dense.values[(p * m + i) * n + j] == 0.0) continue;
                    ++seen_nonzero;
                    missing += pattern.contains(i, j) ? 0 : 1;
                }
        CHECK(missing == 0);
        MESSAGE(name << ": " << pattern.nonzeros() << " pattern entries of " << m * n << ", " << seen_nonzero
                     << " nonzero entries over " << points << " points");
    }
}

TEST_CASE("distance-2 colourings: checked, and ColPack's where tapevm has it") {
    // Rows {0,1}, {1,2}, {3}: columns 0 and 2 may share a colour, 1 may not.
    const SparsityPattern pattern = csr(5, {{0, 1}, {1, 2}, {3}});
    CHECK(is_distance2_colouring(pattern, ColumnColouring{2, {0, 1, 0, 0, 0}}));
    CHECK_FALSE(is_distance2_colouring(pattern, ColumnColouring{2, {0, 0, 1, 0, 0}}));
    CHECK_FALSE(is_distance2_colouring(pattern, ColumnColouring{2, {0, 1, 0, 0}}));     // a column short
    CHECK_FALSE(is_distance2_colouring(pattern, ColumnColouring{1, {0, 1, 0, 0, 0}}));  // colour 1 of 1
#if TAPEVM_HAVE_COLPACK
    const ColumnColouring colouring = colour_columns(pattern);
    CHECK(is_distance2_colouring(pattern, colouring));
    CHECK(colouring.colours == 2);
    // A dense row needs a colour per column; no entries at all, one colour.
    CHECK(colour_columns(csr(4, {{0, 1, 2, 3}})).colours == 4);
    CHECK(colour_columns(csr(3, {{}, {}})).colours == 1);
    // A banded pattern: bandwidth 2 on each side, five colours however long.
    std::vector<std::vector<std::uint32_t>> band;
    for (std::uint32_t i = 0; i < 300; ++i) {
        band.emplace_back();
        for (std::uint32_t j = i >= 2 ? i - 2 : 0; j <= i + 2 && j < 300; ++j) band.back().push_back(j);
    }
    const SparsityPattern banded = csr(300, band);
    const ColumnColouring band_colours = colour_columns(banded);
    CHECK(is_distance2_colouring(banded, band_colours));
    CHECK(band_colours.colours == 5);
    // Malformed patterns are errors, not reads out of bounds.
    SparsityPattern bad = pattern;
    bad.columns[0] = 7;
    CHECK_THROWS_AS(colour_columns(bad), Error);
    bad = pattern;
    bad.row_starts.pop_back();
    CHECK_THROWS_AS(colour_columns(bad), ShapeError);
#else
    CHECK_THROWS_AS(colour_columns(pattern), Unsupported);
#endif
}

TEST_CASE("the Hessian pattern: second-order operand pairs of the instructions that reach an output") {
    const Tape tape = record(9, [](std::span<const Var> x) {
        const Var dead = exp(x[7]) * x[8];  // in no output: no pairs
        (void)dead;
        return x[0] * x[1]                       // (0, 1), and (0, 0), (1, 1): Mul's partials read both
               + exp(x[2])                       // (2, 2)
               + x[3] * 3.0                      // (3, 3): spurious, the table has no second partials
               + select(x[4] > 0.0, x[5], x[6])  // piecewise linear: nothing
               + sin(x[5] + x[6]);               // (5, 5), (5, 6), (6, 5), (6, 6)
    });
    const SparsityPattern pattern = hessian_sparsity(tape);
    CHECK(pattern == csr(9, {{0, 1}, {0, 1}, {2}, {3}, {}, {5, 6}, {5, 6}, {}, {}}));
    // A two-output tape: the union over outputs (any weights).
    const Tape two = record(3, [](std::span<const Var> x) {
        return std::vector<Var>{x[0] * x[1], x[2] + 1.0};
    });
    CHECK(hessian_sparsity(two) == csr(3, {{0, 1}, {0, 1}, {}}));
}

TEST_CASE("the Hessian pattern holds every entry the reference VM finds nonzero on the example tapes") {
    std::mt19937_64 rng(9);
    std::uniform_real_distribution<double> value(-1.5, 1.5);
    for (const examples::ExampleInfo& example : examples::example_list()) {
        const std::string name(example.name);
        CAPTURE(name);
        const Tape tape = examples::example_tape(name);
        const SparsityPattern pattern = hessian_sparsity(tape);
        const std::size_t points = 3, n = tape.input_count(), m = tape.output_count();
        REQUIRE(pattern.rows == n);
        std::vector<double> inputs(points * n), params(tape.param_count()), weights(points * m);
        for (double& v : inputs) v = value(rng);
        for (double& v : params) v = value(rng);
        for (double& v : weights) v = value(rng);
        const reference::Vm vm(tape);
        const Evaluation<double> dense =
            hessian(vm, Batch<double>{points, inputs, params}, std::span<const double>(weights));
        std::size_t missing = 0;
        for (std::size_t p = 0; p < points; ++p)
            for (std::size_t i = 0; i < n; ++i)
                for (std::size_t j = 0; j < n; ++j)
                    if (dense.values[(p * n + i) * n + j] != 0.0 && !pattern.contains(i, j)) ++missing;
        CHECK(missing == 0);
        for (std::size_t i = 0; i < n; ++i)  // symmetric
            for (std::size_t k = pattern.row_starts[i]; k < pattern.row_starts[i + 1]; ++k)
                CHECK(pattern.contains(pattern.columns[k], i));
        MESSAGE(name << ": Hessian pattern " << pattern.nonzeros() << " of " << n * n);
    }
}

TEST_CASE("star colourings: checked for direct recovery, and ColPack's where tapevm has it") {
    // A path 0 - 1 - 2 - 3 with its diagonal.
    const SparsityPattern path = csr(4, {{0, 1}, {0, 1, 2}, {1, 2, 3}, {2, 3}});
    CHECK(is_direct_hessian_colouring(path, ColumnColouring{3, {0, 1, 2, 0}}));
    // Two colours on a path of four: (1, 2) has colour 0 twice in row 1 and colour 1 twice
    // in row 2, so it cannot be read directly.
    CHECK_FALSE(is_direct_hessian_colouring(path, ColumnColouring{2, {0, 1, 0, 1}}));
    CHECK_FALSE(is_direct_hessian_colouring(path, ColumnColouring{3, {0, 0, 1, 2}}));  // not even proper
    CHECK_FALSE(is_direct_hessian_colouring(path, ColumnColouring{3, {0, 1, 2}}));     // a column short
#if TAPEVM_HAVE_COLPACK
    const ColumnColouring colouring = star_colour_columns(path);
    CHECK(is_direct_hessian_colouring(path, colouring));
    CHECK(colouring.colours == 3);
    CHECK(star_colour_columns(csr(3, {{}, {}, {}})).colours == 1);
    CHECK(star_colour_columns(csr(3, {{0}, {1}, {2}})).colours == 1);      // diagonal only
    CHECK_THROWS_AS(star_colour_columns(csr(3, {{0}, {1}})), ShapeError);  // not square
    // rosenbrock16's tridiagonal Hessian: three colours instead of 16 hvps.
    const SparseHessianPlan plan = plan_sparse_hessian(examples::example_tape("rosenbrock16"));
    CHECK(plan.pattern.nonzeros() == 16 + 2 * 15);
    CHECK(plan.colouring.colours == 3);
#else
    CHECK_THROWS_AS(star_colour_columns(path), Unsupported);
#endif
}

}  // namespace
}  // namespace tapevm::test
