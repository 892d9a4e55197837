// The median every timed result of the benchmark reports (bench, adbench).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

namespace tapevm::support {

/// The median of `values` (the mean of the middle two for an even count); NaN when empty.
inline double median(std::vector<double> values) {
    if (values.empty()) return std::nan("");
    std::sort(values.begin(), values.end());
    const std::size_t middle = values.size() / 2;
    return values.size() % 2 == 1 ? values[middle] : 0.5 * (values[middle - 1] + values[middle]);
}

}  // namespace tapevm::support
