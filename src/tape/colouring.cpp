// Column colourings of sparsity patterns through ColPack (tapevm/sparse.hpp: partial
// distance-2 for Jacobians; tapevm/sparse_hessian.hpp: star for Hessians); without ColPack
// (built with -Dcolpack=disabled, or libcolpack-dev missing) both throw Unsupported.
#include <limits>
#include <string>
#include <vector>

#include "tapevm/error.hpp"
#include "tapevm/sparse.hpp"
#include "tapevm/sparse_hessian.hpp"

#if TAPEVM_HAVE_COLPACK
#include <ColPack/ColPackHeaders.h>
#endif

namespace tapevm {

namespace {

// Throws unless `pattern` is a well-formed CSR pattern within ColPack's int counts.
void check_pattern(const char* where, const SparsityPattern& pattern) {
    if (pattern.row_starts.size() != pattern.rows + 1 || pattern.row_starts.back() != pattern.columns.size())
        throw ShapeError(where, "pattern.row_starts", pattern.rows + 1, pattern.row_starts.size());
    for (const std::uint32_t col : pattern.columns) {
        if (col >= pattern.cols)
            throw Error(std::string(where) + ": the pattern names column " + std::to_string(col) + " of " +
                        std::to_string(pattern.cols));
    }
    constexpr std::size_t limit = std::numeric_limits<int>::max();
    if (pattern.rows > limit || pattern.cols > limit || pattern.nonzeros() > limit)
        throw Unsupported(std::string(where) + ": ColPack counts rows, columns and nonzeros in int");
}

#if TAPEVM_HAVE_COLPACK
// ColPack's ADOL-C layout: row i is {count, column, column, ...}.
struct RowPointers {
    explicit RowPointers(const SparsityPattern& pattern) : rows(pattern.rows), pointers(pattern.rows) {
        for (std::size_t i = 0; i < pattern.rows; ++i) {
            rows[i].push_back(static_cast<unsigned int>(pattern.row_starts[i + 1] - pattern.row_starts[i]));
            for (std::size_t k = pattern.row_starts[i]; k < pattern.row_starts[i + 1]; ++k)
                rows[i].push_back(pattern.columns[k]);
            pointers[i] = rows[i].data();
        }
    }
    std::vector<std::vector<unsigned int>> rows;
    std::vector<unsigned int*> pointers;
};

// ColPack's colours renumbered densely in order of first use (a column without entries may
// come back uncoloured, negative: it joins colour 0) into `colouring`.
void renumber(const char* where, const std::vector<int>& colours, ColumnColouring& colouring) {
    if (colours.size() != colouring.colour.size())
        throw Error(std::string(where) + ": ColPack coloured " + std::to_string(colours.size()) +
                    " columns of " + std::to_string(colouring.colour.size()));
    std::vector<std::int64_t> renumbered;
    for (std::size_t j = 0; j < colours.size(); ++j) {
        if (colours[j] < 0) continue;
        const auto c = static_cast<std::size_t>(colours[j]);
        if (c >= renumbered.size()) renumbered.resize(c + 1, -1);
        if (renumbered[c] < 0) renumbered[c] = static_cast<std::int64_t>(colouring.colours++);
        colouring.colour[j] = static_cast<std::uint32_t>(renumbered[c]);
    }
    if (colouring.colours == 0) colouring.colours = 1;
}
#endif

}  // namespace

ColumnColouring colour_columns(const SparsityPattern& pattern) {
    check_pattern("colour_columns", pattern);
    ColumnColouring colouring;
    colouring.colour.assign(pattern.cols, 0);
    if (pattern.nonzeros() == 0) {
        colouring.colours = pattern.cols > 0 ? 1 : 0;
        return colouring;
    }
#if TAPEVM_HAVE_COLPACK
    RowPointers rows(pattern);
    ColPack::BipartiteGraphPartialColoringInterface graph(
        SRC_MEM_ADOLC, rows.pointers.data(), static_cast<int>(pattern.rows), static_cast<int>(pattern.cols));
    // The serial ordering and colouring: ColPack's default entry point colours with OpenMP
    // threads, which gave 3, 4 or 5 colours from run to run for one tridiagonal pattern (3 is
    // optimal; the serial greedy finds it every time).
    graph.ColumnSmallestLastOrdering_serial();
    graph.PartialDistanceTwoColumnColoring_serial();
    std::vector<int> colours;
    graph.GetRightVertexColors(colours);
    renumber("colour_columns", colours, colouring);
    if (!is_distance2_colouring(pattern, colouring))
        throw Error("colour_columns: ColPack's colouring puts two columns of one row in one colour");
    return colouring;
#else
    throw Unsupported("colour_columns: tapevm was built without ColPack (Debian: libcolpack-dev)");
#endif
}

ColumnColouring star_colour_columns(const SparsityPattern& pattern) {
    if (pattern.rows != pattern.cols)
        throw ShapeError("star_colour_columns", "pattern.rows (a Hessian pattern is square)", pattern.cols,
                         pattern.rows);
    check_pattern("star_colour_columns", pattern);
    ColumnColouring colouring;
    colouring.colour.assign(pattern.cols, 0);
    if (pattern.nonzeros() == 0) {
        colouring.colours = pattern.cols > 0 ? 1 : 0;
        return colouring;
    }
#if TAPEVM_HAVE_COLPACK
    RowPointers rows(pattern);
    ColPack::GraphColoringInterface graph(SRC_MEM_ADOLC, rows.pointers.data(),
                                          static_cast<int>(pattern.rows));
    // Serial, as for the Jacobian's colouring (the default entry points may use OpenMP threads).
    graph.SmallestLastOrdering_serial();
    graph.StarColoring_serial();
    std::vector<int> colours;
    graph.GetVertexColors(colours);
    renumber("star_colour_columns", colours, colouring);
    if (!is_direct_hessian_colouring(pattern, colouring))
        throw Error("star_colour_columns: ColPack's colouring does not allow reading every entry directly");
    return colouring;
#else
    throw Unsupported("star_colour_columns: tapevm was built without ColPack (Debian: libcolpack-dev)");
#endif
}

}  // namespace tapevm
