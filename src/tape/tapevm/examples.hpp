// The built-in example functions every benchmark measures, written once as templates: with
// T = tapevm::Var they record a tape, with T = double (or a SIMD batch) they are the native
// compiled baseline the tape is compared with.
//   ba            ADBench bundle adjustment, one observation's reprojection error:
//                 R^15 (camera 11, point 3, weight 1) -> R^2, feature (2) given separately
//   rosenbrock16  sum_{i<15} 100 (x[i+1] - x[i]^2)^2 + (1 - x[i])^2
//   trig16        sum_{i<16} sin(x[i]) exp(cos(x[(i+15) mod 16])) + tanh(x[i]^2) / (1 + x[i]^2)
#pragma once

#include <array>
#include <cmath>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tapevm/tape.hpp"

namespace tapevm::examples {

/// Index of each part of the 15 BA inputs (ADBench's camera layout, then point, weight).
inline constexpr std::size_t ba_rotation = 0, ba_center = 3, ba_focal = 6, ba_principal = 7,
                             ba_distortion = 9, ba_point = 11, ba_weight = 14, ba_inputs = 15;

/// ADBench's reprojection error of one observation: x = camera(11), point(3), weight(1),
/// feature = the observed 2-D feature. Rodrigues' rotation branches on |r|^2 != 0 as
/// ADBench's does (recorded as a guard on the tape).
template <class T, class Feature> std::array<T, 2> ba_residual(std::span<const T> x, const Feature* feature) {
    using std::cos;
    using std::sin;
    using std::sqrt;
    const T* rot = x.data() + ba_rotation;
    const T* center = x.data() + ba_center;
    const T* point = x.data() + ba_point;
    const T xo[3] = {point[0] - center[0], point[1] - center[1], point[2] - center[2]};
    T xc[3];
    const T theta2 = rot[0] * rot[0] + rot[1] * rot[1] + rot[2] * rot[2];
    if (theta2 != 0.0) {
        const T theta = sqrt(theta2);
        const T costheta = cos(theta);
        const T sintheta = sin(theta);
        const T inverse = 1.0 / theta;
        const T w[3] = {rot[0] * inverse, rot[1] * inverse, rot[2] * inverse};
        const T cross[3] = {w[1] * xo[2] - w[2] * xo[1], w[2] * xo[0] - w[0] * xo[2], w[0] * xo[1] - w[1] * xo[0]};
        const T tmp = (w[0] * xo[0] + w[1] * xo[1] + w[2] * xo[2]) * (1.0 - costheta);
        for (int i = 0; i < 3; ++i) xc[i] = xo[i] * costheta + cross[i] * sintheta + w[i] * tmp;
    } else {
        const T cross[3] = {rot[1] * xo[2] - rot[2] * xo[1], rot[2] * xo[0] - rot[0] * xo[2],
                            rot[0] * xo[1] - rot[1] * xo[0]};
        for (int i = 0; i < 3; ++i) xc[i] = xo[i] + cross[i];
    }
    const T q[2] = {xc[0] / xc[2], xc[1] / xc[2]};
    const T rsq = q[0] * q[0] + q[1] * q[1];
    const T* k = x.data() + ba_distortion;
    const T distortion = 1.0 + k[0] * rsq + k[1] * rsq * rsq;
    const T focal = x[ba_focal];
    const T weight = x[ba_weight];
    return {weight * (q[0] * distortion * focal + x[ba_principal] - feature[0]),
            weight * (q[1] * distortion * focal + x[ba_principal + 1] - feature[1])};
}

/// ADBench's weight error of one observation: 1 - w^2.
template <class T> T ba_weight_error(const T& w) { return 1.0 - w * w; }

// The sums start at -0.0, the exact identity of +, so a recorder drops it (x + 0.0 is not
// exact: -0.0 + 0.0 is +0.0).
template <class T> T rosenbrock16(std::span<const T> x) {
    T sum = -0.0;
    for (std::size_t i = 0; i < 15; ++i) {
        const T a = x[i + 1] - x[i] * x[i];
        const T b = 1.0 - x[i];
        sum = sum + 100.0 * a * a + b * b;
    }
    return sum;
}

template <class T> T trig16(std::span<const T> x) {
    using std::cos;
    using std::exp;
    using std::sin;
    using std::tanh;
    T sum = -0.0;
    for (std::size_t i = 0; i < 16; ++i) {
        const T square = x[i] * x[i];
        sum = sum + sin(x[i]) * exp(cos(x[(i + 15) % 16])) + tanh(square) / (1.0 + square);
    }
    return sum;
}

/// ADBench's test instance (test.txt): its camera, point and weight (the 15 BA inputs) and
/// its feature. The `ba` example tape is recorded here.
inline constexpr std::array<double, 15> ba_test_inputs = {
    1.797201, 0.590697, -0.635786, 90.859550, 29.361415, 28.777534, 211.628116, -0.284531,
    -14.762924, 0.058931, 0.069976, 4.173048, 5.586898, 1.403869, 0.417022};
inline constexpr std::array<double, 2> ba_test_feature = {-525.672849, 161.811929};

/// Names accepted by example_tape(), with a one-line description each.
struct ExampleInfo {
    std::string_view name;
    std::string_view description;
};
std::span<const ExampleInfo> example_list();

/// The named example, recorded and optimised:
///   ba            R^15 -> R^2, the feature of ADBench's test instance as constants
///   ba-param      R^15 -> R^2, the feature as 2 parameters (one per observation)
///   rosenbrock16  R^16 -> R
///   trig16        R^16 -> R
/// Throws tapevm::Error for an unknown name.
Tape example_tape(std::string_view name);

}  // namespace tapevm::examples
