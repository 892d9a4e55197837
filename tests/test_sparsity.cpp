// Jacobian sparsity patterns (tapevm/sparse.hpp): exact on hand-built tapes (ops whose
// partials vanish add nothing, dead code costs nothing, repeated operands), never missing an
// entry the reference VM finds nonzero on the example tapes, and the column colourings.
#include <random>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "tapevm/error.hpp"
#include "tapevm/examples.hpp"
#include "tapevm/reference.hpp"
#include "tapevm/sparse.hpp"
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

}  // namespace
}  // namespace tapevm::test
