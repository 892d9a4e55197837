// fuzz_csv: the CSV reader of `tapevm eval` (src/cli/csv.hpp, parse_csv).
//
// The first byte picks the column count (1 to 8, low bits) and the precision (f32 when the
// high bit is set); the rest is the text. Properties checked, each a finding when broken:
//   - the reader throws CsvError and nothing else;
//   - a table has rows x columns values and increasing 1-based line numbers within the text;
//   - writing the table back (append_csv_line) and reading that again gives the same numbers
//     bit for bit (NaNs: NaN of the same sign), as csv.hpp promises for %.17g / %.9g.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <string_view>

#include "csv.hpp"
#include "fuzz_support.hpp"

namespace {

using tapevm::fuzz::require;

template <class Real> bool same(Real a, Real b) {
    if (std::isnan(a) || std::isnan(b))
        return std::isnan(a) && std::isnan(b) && std::signbit(a) == std::signbit(b);
    return std::memcmp(&a, &b, sizeof a) == 0;
}

template <class Real> void check(std::string_view text, std::size_t columns) {
    tapevm::cli::NumberTable<Real> table;
    try {
        table = tapevm::cli::parse_csv<Real>(text, columns, "fuzz.csv");
    } catch (const tapevm::cli::CsvError&) {
        return;
    }
    require(table.columns == columns, "the table has the columns asked for");
    require(table.values.size() == table.rows() * columns, "a table holds rows x columns values");
    const std::size_t lines = static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n')) + 1;
    for (std::size_t row = 0; row < table.rows(); ++row) {
        require(table.line_numbers[row] >= 1 && table.line_numbers[row] <= lines,
                "line numbers are in the text");
        require(row == 0 || table.line_numbers[row] > table.line_numbers[row - 1], "line numbers increase");
    }
    std::string written;
    for (std::size_t row = 0; row < table.rows(); ++row)
        tapevm::cli::append_csv_line(written, table.values.data() + row * columns, columns);
    const auto again = tapevm::cli::parse_csv<Real>(written, columns, "written.csv");
    require(again.values.size() == table.values.size(), "written rows read back");
    for (std::size_t k = 0; k < table.values.size(); ++k)
        require(same(again.values[k], table.values[k]), "written numbers read back bit for bit");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) return 0;
    const std::size_t columns = 1 + (data[0] & 7);
    const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
    if (data[0] & 0x80)
        check<float>(text, columns);
    else
        check<double>(text, columns);
    return 0;
}
