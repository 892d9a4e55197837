#include "csv.hpp"

#include <charconv>
#include <limits>

namespace tapevm::cli {
namespace {

constexpr std::string_view blanks = " \t";

std::string_view trim(std::string_view text) {
    const std::size_t first = text.find_first_not_of(blanks);
    if (first == std::string_view::npos) return {};
    const std::size_t last = text.find_last_not_of(blanks);
    return text.substr(first, last - first + 1);
}

constexpr std::string_view precision_name(double) { return "f64"; }
constexpr std::string_view precision_name(float) { return "f32"; }

// Shows a field in an error message, shortened so the message stays one readable line.
std::string quoted(std::string_view field) {
    constexpr std::size_t longest = 40;
    if (field.size() > longest) return "'" + std::string(field.substr(0, longest)) + "...'";
    return "'" + std::string(field) + "'";
}

template <class Real>
Real parse_value(std::string_view field, std::string_view source, std::size_t line, std::size_t column) {
    const std::string where =
        std::string(source) + ": line " + std::to_string(line) + ", value " + std::to_string(column);
    const std::string_view value = trim(field);
    if (value.empty()) throw CsvError(where + ": empty value");
    // from_chars takes no '+'; accept one unless another sign follows.
    const std::string_view digits =
        value.front() == '+' && value.size() > 1 && value[1] != '-' && value[1] != '+' ? value.substr(1)
                                                                                       : value;
    Real number = 0;
    const auto [end, status] = std::from_chars(digits.data(), digits.data() + digits.size(), number);
    if (status == std::errc::result_out_of_range) {
        throw CsvError(where + ": " + quoted(value) + " is out of range for " +
                       std::string(precision_name(Real())));
    }
    if (status != std::errc() || end != digits.data() + digits.size()) {
        throw CsvError(where + ": " + quoted(value) + " is not a number");
    }
    return number;
}

}  // namespace

template <class Real>
NumberTable<Real> parse_csv(std::string_view text, std::size_t columns, std::string_view source) {
    NumberTable<Real> table;
    table.columns = columns;
    std::size_t line_number = 0;
    std::size_t start = text.starts_with("\xEF\xBB\xBF") ? 3 : 0;  // a UTF-8 byte-order mark
    while (start < text.size()) {
        std::size_t end = text.find('\n', start);
        if (end == std::string_view::npos) end = text.size();
        std::string_view line = text.substr(start, end - start);
        start = end + 1;
        ++line_number;
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        if (trim(line).empty()) continue;

        std::size_t given = 1;
        for (char c : line) given += c == ',' ? 1 : 0;
        if (given != columns) {
            throw CsvError(std::string(source) + ": line " + std::to_string(line_number) + ": expected " +
                           std::to_string(columns) + " values, got " + std::to_string(given));
        }
        std::size_t field_start = 0;
        for (std::size_t column = 1; column <= columns; ++column) {
            std::size_t field_end = line.find(',', field_start);
            if (field_end == std::string_view::npos) field_end = line.size();
            table.values.push_back(parse_value<Real>(line.substr(field_start, field_end - field_start),
                                                     source, line_number, column));
            field_start = field_end + 1;
        }
        table.line_numbers.push_back(line_number);
    }
    return table;
}

template <class Real> void append_number(std::string& text, Real value) {
    constexpr int digits = std::numeric_limits<Real>::max_digits10;  // 17 for double, 9 for float
    char buffer[64];
    const auto result =
        std::to_chars(buffer, buffer + sizeof buffer, value, std::chars_format::general, digits);
    text.append(buffer, result.ptr);
}

template <class Real> void append_csv_line(std::string& text, const Real* values, std::size_t count) {
    for (std::size_t k = 0; k < count; ++k) {
        if (k > 0) text += ',';
        append_number(text, values[k]);
    }
    text += '\n';
}

template NumberTable<double> parse_csv(std::string_view, std::size_t, std::string_view);
template NumberTable<float> parse_csv(std::string_view, std::size_t, std::string_view);
template void append_number(std::string&, double);
template void append_number(std::string&, float);
template void append_csv_line(std::string&, const double*, std::size_t);
template void append_csv_line(std::string&, const float*, std::size_t);

}  // namespace tapevm::cli
