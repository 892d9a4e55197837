// The value of one non-leaf op in double, dispatched at run time: used where the recorder
// and the optimiser fold constants, so folding computes exactly what the reference VM would.
#pragma once

#include <cstdint>
#include <cstdlib>

#include "detail/math_scalar.hpp"
#include "detail/op_formulas.hpp"

namespace tapevm::detail {

inline double op_value(Op op, double a, double b, double c, std::int32_t exponent) {
    return visit_op(op, [&](auto tag) -> double {
        constexpr Op code = decltype(tag)::value;
        if constexpr (has_flag(code, op_flag::leaf)) {
            std::abort();  // leaves have no formula
        } else {
            using F = Formula<code>;
            using M = ScalarMath<double>;
            if constexpr (F::immediate) {
                return F::template value<M>(a, exponent);
            } else if constexpr (F::arity == 1) {
                return F::template value<M>(a);
            } else if constexpr (F::arity == 2) {
                return F::template value<M>(a, b);
            } else {
                return F::template value<M>(a, b, c);
            }
        }
    });
}

}  // namespace tapevm::detail
