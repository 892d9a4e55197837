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

// The functions below compute every operation in a fixed order, one statement per operation
// whose operands are both computed: C++ leaves the order of `a * b + c * d`'s operands
// unspecified, and a recorder records in evaluation order, so without this g++ and clang
// would record the same function as differently ordered tapes.

/// u[i] v[j] - u[j] v[i], in that order.
template <class T, class U> T cross_component(const T* u, const U* v, int i, int j) {
    const T first = u[i] * v[j];
    const T second = u[j] * v[i];
    return first - second;
}

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
    T xo[3];
    for (int i = 0; i < 3; ++i) xo[i] = point[i] - center[i];
    T theta2 = rot[0] * rot[0];
    for (int i = 1; i < 3; ++i) {
        const T square = rot[i] * rot[i];
        theta2 = theta2 + square;
    }
    T xc[3];
    if (theta2 != 0.0) {
        const T theta = sqrt(theta2);
        const T costheta = cos(theta);
        const T sintheta = sin(theta);
        const T inverse = 1.0 / theta;
        T w[3];
        for (int i = 0; i < 3; ++i) w[i] = rot[i] * inverse;
        const T cross[3] = {cross_component(w, xo, 1, 2), cross_component(w, xo, 2, 0),
                            cross_component(w, xo, 0, 1)};
        T dot = w[0] * xo[0];
        for (int i = 1; i < 3; ++i) {
            const T term = w[i] * xo[i];
            dot = dot + term;
        }
        const T one_minus_cos = 1.0 - costheta;
        const T tmp = dot * one_minus_cos;
        for (int i = 0; i < 3; ++i) {
            const T along = xo[i] * costheta;
            const T across = cross[i] * sintheta;
            const T axial = w[i] * tmp;
            const T partial = along + across;
            xc[i] = partial + axial;
        }
    } else {
        for (int i = 0; i < 3; ++i) {
            const T cross = cross_component(rot, xo, (i + 1) % 3, (i + 2) % 3);
            xc[i] = xo[i] + cross;
        }
    }
    const T q[2] = {xc[0] / xc[2], xc[1] / xc[2]};
    const T q0_squared = q[0] * q[0];
    const T q1_squared = q[1] * q[1];
    const T rsq = q0_squared + q1_squared;
    const T* k = x.data() + ba_distortion;
    const T k0_term = k[0] * rsq;
    const T k1_rsq = k[1] * rsq;
    const T k1_term = k1_rsq * rsq;
    const T one_plus_k0 = 1.0 + k0_term;
    const T distortion = one_plus_k0 + k1_term;
    const T focal = x[ba_focal];
    const T weight = x[ba_weight];
    std::array<T, 2> error;
    for (int j = 0; j < 2; ++j) {
        const T distorted = q[j] * distortion;
        const T projected = distorted * focal;
        const T shifted = projected + x[ba_principal + j];
        const T difference = shifted - feature[j];
        error[j] = weight * difference;
    }
    return error;
}

/// ADBench's weight error of one observation: 1 - w^2.
template <class T> T ba_weight_error(const T& w) { return 1.0 - w * w; }

// The sums start at -0.0, the exact identity of +, so a recorder drops it (x + 0.0 is not
// exact: -0.0 + 0.0 is +0.0).
template <class T> T rosenbrock16(std::span<const T> x) {
    T sum = -0.0;
    for (std::size_t i = 0; i < 15; ++i) {
        const T square = x[i] * x[i];
        const T a = x[i + 1] - square;
        const T b = 1.0 - x[i];
        const T scaled = 100.0 * a;
        const T first = scaled * a;
        const T second = b * b;
        const T partial = sum + first;
        sum = partial + second;
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
        const T sine = sin(x[i]);
        const T cosine = cos(x[(i + 15) % 16]);
        const T exponential = exp(cosine);
        const T product = sine * exponential;
        const T hyperbolic = tanh(square);
        const T denominator = 1.0 + square;
        const T quotient = hyperbolic / denominator;
        const T partial = sum + product;
        sum = partial + quotient;
    }
    return sum;
}

/// ADBench's test instance (test.txt): its camera, point and weight (the 15 BA inputs) and
/// its feature. The `ba` example tape is recorded here.
inline constexpr std::array<double, 15> ba_test_inputs = {
    1.797201,   0.590697, -0.635786, 90.859550, 29.361415, 28.777534, 211.628116, -0.284531,
    -14.762924, 0.058931, 0.069976,  4.173048,  5.586898,  1.403869,  0.417022};
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

/// The 1-D Bratu residual on `unknowns` points of (0, 1), lambda as parameter 0:
/// r_i = x_{i-1} - 2 x_i + x_{i+1} + h^2 lambda exp(x_i), h = 1 / (unknowns + 1), x_{-1} =
/// x_unknowns = 0. R^n -> R^n with a tridiagonal Jacobian: the sparse Jacobians' workload
/// (tapevm/sparse.hpp; three colours whatever n). Not optimised (one Mul by h^2 and lambda
/// per row stays). Throws tapevm::Error for 0 unknowns.
Tape bratu_tape(std::size_t unknowns);

}  // namespace tapevm::examples
