// The kernels of program.hpp's entries for one instruction set (Arch) and precision (Real):
// building a participant's programs from the plan, and the per-op entry functions. Include
// only from kernel.hpp (compiled per instruction set).
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "detail/op_formulas.hpp"
#include "plan.hpp"
#include "program.hpp"
#include "simd_math.hpp"

namespace tapevm::cpu::detail {

/// How the adjoint writes of two fused reverse steps meet (ProgramSweeps::adjoint_pair_rows).
enum class PairShape : std::uint8_t {
    plain,
    /// Both operands of the second are one slot: (adjoint + c0) + c1 with one store.
    square,
    /// The first writes one operand besides the handed one and the second one operand, the
    /// same slot: the first's sum stays in a register, the second adds to it and stores.
    merged,
};

template <class Arch, class Real> struct ProgramSweeps {
    using M = SimdMath<Arch, Real>;
    using V = typename M::T;
    using E = Entry<Real>;
    static constexpr std::size_t width = M::width;

    static V load(const Real* p, std::size_t l) { return V::load_aligned(p + l); }

    /// The value of op for operand vectors x.
    template <Op op> static V value_of(const V (&x)[3], std::int32_t immediate) {
        using F = SimdFormula<op>;
        if constexpr (F::immediate) {
            return F::template value<M>(x[0], immediate);
        } else if constexpr (F::arity == 1) {
            return F::template value<M>(x[0]);
        } else if constexpr (F::arity == 2) {
            return F::template value<M>(x[0], x[1]);
        } else {
            return F::template value<M>(x[0], x[1], x[2]);
        }
    }

    /// Operand vectors at lane offset l; with `square` (both operands of a binary op are one
    /// slot) loaded once.
    template <std::uint32_t arity, bool square>
    [[gnu::always_inline]] static void load_operands(const Real* const (&x)[3], std::size_t l, V (&v)[3]) {
        static_assert(!square || arity == 2);
        if constexpr (square) {
            v[0] = v[1] = load(x[0], l);
        } else {
            for (std::uint32_t k = 0; k < arity; ++k) v[k] = load(x[k], l);
        }
    }

    /// result = value of op over the block.
    template <Op op, bool square = false>
    static void value_entry(const E& e, std::size_t lanes, std::size_t) {
        constexpr std::uint32_t arity = tapevm::detail::Formula<op>::arity;
        const Real* const x[3] = {e.operand[0], e.operand[1], e.operand[2]};
        Real* const out = e.result;
        for (std::size_t l = 0; l < lanes; l += width) {
            V v[3];
            load_operands<arity, square>(x, l, v);
            value_of<op>(v, e.immediate).store_aligned(out + l);
        }
    }

    /// Instructions fused in pairs in the value sweep: the cheap arithmetic ops, for which a
    /// store and a load of the intermediate cost as much as the op itself.
    static constexpr bool pairable(Op op) {
        return op == Op::Add || op == Op::Sub || op == Op::Mul || op == Op::Div || op == Op::Neg;
    }

    /// second op (its operands in `positions` are the first's result) of first op, over the
    /// block; the first's result is stored when store_first.
    template <Op first, Op second, unsigned positions, bool store_first, bool square1 = false>
    static void value_pair_entry(const E& e, std::size_t lanes, std::size_t) {
        constexpr std::uint32_t arity1 = tapevm::detail::Formula<first>::arity;
        constexpr std::uint32_t arity2 = tapevm::detail::Formula<second>::arity;
        const Real* const x[3] = {e.operand[0], e.operand[1], e.operand[2]};
        const Real* y[3] = {e.second_operand[0], e.second_operand[1], e.second_operand[2]};
        Real* const out1 = e.result;
        Real* const out2 = e.second_result;
        for (std::size_t l = 0; l < lanes; l += width) {
            V v[3];
            load_operands<arity1, square1>(x, l, v);
            const V r = value_of<first>(v, 0);
            if constexpr (store_first) r.store_aligned(out1 + l);
            V w[3];
            for (std::uint32_t k = 0; k < arity2; ++k) w[k] = (positions & (1u << k)) ? r : load(y[k], l);
            value_of<second>(w, 0).store_aligned(out2 + l);
        }
    }

    template <Op first, Op second>
    static typename E::Run value_pair_run(unsigned positions, bool store_first, bool square1) {
        const auto pick = [&](auto p) -> typename E::Run {
            constexpr unsigned bits = decltype(p)::value;
            if constexpr (first == Op::Mul) {
                if (square1 && store_first) return &value_pair_entry<first, second, bits, true, true>;
                if (square1) return &value_pair_entry<first, second, bits, false, true>;
            }
            if (store_first) return &value_pair_entry<first, second, bits, true>;
            return &value_pair_entry<first, second, bits, false>;
        };
        switch (positions) {
            case 1: return pick(std::integral_constant<unsigned, 1>{});
            case 2: return pick(std::integral_constant<unsigned, 2>{});
            default: return pick(std::integral_constant<unsigned, 3>{});
        }
    }

    /// The fused entry for `first` then `second`, or null when the pair is not fused.
    static typename E::Run value_pair_run(Op first, Op second, unsigned positions, bool store_first,
                                          bool square1) {
        if (!pairable(first) || !pairable(second)) return nullptr;
        return tapevm::detail::visit_op(first, [&](auto tag1) -> typename E::Run {
            constexpr Op op1 = decltype(tag1)::value;
            if constexpr (!pairable(op1)) {
                return nullptr;
            } else {
                return tapevm::detail::visit_op(second, [&](auto tag2) -> typename E::Run {
                    constexpr Op op2 = decltype(tag2)::value;
                    if constexpr (!pairable(op2)) {
                        return nullptr;
                    } else {
                        return value_pair_run<op1, op2>(positions, store_first, square1);
                    }
                });
            }
        });
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

    /// Whether op's partials are constants (they read nothing): then they are +-1 (the ops
    /// listed), and partial * seed is NaN exactly when the rule's contribution is, and differs
    /// from it only in the sign of a zero, which adding to an adjoint cannot show.
    template <Op op> static constexpr bool constant_partials() {
        constexpr bool constant = tapevm::detail::Formula<op>::partial_reads == 0;
        static_assert(!constant || op == Op::Add || op == Op::Sub || op == Op::Neg || op == Op::Fract,
                      "an op whose partials read nothing: check that none of them is 0");
        return constant;
    }

    /// c[k] = product(d[k], seed) for the k in `active`, with one NaN test for all of them
    /// (none when `exact`: the partials are constants, constant_partials()). Always
    /// inlined: as a call it would pass every vector through memory.
    template <unsigned active, std::uint32_t arity, bool exact = false>
    [[gnu::always_inline]] static void products(const V (&d)[arity], V seed, V (&c)[arity]) {
        auto nan = xsimd::batch_bool<Real, Arch>(false);
        for (std::uint32_t k = 0; k < arity; ++k) {
            if (!(active & (1u << k))) continue;
            c[k] = d[k] * seed;
            if constexpr (!exact) nan = nan | xsimd::isnan(c[k]);
        }
        if (!exact && xsimd::any(nan)) [[unlikely]] {
            for (std::uint32_t k = 0; k < arity; ++k) {
                if (active & (1u << k)) c[k] = tapevm::detail::contribution<M>(d[k], seed);
            }
        }
    }

    /// Operand k's adjoint += partial k * seed, for the operands in `active`, every row
    /// (`rows`, or fixed_rows when not 0). `square`: both operands of a binary op are one
    /// slot (x * x), whose adjoint takes (adjoint + c0) + c1 with one store.
    template <Op op, unsigned active, std::size_t fixed_rows, bool square = false>
    static void adjoint_rows(const E& e, std::size_t lanes, std::size_t rows) {
        using F = SimdFormula<op>;
        constexpr std::uint32_t arity = F::arity;
        static_assert(!square || (arity == 2 && active == 3));
        if constexpr (fixed_rows != 0) rows = fixed_rows;
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
                V c[arity];
                products<active, arity, constant_partials<op>()>(d, load(seeds, i), c);
                if constexpr (square) {
                    // The same sums as two writes: operand 1's read is operand 0's write.
                    ((load(in[0], i) + c[0]) + c[1]).store_aligned(out[0] + i);
                    continue;
                }
                // In operand order, each read after the previous write: x * x adds both terms.
                for (std::uint32_t k = 0; k < arity; ++k) {
                    if (!(active & (1u << k))) continue;
                    (load(in[k], i) + c[k]).store_aligned(out[k] + i);
                }
            }
        }
    }

    /// Formula<op>::partials at lane offset l: x the operands' values, r the result's.
    template <Op op>
    static void partials_at(const Real* const (&x)[3], const Real* r, std::size_t l,
                            V (&d)[tapevm::detail::Formula<op>::arity]) {
        using F = SimdFormula<op>;
        static_assert(!F::immediate);
        if constexpr (F::arity == 1) {
            F::template partials<M>(load(x[0], l), load(r, l), d);
        } else if constexpr (F::arity == 2) {
            F::template partials<M>(load(x[0], l), load(x[1], l), load(r, l), d);
        } else {
            F::template partials<M>(load(x[0], l), load(x[1], l), load(x[2], l), load(r, l), d);
        }
    }

    /// Two reverse steps in one entry: `second` is the step of `first`'s operands in
    /// `positions`, whose adjoint only `first` writes; that adjoint stays in a register.
    /// Each adjoint sees the same operations in the same order as with two entries.
    /// `shape`: PairShape, how the two steps' adjoint writes meet.
    template <Op first, unsigned active1, unsigned positions, Op second, unsigned active2,
              std::size_t fixed_rows, PairShape shape = PairShape::plain>
    static void adjoint_pair_rows(const E& e, std::size_t lanes, std::size_t rows) {
        constexpr std::uint32_t arity1 = tapevm::detail::Formula<first>::arity;
        constexpr std::uint32_t arity2 = tapevm::detail::Formula<second>::arity;
        constexpr bool square2 = shape == PairShape::square;
        constexpr bool merged = shape == PairShape::merged;
        static_assert(!square2 || (arity2 == 2 && active2 == 3));
        static_assert(!merged || (std::popcount(active1 & ~positions) == 1 && std::popcount(active2) == 1));
        if constexpr (fixed_rows != 0) rows = fixed_rows;
        const Real* const x1[3] = {e.operand[0], e.operand[1], e.operand[2]};
        const Real* const x2[3] = {e.second_operand[0], e.second_operand[1], e.second_operand[2]};
        const Real* const r1 = e.result;
        const Real* const r2 = e.second_result;
        const Real* const seeds = e.seed;
        // Local copies: the compiler cannot tell that the stores below leave the entry alone.
        const Real* in1[3];
        Real* out1[3];
        const Real* in2[3];
        Real* out2[3];
        for (std::uint32_t k = 0; k < 3; ++k) {
            in1[k] = e.adjoint_in[k];
            out1[k] = e.adjoint_out[k];
            in2[k] = e.second_adjoint_in[k];
            out2[k] = e.second_adjoint_out[k];
        }
        for (std::size_t l = 0; l < lanes; l += width) {
            V d1[arity1];
            partials_at<first>(x1, r1, l, d1);
            V d2[arity2];
            partials_at<second>(x2, r2, l, d2);
            for (std::size_t row = 0; row < rows; ++row) {
                const std::size_t i = row * lanes + l;
                V c1[arity1];
                products<active1, arity1, constant_partials<first>()>(d1, load(seeds, i), c1);
                // The second's seed: its first write reads zeros (0 + c, as stored).
                V handed(Real(0));
                // merged: the first's write that the second reads back.
                V kept(Real(0));
                for (std::uint32_t k = 0; k < arity1; ++k) {
                    if (!(active1 & (1u << k))) continue;
                    if (positions & (1u << k)) {
                        handed = handed + c1[k];
                    } else if constexpr (merged) {
                        kept = load(in1[k], i) + c1[k];
                    } else {
                        (load(in1[k], i) + c1[k]).store_aligned(out1[k] + i);
                    }
                }
                V c2[arity2];
                products<active2, arity2, constant_partials<second>()>(d2, handed, c2);
                if constexpr (square2) {
                    ((load(in2[0], i) + c2[0]) + c2[1]).store_aligned(out2[0] + i);
                    continue;
                }
                if constexpr (merged) {
                    constexpr std::uint32_t k2 = std::countr_zero(active2);
                    (kept + c2[k2]).store_aligned(out2[k2] + i);
                    continue;
                }
                for (std::uint32_t k = 0; k < arity2; ++k) {
                    if (!(active2 & (1u << k))) continue;
                    (load(in2[k], i) + c2[k]).store_aligned(out2[k] + i);
                }
            }
        }
    }

    /// Reverse steps fused in pairs: the cheap arithmetic ops.
    static constexpr bool adjoint_pairable(Op op) {
        return op == Op::Add || op == Op::Sub || op == Op::Mul || op == Op::Neg;
    }

    /// f(std::integral_constant<unsigned, v>) for the v among `values` equal to `value`
    /// (null when none is).
    template <unsigned... values, class F> static typename E::Run pick(unsigned value, F f) {
        typename E::Run run = nullptr;
        ((value == values ? (run = f(std::integral_constant<unsigned, values>{}), 0) : 0), ...);
        return run;
    }

    /// adjoint_pair_rows for `rows` rows (loops for exactly one and two rows).
    template <Op first, unsigned bits1, unsigned bits, Op second, unsigned bits2, PairShape shape>
    static typename E::Run pair_rows(std::size_t rows) {
        if (rows == 1) return &adjoint_pair_rows<first, bits1, bits, second, bits2, 1, shape>;
        if (rows == 2) return &adjoint_pair_rows<first, bits1, bits, second, bits2, 2, shape>;
        return &adjoint_pair_rows<first, bits1, bits, second, bits2, 0, shape>;
    }

    template <Op first, Op second>
    static typename E::Run adjoint_pair_run(unsigned active1, unsigned positions, unsigned active2,
                                            std::size_t rows, PairShape shape) {
        constexpr unsigned all1 = (1u << tapevm::detail::Formula<first>::arity) - 1;
        constexpr unsigned all2 = (1u << tapevm::detail::Formula<second>::arity) - 1;
        return pick<1, 2, 3>(active1, [&](auto a1) -> typename E::Run {
            constexpr unsigned bits1 = decltype(a1)::value;
            if constexpr ((bits1 & ~all1) != 0) {
                return nullptr;
            } else {
                return pick<1, 2, 3>(positions, [&](auto p) -> typename E::Run {
                    constexpr unsigned bits = decltype(p)::value;
                    if constexpr ((bits & ~bits1) != 0) {
                        return nullptr;
                    } else {
                        return pick<1, 2, 3>(active2, [&](auto a2) -> typename E::Run {
                            constexpr unsigned bits2 = decltype(a2)::value;
                            constexpr bool can_square = second == Op::Mul && bits2 == 3;
                            constexpr bool can_merge =
                                std::popcount(bits1 & ~bits) == 1 && std::popcount(bits2) == 1;
                            if constexpr ((bits2 & ~all2) != 0) {
                                return nullptr;
                            } else if (shape == PairShape::square) {
                                if constexpr (can_square)
                                    return pair_rows<first, bits1, bits, second, bits2, PairShape::square>(
                                        rows);
                                return nullptr;
                            } else if (shape == PairShape::merged) {
                                if constexpr (can_merge)
                                    return pair_rows<first, bits1, bits, second, bits2, PairShape::merged>(
                                        rows);
                                return nullptr;
                            } else {
                                return pair_rows<first, bits1, bits, second, bits2, PairShape::plain>(rows);
                            }
                        });
                    }
                });
            }
        });
    }

    /// The fused entry for reverse step `first` then `second`, or null when not fused.
    static typename E::Run adjoint_pair_run(Op first, unsigned active1, unsigned positions, Op second,
                                            unsigned active2, std::size_t rows, PairShape shape) {
        if (!adjoint_pairable(first) || !adjoint_pairable(second)) return nullptr;
        return tapevm::detail::visit_op(first, [&](auto tag1) -> typename E::Run {
            constexpr Op op1 = decltype(tag1)::value;
            if constexpr (!adjoint_pairable(op1)) {
                return nullptr;
            } else {
                return tapevm::detail::visit_op(second, [&](auto tag2) -> typename E::Run {
                    constexpr Op op2 = decltype(tag2)::value;
                    if constexpr (!adjoint_pairable(op2)) {
                        return nullptr;
                    } else {
                        return adjoint_pair_run<op1, op2>(active1, positions, active2, rows, shape);
                    }
                });
            }
        });
    }

    template <Op op, unsigned active, bool square = false>
    static void adjoint_entry(const E& e, std::size_t lanes, std::size_t rows) {
        // The arithmetic ops get loops without the row loop for gradients (one row) and
        // two rows (Jacobians of two outputs); the ops with costly partials gain nothing
        // from it but code size.
        constexpr bool arithmetic = op == Op::Add || op == Op::Sub || op == Op::Mul || op == Op::Div ||
                                    op == Op::Neg || op == Op::Fma || op == Op::Recip;
        if (arithmetic && rows == 1) {
            adjoint_rows<op, active, 1, square>(e, lanes, 1);
        } else if (arithmetic && rows == 2) {
            adjoint_rows<op, active, 2, square>(e, lanes, 2);
        } else {
            adjoint_rows<op, active, 0, square>(e, lanes, rows);
        }
    }

    template <Op op> static typename E::Run value_run(bool square) {
        if constexpr (op == Op::Mul) {
            if (square) return &value_entry<op, true>;
        }
        return &value_entry<op>;
    }

    /// `square`: both operands are one slot (adjoint_rows' square; used for Mul).
    template <Op op> static typename E::Run adjoint_run(unsigned active, bool square) {
        constexpr std::uint32_t arity = tapevm::detail::Formula<op>::arity;
        if constexpr (arity == 1) {
            return &adjoint_entry<op, 1>;
        } else if constexpr (arity == 2) {
            if constexpr (op == Op::Mul) {
                if (square && active == 3) return &adjoint_entry<op, 3, true>;
            }
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

    /// Fills program.values (plan.compute_slots) for value rows [row][lanes] at `values`.
    static void build_values(const Tape& tape, const Plan& plan, Real* values, std::size_t lanes,
                             Program<Real>& program) {
        const auto instructions = tape.instructions();
        E* e = program.values;
        const std::size_t count = plan.compute_slots.size();
        for (std::size_t position = 0; position < count; ++position) {
            const std::uint32_t slot = plan.compute_slots[position];
            const Instruction ins = instructions[slot];
            fill_operands(plan, ins, slot, values, lanes, *e);
            // The next instruction reading this one's result runs in the same entry.
            if (position + 1 < count) {
                const std::uint32_t next = plan.compute_slots[position + 1];
                const Instruction second = instructions[next];
                const std::uint32_t operands[3] = {second.a, second.b, second.c};
                unsigned positions = 0;
                for (std::uint32_t k = 0; k < arity(second.op); ++k) {
                    if (operands[k] == slot) positions |= 1u << k;
                }
                const bool store_first = plan.value_last_read[slot] > position + 1;
                const typename E::Run run =
                    positions != 0 ? value_pair_run(ins.op, second.op, positions, store_first, square(ins, 3))
                                   : nullptr;
                if (run != nullptr) {
                    E pair{};
                    fill_operands(plan, second, next, values, lanes, pair);
                    for (std::uint32_t k = 0; k < 3; ++k)
                        e->second_operand[k] = (positions & (1u << k)) ? nullptr : pair.operand[k];
                    e->second_result = pair.result;
                    e->run = run;
                    ++e;
                    ++position;
                    continue;
                }
            }
            const bool squared = square(ins, 3);
            e->run = tapevm::detail::visit_op(ins.op, [&](auto tag) -> typename E::Run {
                constexpr Op op = decltype(tag)::value;
                if constexpr (has_flag(op, op_flag::leaf)) {
                    return nullptr;
                } else {
                    return value_run<op>(squared);
                }
            });
            ++e;
        }
        program.value_count = static_cast<std::size_t>(e - program.values);
    }

    /// Fills program.adjoints (plan.reverse_steps) for adjoints [row][rows][lanes] at
    /// `adjoints`; `zeros` is rows * lanes zeros, read where a step writes an adjoint first.
    static void build_adjoints(const Tape& tape, const Plan& plan, Real* values, Real* adjoints,
                               const Real* zeros, std::size_t rows, std::size_t lanes,
                               Program<Real>& program) {
        const auto instructions = tape.instructions();
        E* e = program.adjoints;
        const auto adjoint_of = [&](std::uint32_t slot) {
            return adjoints + std::size_t{plan.adjoint_row[slot]} * rows * lanes;
        };
        const auto fill_adjoints = [&](const Step& step, const Instruction& ins, const Real** in,
                                       Real** out) {
            const std::uint32_t operands[3] = {ins.a, ins.b, ins.c};
            for (std::uint32_t k = 0; k < arity(ins.op); ++k) {
                Real* adjoint = adjoint_of(operands[k]);
                out[k] = adjoint;
                in[k] = (step.first & (1u << k)) ? zeros : adjoint;
            }
        };
        const std::size_t count = plan.reverse_steps.size();
        for (std::size_t index = 0; index < count; ++index) {
            const Step& step = plan.reverse_steps[index];
            // Operands in `alias` share this slot's adjoint storage: nothing to do for them.
            const unsigned active = step.active & ~step.alias;
            if (active == 0) continue;
            const Instruction ins = instructions[step.slot];
            fill_operands(plan, ins, step.slot, values, lanes, *e);
            const std::uint32_t operands[3] = {ins.a, ins.b, ins.c};
            e->seed = adjoint_of(step.slot);
            fill_adjoints(step, ins, e->adjoint_in, e->adjoint_out);
            // The next step, when it is that of an operand whose adjoint only this step writes.
            if (index + 1 < count) {
                const Step& next = plan.reverse_steps[index + 1];
                const Instruction second = instructions[next.slot];
                unsigned positions = 0;
                for (std::uint32_t k = 0; k < arity(ins.op); ++k) {
                    if (operands[k] == next.slot) positions |= 1u << k;
                }
                const typename E::Run run =
                    positions != 0 && (positions & active) == positions && plan.adjoint_private[next.slot]
                        ? adjoint_pair_run(ins.op, active, positions, second.op, next.active, rows,
                                           pair_shape(ins, active, positions, second, next.active))
                        : nullptr;
                if (run != nullptr) {
                    E pair{};
                    fill_operands(plan, second, next.slot, values, lanes, pair);
                    for (std::uint32_t k = 0; k < 3; ++k) e->second_operand[k] = pair.operand[k];
                    e->second_result = pair.result;
                    fill_adjoints(next, second, e->second_adjoint_in, e->second_adjoint_out);
                    e->run = run;
                    ++e;
                    ++index;
                    continue;
                }
            }
            e->run = tapevm::detail::visit_op(ins.op, [&](auto tag) -> typename E::Run {
                constexpr Op op = decltype(tag)::value;
                if constexpr (has_flag(op, op_flag::leaf)) {
                    return nullptr;
                } else if constexpr (!tapevm::detail::Formula<op>::has_partials) {
                    return nullptr;
                } else {
                    return adjoint_run<op>(active, square(ins, active));
                }
            });
            ++e;
        }
        program.adjoint_count = static_cast<std::size_t>(e - program.adjoints);
    }

    /// How the adjoint writes of a fused pair meet: the second a square, or the first's one
    /// other written operand the second's one written operand.
    static PairShape pair_shape(const Instruction& first, unsigned active1, unsigned positions,
                                const Instruction& second, unsigned active2) {
        if (square(second, active2)) return PairShape::square;
        const unsigned others = active1 & ~positions;
        if (std::popcount(others) != 1 || std::popcount(active2) != 1) return PairShape::plain;
        const std::uint32_t operands1[3] = {first.a, first.b, first.c};
        const std::uint32_t operands2[3] = {second.a, second.b, second.c};
        return operands1[std::countr_zero(others)] == operands2[std::countr_zero(active2)] ? PairShape::merged
                                                                                           : PairShape::plain;
    }

    /// Whether a binary instruction's operands, both in `active`, are one slot.
    static bool square(const Instruction& ins, unsigned active) {
        return arity(ins.op) == 2 && active == 3 && ins.a == ins.b;
    }

    static void fill_operands(const Plan& plan, const Instruction& ins, std::uint32_t slot, Real* values,
                              std::size_t lanes, E& e) {
        e = E{};
        const std::uint32_t operands[3] = {ins.a, ins.b, ins.c};
        const auto row = [&](std::uint32_t s) { return values + std::size_t{plan.value_row[s]} * lanes; };
        // arity() counts slot operands only (Powi's exponent is an immediate, not one).
        for (std::uint32_t k = 0; k < arity(ins.op); ++k) e.operand[k] = row(operands[k]);
        if (ins.op == Op::Powi) e.immediate = powi_exponent(ins);
        e.result = row(slot);
    }
};

}  // namespace tapevm::cpu::detail
