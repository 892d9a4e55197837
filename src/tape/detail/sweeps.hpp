// The scalar sweeps over a tape for one point, templated on a math policy M and value type
// T: values (forward), tangents (forward mode), adjoints (reverse mode). The reference VM
// runs them in double and float, and in dual numbers for hvp (forward over reverse).
// Every per-op detail comes from the generated Formula<Op> (op_formulas.hpp).
#pragma once

#include <cstdlib>
#include <span>

#include "detail/math_scalar.hpp"
#include "detail/op_formulas.hpp"
#include "tapevm/tape.hpp"

namespace tapevm::detail {

template <class M, class T> struct Sweeps {
    /// values[slot] for every slot. Returns true when every guard holds.
    static bool evaluate(const Tape& tape, std::span<const T> inputs, std::span<const T> params,
                         std::span<T> values) {
        const auto instructions = tape.instructions();
        const auto constants = tape.constants();
        for (std::size_t slot = 0; slot < instructions.size(); ++slot) {
            const Instruction& ins = instructions[slot];
            switch (ins.op) {
                case Op::Input: values[slot] = inputs[ins.a]; continue;
                case Op::Param: values[slot] = params[ins.a]; continue;
                case Op::Const: values[slot] = T(constants[ins.a]); continue;
                default: break;
            }
            values[slot] = visit_op(ins.op, [&](auto tag) -> T {
                constexpr Op op = decltype(tag)::value;
                if constexpr (has_flag(op, op_flag::leaf)) {
                    std::abort();
                } else {
                    using F = Formula<op>;
                    if constexpr (F::immediate) {
                        return F::template value<M>(values[ins.a], powi_exponent(ins));
                    } else if constexpr (F::arity == 1) {
                        return F::template value<M>(values[ins.a]);
                    } else if constexpr (F::arity == 2) {
                        return F::template value<M>(values[ins.a], values[ins.b]);
                    } else {
                        return F::template value<M>(values[ins.a], values[ins.b], values[ins.c]);
                    }
                }
            });
        }
        for (const Guard& guard : tape.guards()) {
            if (M::truth(values[guard.slot]) != (guard.expected != 0)) return false;
        }
        return true;
    }

    /// The partials of the instruction at `slot` with respect to its operands, into d.
    /// Returns the number of partials (0 for ops whose partials are all zero).
    static std::uint32_t partials(const Instruction& ins, std::size_t slot, std::span<const T> values,
                                  T (&d)[3]) {
        return visit_op(ins.op, [&](auto tag) -> std::uint32_t {
            constexpr Op op = decltype(tag)::value;
            if constexpr (has_flag(op, op_flag::leaf)) {
                return 0;
            } else {
                using F = Formula<op>;
                if constexpr (!F::has_partials) {
                    return 0;
                } else {
                    T part[F::arity];
                    const T r = values[slot];
                    if constexpr (F::immediate) {
                        F::template partials<M>(values[ins.a], powi_exponent(ins), r, part);
                    } else if constexpr (F::arity == 1) {
                        F::template partials<M>(values[ins.a], r, part);
                    } else if constexpr (F::arity == 2) {
                        F::template partials<M>(values[ins.a], values[ins.b], r, part);
                    } else {
                        F::template partials<M>(values[ins.a], values[ins.b], values[ins.c], r, part);
                    }
                    for (std::uint32_t k = 0; k < F::arity; ++k) d[k] = part[k];
                    return F::arity;
                }
            }
        });
    }

    /// Forward mode: tangents[slot] = d value[slot] / d inputs . direction.
    static void tangent(const Tape& tape, std::span<const T> values, std::span<const T> direction,
                        std::span<T> tangents) {
        const auto instructions = tape.instructions();
        for (std::size_t slot = 0; slot < instructions.size(); ++slot) {
            const Instruction& ins = instructions[slot];
            if (ins.op == Op::Input) {
                tangents[slot] = direction[ins.a];
                continue;
            }
            T d[3];
            const std::uint32_t count = partials(ins, slot, values, d);
            const std::uint32_t operands[3] = {ins.a, ins.b, ins.c};
            T sum = T(0);
            for (std::uint32_t k = 0; k < count; ++k) sum += contribution<M>(d[k], tangents[operands[k]]);
            tangents[slot] = sum;
        }
    }

    /// Reverse mode: `adjoints` holds the output seeds on entry (added at the output
    /// slots) and every slot's adjoint on return.
    static void reverse(const Tape& tape, std::span<const T> values, std::span<T> adjoints) {
        const auto instructions = tape.instructions();
        for (std::size_t slot = instructions.size(); slot-- > 0;) {
            const T seed = adjoints[slot];
            if (M::is_zero(seed)) continue;
            const Instruction& ins = instructions[slot];
            T d[3];
            const std::uint32_t count = partials(ins, slot, values, d);
            const std::uint32_t operands[3] = {ins.a, ins.b, ins.c};
            for (std::uint32_t k = 0; k < count; ++k) adjoints[operands[k]] += contribution<M>(d[k], seed);
        }
    }
};

}  // namespace tapevm::detail
