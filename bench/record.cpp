#include "record.hpp"

#include <cstdio>
#include <iomanip>
#include <sstream>

#include <nlohmann/json.hpp>

namespace tapevm::bench {
namespace {

std::string fixed(double value, int digits) {
    if (std::isnan(value)) return "-";
    char text[64];
    std::snprintf(text, sizeof text, "%.*f", digits, value);
    return text;
}

// Three significant digits, at least one decimal below 100.
std::string nanoseconds(double value) {
    if (value >= 100) return fixed(value, 0);
    if (value >= 10) return fixed(value, 1);
    if (value >= 1) return fixed(value, 2);
    return fixed(value, 3);
}

std::string scientific(double value) {
    char text[32];
    std::snprintf(text, sizeof text, "%.1e", value);
    return text;
}

}  // namespace

void print_table(std::span<const Record> records, std::ostream& out) {
    const std::vector<std::string> header = {"workload",      "mode",   "backend",  "precision",
                                             "threads",       "points", "ns/point", "min",
                                             "ns/instr/lane", "ratio",  "isa",      "max error"};
    std::vector<std::vector<std::string>> rows{header};
    for (const Record& r : records) {
        rows.push_back({r.workload, r.mode, r.backend, r.precision, std::to_string(r.threads),
                        std::to_string(r.points), nanoseconds(r.ns_per_point),
                        nanoseconds(r.min_ns_per_point), fixed(r.ns_per_instruction_lane, 3),
                        fixed(r.ratio_to_native_simd, 2), r.isa, scientific(r.max_error)});
    }
    std::vector<std::size_t> widths(header.size(), 0);
    for (const auto& row : rows)
        for (std::size_t c = 0; c < row.size(); ++c) widths[c] = std::max(widths[c], row[c].size());
    for (const auto& row : rows) {
        std::string line;
        for (std::size_t c = 0; c < row.size(); ++c) {
            // Text columns to the left, numbers to the right.
            const bool text = c < 4 || c == 10;
            const std::string pad(widths[c] - row[c].size(), ' ');
            line += (c == 0 ? "" : "  ") + (text ? row[c] + pad : pad + row[c]);
        }
        while (!line.empty() && line.back() == ' ') line.pop_back();
        out << line << '\n';
    }
}

void write_json(std::span<const Record> records, std::ostream& out) {
    out << "[";
    for (std::size_t i = 0; i < records.size(); ++i) {
        const Record& r = records[i];
        // Keys in this order (ordered_json); a NaN or infinite number is written as null.
        const nlohmann::ordered_json record = {
            {"workload", r.workload},
            {"mode", r.mode},
            {"backend", r.backend},
            {"precision", r.precision},
            {"threads", r.threads},
            {"points", r.points},
            {"ns_per_point", r.ns_per_point},
            {"median_ns_per_point", r.ns_per_point},
            {"min_ns_per_point", r.min_ns_per_point},
            {"runs", r.runs_ns_per_point},
            {"instructions", r.instructions},
            {"ns_per_instruction_lane", r.ns_per_instruction_lane},
            {"ratio_to_native_simd", r.ratio_to_native_simd},
            {"isa", r.isa},
            {"device", r.device},
            {"checked", r.checked},
            {"max_error", r.max_error},
            {"tolerance", r.tolerance},
            {"checked_points", r.checked_points},
            {"setup_seconds", r.setup_seconds},
            {"device_ns_per_point", r.device_ns_per_point},
        };
        // One record per line; bytes that are not UTF-8 (a device name) become U+FFFD.
        out << (i == 0 ? "\n  " : ",\n  ")
            << record.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    }
    out << (records.empty() ? "]\n" : "\n]\n");
}

}  // namespace tapevm::bench
