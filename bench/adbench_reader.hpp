// ADBench bundle-adjustment instances (../shared/adbench/README.md, bench/data/adbench/): the
// file as stored (BaFile: counts n m p, then one camera, one point, one weight, one feature)
// and the whole problem it stands for (BaProblem: the values replicated to n cameras, m points
// and p observations, observation k seeing camera k mod n and point k mod m, as ADBench's own
// reader builds it).
//
// Every defect of a file is a tapevm::Error naming the file, the line and the field
// ("ba1.txt: line 2: camera[3]: expected a number, found 'x'"); counts are checked before
// anything is allocated from them.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tapevm::bench::adbench {

/// Values per camera (rotation 3, centre 3, focal length, principal point 2, distortion 2)
/// and per point; one observation's residual has camera + point + weight = 15 inputs.
inline constexpr std::size_t camera_size = 11, point_size = 3, observation_inputs = 15;
/// Nonzeros of one observation's rows of the sparse Jacobian: two rows of 15, one of 1.
inline constexpr std::size_t nonzeros_per_observation = 31;
/// The most observations a file may declare: the CSR's 31p nonzeros and 11n + 3m + p columns
/// (n, m <= p) stay below 2^31, so row starts and column indices are int32 as in ADBench.
inline constexpr std::size_t max_observations = std::size_t{1} << 26;
/// Instance files hold 20 numbers; anything larger than this is not one.
inline constexpr std::size_t max_file_bytes = 1 << 20;

struct BaFile {
    std::size_t cameras = 0, points = 0, observations = 0;
    std::array<double, camera_size> camera{};
    std::array<double, point_size> point{};
    double weight = 0;
    std::array<double, 2> feature{};
};

/// Parses an instance file's text; `name` (the path) starts every error message. Checks:
/// counts are whole numbers in [1, max_observations] with n <= p and m <= p (every camera
/// and point is observed); values are finite numbers; nothing follows the feature.
BaFile parse_ba_file(std::string_view text, const std::string& name);

/// Reads and parses the file at `path` (tapevm::Error when it cannot be read or is larger
/// than max_file_bytes).
BaFile read_ba_file(const std::string& path);

/// A whole BA problem, every array row-major. Observation k sees camera
/// observation_camera[k] and point observation_point[k].
struct BaProblem {
    std::size_t cameras = 0, points = 0, observations = 0;
    std::vector<double> camera_values;                                // [cameras][11]
    std::vector<double> point_values;                                 // [points][3]
    std::vector<double> weights;                                      // [observations]
    std::vector<double> features;                                     // [observations][2]
    std::vector<std::int32_t> observation_camera, observation_point;  // [observations]

    /// Columns of the sparse Jacobian: 11n + 3m + p.
    std::size_t jacobian_columns() const {
        return camera_size * cameras + point_size * points + observations;
    }
};

/// The problem `file` stands for (README's replication).
BaProblem replicate(const BaFile& file);

/// Throws tapevm::Error unless the arrays have the sizes the counts give, the counts are in
/// the ranges parse_ba_file accepts and every observation's indices are in range. For
/// problems built by hand (tests); replicate()'s results always pass.
void validate(const BaProblem& problem);

}  // namespace tapevm::bench::adbench
