// Column colouring of sparsity patterns through ColPack (tapevm/sparse.hpp); without ColPack
// (built with -Dcolpack=disabled, or libcolpack-dev missing) colour_columns() throws
// Unsupported.
#include <limits>
#include <string>
#include <vector>

#include "tapevm/error.hpp"
#include "tapevm/sparse.hpp"

#if TAPEVM_HAVE_COLPACK
#include <ColPack/ColPackHeaders.h>
#endif

namespace tapevm {

ColumnColouring colour_columns(const SparsityPattern& pattern) {
    if (pattern.row_starts.size() != pattern.rows + 1 || pattern.row_starts.back() != pattern.columns.size())
        throw ShapeError("colour_columns", "pattern.row_starts", pattern.rows + 1, pattern.row_starts.size());
    for (const std::uint32_t col : pattern.columns) {
        if (col >= pattern.cols)
            throw Error("colour_columns: the pattern names column " + std::to_string(col) + " of " +
                        std::to_string(pattern.cols));
    }
    constexpr std::size_t limit = std::numeric_limits<int>::max();
    if (pattern.rows > limit || pattern.cols > limit || pattern.nonzeros() > limit)
        throw Unsupported("colour_columns: ColPack counts rows, columns and nonzeros in int");
    ColumnColouring colouring;
    colouring.colour.assign(pattern.cols, 0);
    if (pattern.nonzeros() == 0) {
        colouring.colours = pattern.cols > 0 ? 1 : 0;
        return colouring;
    }
#if TAPEVM_HAVE_COLPACK
    // ColPack's ADOL-C layout: row i is {count, column, column, ...}.
    std::vector<std::vector<unsigned int>> rows(pattern.rows);
    std::vector<unsigned int*> row_pointers(pattern.rows);
    for (std::size_t i = 0; i < pattern.rows; ++i) {
        rows[i].push_back(static_cast<unsigned int>(pattern.row_starts[i + 1] - pattern.row_starts[i]));
        for (std::size_t k = pattern.row_starts[i]; k < pattern.row_starts[i + 1]; ++k)
            rows[i].push_back(pattern.columns[k]);
        row_pointers[i] = rows[i].data();
    }
    ColPack::BipartiteGraphPartialColoringInterface graph(
        SRC_MEM_ADOLC, row_pointers.data(), static_cast<int>(pattern.rows), static_cast<int>(pattern.cols));
    // The serial ordering and colouring: ColPack's default entry point colours with OpenMP
    // threads, which gave 3, 4 or 5 colours from run to run for one tridiagonal pattern (3 is
    // optimal; the serial greedy finds it every time).
    graph.ColumnSmallestLastOrdering_serial();
    graph.PartialDistanceTwoColumnColoring_serial();
    std::vector<int> colours;
    graph.GetRightVertexColors(colours);
    if (colours.size() != pattern.cols)
        throw Error("colour_columns: ColPack coloured " + std::to_string(colours.size()) + " columns of " +
                    std::to_string(pattern.cols));
    // Renumbered densely in order of first use (a column without entries may come back
    // uncoloured, negative: it joins colour 0).
    std::vector<std::int64_t> renumbered;
    for (std::size_t j = 0; j < pattern.cols; ++j) {
        if (colours[j] < 0) continue;
        const auto c = static_cast<std::size_t>(colours[j]);
        if (c >= renumbered.size()) renumbered.resize(c + 1, -1);
        if (renumbered[c] < 0) renumbered[c] = static_cast<std::int64_t>(colouring.colours++);
        colouring.colour[j] = static_cast<std::uint32_t>(renumbered[c]);
    }
    if (colouring.colours == 0) colouring.colours = 1;
    if (!is_distance2_colouring(pattern, colouring))
        throw Error("colour_columns: ColPack's colouring puts two columns of one row in one colour");
    return colouring;
#else
    throw Unsupported("colour_columns: tapevm was built without ColPack (Debian: libcolpack-dev)");
#endif
}

}  // namespace tapevm
