// ADBench's expected outputs for its BA test instance (ba_expected_test_outputs.json: the
// reprojection errors, weight errors and Jacobian values in CSR order) and its error measure
// rho(a, b) = |a - b| / max(1, |a| + |b|).
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tapevm::bench::adbench {

struct BaExpected {
    std::vector<double> reprojection_errors;  // [p][2]
    std::vector<double> weight_errors;        // [p]
    std::vector<double> jacobian_values;      // [31p], CSR order
};

/// Parses the JSON text (an object "ba" holding the three arrays under ADBench's names, read
/// with nlohmann-json); throws tapevm::Error naming `name` and the missing or malformed array.
BaExpected parse_ba_expected(std::string_view json, const std::string& name);
/// Reads and parses the file at `path`.
BaExpected read_ba_expected(const std::string& path);

/// The expected outputs file that belongs to the instance at `instance_path`, or "" when
/// there is none: ba_expected_test_outputs.json beside test.txt or one folder up (the layout
/// of ADBench's data and of bench/data/adbench). Only test.txt has expected values.
std::string find_expected_for(const std::string& instance_path);

/// ADBench's rho(a, b); NaN on either side gives infinity.
double rho(double a, double b);

/// The largest rho over two lists and where it is; infinity when their sizes differ.
struct RhoResult {
    double max_rho = 0;
    std::size_t worst_index = 0;
};
RhoResult max_rho(std::span<const double> values, std::span<const double> expected);

}  // namespace tapevm::bench::adbench
