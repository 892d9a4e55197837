// fuzz_ba: the reader of ADBench bundle-adjustment files, the input of `tapevm adbench`
// (bench/adbench_reader.hpp, parse_ba_file). Plain text, no checksum.
//
// Properties checked, each a finding when broken:
//   - the reader throws tapevm::Error and nothing else;
//   - accepted counts are in the documented ranges (1 <= n, m <= p <= max_observations) and
//     every value is finite;
//   - the problem replicate() builds from an accepted file passes validate() (instances of up
//     to 4096 observations: replication allocates by the counts).
#include <algorithm>
#include <cmath>
#include <string>
#include <string_view>

#include "adbench_reader.hpp"
#include "fuzz_support.hpp"
#include "tapevm/error.hpp"

namespace {

using tapevm::fuzz::require;
namespace adbench = tapevm::bench::adbench;

bool all_finite(const adbench::BaFile& file) {
    const auto finite = [](double v) { return std::isfinite(v); };
    return std::all_of(file.camera.begin(), file.camera.end(), finite) &&
           std::all_of(file.point.begin(), file.point.end(), finite) && std::isfinite(file.weight) &&
           std::all_of(file.feature.begin(), file.feature.end(), finite);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    adbench::BaFile file;
    try {
        file = adbench::parse_ba_file(text, "fuzz.txt");
    } catch (const tapevm::Error&) {
        return 0;
    }
    require(file.cameras >= 1 && file.points >= 1 && file.cameras <= file.observations &&
                file.points <= file.observations && file.observations <= adbench::max_observations,
            "accepted counts are in range");
    require(all_finite(file), "accepted values are finite");
    if (file.observations > 4096) return 0;
    const adbench::BaProblem problem = adbench::replicate(file);
    try {
        adbench::validate(problem);
    } catch (const tapevm::Error&) {
        require(false, "replicate() builds a problem validate() accepts");
    }
    return 0;
}
