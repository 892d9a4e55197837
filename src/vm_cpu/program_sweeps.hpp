// The kernels of program.hpp's entries for one instruction set (Arch) and precision (Real):
// building a participant's programs from the plan, and the per-op entry functions. Include
// only from kernel.hpp (compiled per instruction set).
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "detail/op_formulas.hpp"
#include "plan.hpp"
#include "program.hpp"
#include "simd_math.hpp"

namespace tapevm::cpu::detail {

template <class Arch, class Real> struct ProgramSweeps {
    using M = SimdMath<Arch, Real>;
    using V = typename M::T;
    using E = Entry<Real>;
    static constexpr std::size_t width = M::width;

    static V load(const Real* p, std::size_t l) { return V::load_aligned(p + l); }

    /// result = value of op over the block.
    template <Op op> static void value_entry(const E& e, std::size_t lanes, std::size_t) {
        using F = SimdFormula<op>;
        const Real* const x0 = e.operand[0];
        const Real* const x1 = e.operand[1];
        const Real* const x2 = e.operand[2];
        Real* const out = e.result;
        for (std::size_t l = 0; l < lanes; l += width) {
            V r;
            if constexpr (F::immediate) {
                r = F::template value<M>(load(x0, l), e.immediate);
            } else if constexpr (F::arity == 1) {
                r = F::template value<M>(load(x0, l));
            } else if constexpr (F::arity == 2) {
                r = F::template value<M>(load(x0, l), load(x1, l));
            } else {
                r = F::template value<M>(load(x0, l), load(x1, l), load(x2, l));
            }
            r.store_aligned(out + l);
        }
    }

    /// partial * seed, except 0 where either is 0 (contribution() in math_scalar.hpp: an
    /// infinite or NaN factor times a zero one adds nothing). The product differs from that
    /// rule only in NaN lanes (0 * inf) and in the sign of a zero, which adding to an
    /// adjoint (+0 or a sum, never -0) cannot show; so the rule is applied only to vectors
    /// with a NaN lane.
    static V product(V partial, V seed) {
        const V c = partial * seed;
        if (xsimd::any(xsimd::isnan(c))) [[unlikely]]
            return tapevm::detail::contribution<M>(partial, seed);
        return c;
    }

    /// Operand k's adjoint += partial k * seed, for the operands in `active`, every row
    /// (`rows`, or 1 when one_row).
    template <Op op, unsigned active, bool one_row>
    static void adjoint_rows(const E& e, std::size_t lanes, std::size_t rows) {
        using F = SimdFormula<op>;
        constexpr std::uint32_t arity = F::arity;
        if constexpr (one_row) rows = 1;
        const Real* const x0 = e.operand[0];
        const Real* const x1 = e.operand[1];
        const Real* const x2 = e.operand[2];
        const Real* const r = e.result;
        const Real* const seeds = e.seed;
        // Local copies: the compiler cannot tell that the stores below leave the entry alone.
        const Real* in[arity];
        Real* out[arity];
        for (std::uint32_t k = 0; k < arity; ++k) {
            in[k] = e.adjoint_in[k];
            out[k] = e.adjoint_out[k];
        }
        for (std::size_t l = 0; l < lanes; l += width) {
            V d[arity];
            if constexpr (F::immediate) {
                F::template partials<M>(load(x0, l), e.immediate, load(r, l), d);
            } else if constexpr (arity == 1) {
                F::template partials<M>(load(x0, l), load(r, l), d);
            } else if constexpr (arity == 2) {
                F::template partials<M>(load(x0, l), load(x1, l), load(r, l), d);
            } else {
                F::template partials<M>(load(x0, l), load(x1, l), load(x2, l), load(r, l), d);
            }
            for (std::size_t row = 0; row < rows; ++row) {
                const std::size_t i = row * lanes + l;
                const V seed = load(seeds, i);
                // In operand order, each read after the previous write: x * x adds both terms.
                for (std::uint32_t k = 0; k < arity; ++k) {
                    if (!(active & (1u << k))) continue;
                    (load(in[k], i) + product(d[k], seed)).store_aligned(out[k] + i);
                }
            }
        }
    }

    template <Op op, unsigned active> static void adjoint_entry(const E& e, std::size_t lanes, std::size_t rows) {
        // Gradients (one row) of the arithmetic ops get a loop without the row loop; the
        // ops with costly partials gain nothing from it but code size.
        constexpr bool arithmetic = op == Op::Add || op == Op::Sub || op == Op::Mul || op == Op::Div ||
                                    op == Op::Neg || op == Op::Fma || op == Op::Recip;
        if (arithmetic && rows == 1) {
            adjoint_rows<op, active, true>(e, lanes, 1);
        } else {
            adjoint_rows<op, active, false>(e, lanes, rows);
        }
    }

    template <Op op> static typename E::Run value_run() { return &value_entry<op>; }

    template <Op op> static typename E::Run adjoint_run(unsigned active) {
        constexpr std::uint32_t arity = tapevm::detail::Formula<op>::arity;
        if constexpr (arity == 1) {
            return &adjoint_entry<op, 1>;
        } else if constexpr (arity == 2) {
            switch (active) {
                case 1: return &adjoint_entry<op, 1>;
                case 2: return &adjoint_entry<op, 2>;
                default: return &adjoint_entry<op, 3>;
            }
        } else {
            switch (active) {
                case 1: return &adjoint_entry<op, 1>;
                case 2: return &adjoint_entry<op, 2>;
                case 3: return &adjoint_entry<op, 3>;
                case 4: return &adjoint_entry<op, 4>;
                case 5: return &adjoint_entry<op, 5>;
                case 6: return &adjoint_entry<op, 6>;
                default: return &adjoint_entry<op, 7>;
            }
        }
    }

    /// Fills program.values (plan.compute_slots) for values [slot][lanes] at `values`.
    static void build_values(const Tape& tape, const Plan& plan, Real* values, std::size_t lanes,
                             Program<Real>& program) {
        const auto instructions = tape.instructions();
        E* e = program.values;
        for (const std::uint32_t slot : plan.compute_slots) {
            const Instruction ins = instructions[slot];
            fill_operands(ins, slot, values, lanes, *e);
            e->run = tapevm::detail::visit_op(ins.op, [](auto tag) -> typename E::Run {
                constexpr Op op = decltype(tag)::value;
                if constexpr (has_flag(op, op_flag::leaf)) {
                    return nullptr;
                } else {
                    return value_run<op>();
                }
            });
            ++e;
        }
        program.value_count = plan.compute_slots.size();
    }

    /// Fills program.adjoints (plan.reverse_steps) for adjoints [slot][rows][lanes] at
    /// `adjoints`; `zeros` is rows * lanes zeros, read where a step writes an adjoint first.
    static void build_adjoints(const Tape& tape, const Plan& plan, Real* values, Real* adjoints, const Real* zeros,
                               std::size_t rows, std::size_t lanes, Program<Real>& program) {
        const auto instructions = tape.instructions();
        E* e = program.adjoints;
        const auto adjoint_of = [&](std::uint32_t slot) {
            return adjoints + std::size_t{plan.adjoint_home[slot]} * rows * lanes;
        };
        for (const Step& step : plan.reverse_steps) {
            // Operands in `alias` share this slot's adjoint storage: nothing to do for them.
            const unsigned active = step.active & ~step.alias;
            if (active == 0) continue;
            const Instruction ins = instructions[step.slot];
            fill_operands(ins, step.slot, values, lanes, *e);
            const std::uint32_t operands[3] = {ins.a, ins.b, ins.c};
            e->seed = adjoint_of(step.slot);
            for (std::uint32_t k = 0; k < arity(ins.op); ++k) {
                Real* adjoint = adjoint_of(operands[k]);
                e->adjoint_out[k] = adjoint;
                e->adjoint_in[k] = (step.first & (1u << k)) ? zeros : adjoint;
            }
            e->run = tapevm::detail::visit_op(ins.op, [&](auto tag) -> typename E::Run {
                constexpr Op op = decltype(tag)::value;
                if constexpr (has_flag(op, op_flag::leaf)) {
                    return nullptr;
                } else if constexpr (!tapevm::detail::Formula<op>::has_partials) {
                    return nullptr;
                } else {
                    return adjoint_run<op>(active);
                }
            });
            ++e;
        }
        program.adjoint_count = static_cast<std::size_t>(e - program.adjoints);
    }

    static void fill_operands(const Instruction& ins, std::uint32_t slot, Real* values, std::size_t lanes, E& e) {
        e = E{};
        const std::uint32_t operands[3] = {ins.a, ins.b, ins.c};
        // arity() counts slot operands only (Powi's exponent is an immediate, not one).
        for (std::uint32_t k = 0; k < arity(ins.op); ++k) e.operand[k] = values + std::size_t{operands[k]} * lanes;
        if (ins.op == Op::Powi) e.immediate = powi_exponent(ins);
        e.result = values + std::size_t{slot} * lanes;
    }
};

}  // namespace tapevm::cpu::detail
