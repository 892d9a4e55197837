#include "judge.hpp"

#include <bit>
#include <charconv>
#include <cmath>
#include <cstdio>

#include <doctest/doctest.h>

namespace tapevm::conformance {
namespace {

/// Real's bits as an integer that orders like the value (+0 and -0 both 0).
template <class Real> std::int64_t ordinal(Real x) {
    if constexpr (sizeof(Real) == sizeof(double)) {
        const auto bits = std::bit_cast<std::int64_t>(x);
        return bits < 0 ? -(bits & INT64_MAX) : bits;
    } else {
        const auto bits = std::bit_cast<std::int32_t>(x);
        return bits < 0 ? -std::int64_t{bits & INT32_MAX} : std::int64_t{bits};
    }
}

constexpr std::size_t described_per_comparison = 6;

}  // namespace

template <class Real> double ulp_distance(Real x, Real y) {
    const std::int64_t a = ordinal(x);
    const std::int64_t b = ordinal(y);
    // Both ordinals fit in 63 bits with room: the difference cannot overflow.
    return static_cast<double>(a > b ? a - b : b - a);
}

std::string show(double x) {
    if (std::isnan(x)) return "nan";
    char text[64];
    const auto result = std::to_chars(text, text + sizeof(text), x);
    return std::string(text, result.ptr);
}

template <class Real> bool value_matches(Real got, double expected, double ulps, bool signed_zero) {
    const Real e = static_cast<Real>(expected);
    if (std::isnan(e) || std::isnan(got)) return std::isnan(e) && std::isnan(got);
    if (std::isinf(e) || std::isinf(got)) return e == got;
    if (e == 0 && got == 0) return !signed_zero || std::signbit(e) == std::signbit(got);
    return ulp_distance(got, e) <= ulps;
}

bool within(double got, double expected, ErrorBound bound) {
    if (std::isnan(expected) || std::isnan(got)) return std::isnan(expected) && std::isnan(got);
    if (std::isinf(expected) || std::isinf(got)) return expected == got;
    return std::fabs(got - expected) <= bound.relative * std::fabs(expected) + bound.absolute;
}

Failures::~Failures() {
    for (const std::string& description : first_) FAIL_CHECK(std::string(context_ + ": " + description));
    if (count_ > 0 && !note_.empty()) MESSAGE(std::string(context_ + ": " + note_));
    CHECK_MESSAGE(count_ == 0, context_ << ": " << count_ << " mismatches in all");
}

void Failures::add(const std::string& description) {
    if (first_.size() < described_per_comparison) first_.push_back(description);
    ++count_;
}

template <class Real>
void compare_results(Failures& failures, const std::string& mode, std::span<const Real> got,
                     std::span<const double> expected, std::span<const Real> expected_real,
                     std::size_t per_point, const DescribePoint& describe, const ValueJudge& judge) {
    if (got.size() != expected.size() || got.size() != expected_real.size()) {
        failures.add(mode + ": " + std::to_string(got.size()) + " results, the reference has " +
                     std::to_string(expected.size()));
        return;
    }
    for (std::size_t k = 0; k < got.size(); ++k) {
        if (judge(got[k], expected[k], expected_real[k])) continue;
        const std::size_t point = per_point == 0 ? 0 : k / per_point;
        std::string text = mode + " at point " + std::to_string(point) + " " + describe(point) +
                           ", element " + std::to_string(per_point == 0 ? 0 : k % per_point) + ": got " +
                           show(got[k]) + ", reference " + show(expected[k]);
        if constexpr (sizeof(Real) != sizeof(double)) {
            text += std::string(" (in float ") + show(expected_real[k]) + ")";
        }
        const Real rounded = static_cast<Real>(expected[k]);
        if (std::isfinite(got[k]) && std::isfinite(rounded)) {
            text += std::string(", ") + show(ulp_distance(got[k], rounded)) + " ulp";
        }
        failures.add(text);
    }
}

void compare_reports(Failures& failures, const std::string& mode, const std::vector<std::size_t>& got,
                     const std::vector<std::size_t>& expected) {
    if (got == expected) return;
    auto list = [](const std::vector<std::size_t>& points) {
        std::string text = "[";
        for (std::size_t k = 0; k < points.size() && k < 12; ++k) {
            if (k > 0) text += ' ';
            text += std::to_string(points[k]);
        }
        if (points.size() > 12) text += std::string(" ... (") + std::to_string(points.size()) + " points)";
        return text + "]";
    };
    failures.add(mode + ": diverged points " + list(got) + ", the reference reports " + list(expected));
}

template double ulp_distance<double>(double, double);
template double ulp_distance<float>(float, float);
template bool value_matches<double>(double, double, double, bool);
template bool value_matches<float>(float, double, double, bool);
template void compare_results<double>(Failures&, const std::string&, std::span<const double>,
                                      std::span<const double>, std::span<const double>, std::size_t,
                                      const DescribePoint&, const ValueJudge&);
template void compare_results<float>(Failures&, const std::string&, std::span<const float>,
                                     std::span<const double>, std::span<const float>, std::size_t,
                                     const DescribePoint&, const ValueJudge&);

}  // namespace tapevm::conformance
