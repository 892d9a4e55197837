// Numbers in CSV text: one row of comma-separated values per line, in and out.
//
// Reading: values are parsed with std::from_chars (locale-independent); spaces and tabs
// around a value are ignored, a leading '+' is accepted, "nan", "inf" and "-inf" are values,
// blank lines are skipped, lines may end in "\n" or "\r\n", a leading UTF-8 byte-order mark
// is skipped. Every row must have the same,
// given number of values. Mistakes throw CsvError naming the source, the line number and
// what is wrong.
//
// Writing: f64 values as printf's %.17g, f32 as %.9g (both round-trip exactly), comma
// separated without spaces.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "tapevm/error.hpp"

namespace tapevm::cli {

/// Malformed CSV data; the message names the source, the line and the problem.
class CsvError : public Error {
public:
    using Error::Error;
};

/// Rows of numbers read from CSV text, row-major.
template <class Real> struct NumberTable {
    std::size_t columns = 0;
    std::vector<Real> values;               // [rows][columns]
    std::vector<std::size_t> line_numbers;  // 1-based line of each row in the source

    std::size_t rows() const { return line_numbers.size(); }
};

/// Parses `text` as rows of exactly `columns` numbers of type Real (double or float).
/// `source` names the text in messages (a file name). Values out of Real's range throw.
template <class Real>
NumberTable<Real> parse_csv(std::string_view text, std::size_t columns, std::string_view source);

/// Appends `value` to `text`: %.17g for double, %.9g for float ("nan", "inf", "-inf").
template <class Real> void append_number(std::string& text, Real value);

/// Appends `values` as one CSV line (comma separated, ending in '\n') to `text`.
template <class Real> void append_csv_line(std::string& text, const Real* values, std::size_t count);

}  // namespace tapevm::cli
