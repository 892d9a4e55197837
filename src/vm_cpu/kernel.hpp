// The block interpreter, written once over an instruction set (xsimd Arch) and a precision
// (Real), and instantiated per instruction set by kernel_<isa>.cpp, each compiled with that
// set's flags. Include it from those files only.
//
// A block is `lanes` consecutive points (a multiple of the SIMD width; the last block of a
// batch is padded with zero inputs whose results are never written out). Every buffer is
// [slot][lanes] (values) or [slot][row][lanes] (adjoint rows, tangent directions), so each
// instruction is one loop over the block's vectors: the op dispatch (visit_op) is paid once
// per instruction per block. The per-op arithmetic is the op table's Formula<Op> with the
// SIMD policy (simd_math.hpp), or with dual numbers over it for hvp.
//
// Each sweep's per-op lambda is out of line (noinline): visit_op's switch is then a jump to
// one small function per op, instead of one large function whose prologue every
// instruction pays.
//
// Code here is compiled with the instruction set's flags, so it calls no out-of-line
// function shared with other translation units (a linker may keep any one copy of an inline
// function): anything that allocates or grows a container (guards, reports) is in vm.cpp.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <type_traits>

#include "background.hpp"
#include "detail/dual.hpp"
#include "detail/pairwise_sum.hpp"
#include "detail/op_formulas.hpp"
#include "point_program.hpp"
#include "program_sweeps.hpp"
#include "request.hpp"
#include "simd_math.hpp"
#include "transpose.hpp"

namespace tapevm::cpu::detail {

template <class Arch, class Real> struct Kernel {
    using M = SimdMath<Arch, Real>;
    using V = typename M::T;
    using D = tapevm::detail::Dual<V, M>;
    using DM = tapevm::detail::DualMath<V, M>;
    static constexpr std::size_t width = M::width;
    /// The formulas for values of type X: SimdFormula for plain batches (dual numbers get
    /// their operators from dual.hpp, which goes through the policy).
    template <Op op, class X>
    using FormulaOf = std::conditional_t<std::is_same_v<X, V>, SimdFormula<op>, tapevm::detail::Formula<op>>;

    // Storage views: at(slot[, row]) gives a Pointer to the slot's lanes, load/store take a
    // Pointer and a lane offset (a multiple of width). Loops take their pointers first, so
    // the compiler keeps them in registers.
    /// [row][lanes]; a slot's row is row_of[slot] (Plan::value_row), or the slot itself
    /// where row_of is null (hvp).
    struct Values {
        using Pointer = Real*;
        Real* data;
        std::size_t lanes;
        const std::uint32_t* row_of = nullptr;
        Real* at(std::uint32_t slot) const {
            return data + std::size_t{row_of != nullptr ? row_of[slot] : slot} * lanes;
        }
        static V load(Real* p, std::size_t l) { return V::load_aligned(p + l); }
        static void store(Real* p, std::size_t l, V v) { v.store_aligned(p + l); }
    };
    struct DualPointer {
        Real* value;
        Real* tangent;
    };
    struct DualValues {
        using Pointer = DualPointer;
        Values value;
        Values tangent;
        DualPointer at(std::uint32_t slot) const { return {value.at(slot), tangent.at(slot)}; }
        static D load(DualPointer p, std::size_t l) {
            return D(V::load_aligned(p.value + l), V::load_aligned(p.tangent + l));
        }
        static void store(DualPointer p, std::size_t l, const D& d) {
            d.value.store_aligned(p.value + l);
            d.tangent.store_aligned(p.tangent + l);
        }
    };
    /// [slot][row][lanes], the slot's rows at row_of[slot] (Plan::adjoint_row) instead
    /// where row_of is not null.
    struct Rows {
        using Pointer = Real*;
        Real* data;
        std::size_t rows;
        std::size_t lanes;
        const std::uint32_t* row_of = nullptr;
        Real* at(std::uint32_t slot, std::size_t row) const {
            return data + (std::size_t{row_of != nullptr ? row_of[slot] : slot} * rows + row) * lanes;
        }
        static V load(Real* p, std::size_t l) { return V::load_aligned(p + l); }
        static void store(Real* p, std::size_t l, V v) { v.store_aligned(p + l); }
    };
    /// Dual adjoints, one row.
    struct DualRows {
        using Pointer = DualPointer;
        DualValues values;
        DualPointer at(std::uint32_t slot, std::size_t) const { return values.at(slot); }
        static D load(DualPointer p, std::size_t l) { return DualValues::load(p, l); }
        static void store(DualPointer p, std::size_t l, const D& d) { DualValues::store(p, l, d); }
    };

    /// The operand pointers of `ins` (slot operands only; Powi's immediate is not one).
    template <class Store, std::uint32_t arity>
    static void operand_pointers(const Store& store, const Instruction& ins,
                                 typename Store::Pointer (&pointers)[arity == 0 ? 1 : arity]) {
        const std::uint32_t operands[3] = {ins.a, ins.b, ins.c};
        for (std::uint32_t k = 0; k < arity; ++k) pointers[k] = store.at(operands[k]);
    }

    /// Formula<op>::partials at lane offset l into d; x holds the operand pointers, r the result's.
    template <Op op, class MM, class X, class Store, class Pointer>
    static void partials_at(const Instruction& ins, const Pointer* x, Pointer r, std::size_t l,
                            X (&d)[tapevm::detail::Formula<op>::arity]) {
        using F = FormulaOf<op, X>;
        const X result = Store::load(r, l);
        if constexpr (F::immediate) {
            F::template partials<MM>(Store::load(x[0], l), powi_exponent(ins), result, d);
        } else if constexpr (F::arity == 1) {
            F::template partials<MM>(Store::load(x[0], l), result, d);
        } else if constexpr (F::arity == 2) {
            F::template partials<MM>(Store::load(x[0], l), Store::load(x[1], l), result, d);
        } else {
            F::template partials<MM>(Store::load(x[0], l), Store::load(x[1], l), Store::load(x[2], l), result,
                                     d);
        }
    }

    /// The value sweep over every non-leaf slot (inputs, params and constants are in place).
    template <class MM, class X, class Store>
    static void evaluate(const Tape& tape, const Plan& plan, const Store& values, std::size_t lanes,
                         Background<Arch, Real>& background) {
        const auto instructions = tape.instructions();
        for (const std::uint32_t slot : plan.compute_slots) {
            background.issue();
            const Instruction ins = instructions[slot];
            tapevm::detail::visit_op(
                ins.op, [&](auto tag) __attribute__((noinline)) {
                    constexpr Op op = decltype(tag)::value;
                    if constexpr (!has_flag(op, op_flag::leaf)) {
                        using F = FormulaOf<op, X>;
                        typename Store::Pointer x[F::arity];
                        operand_pointers<Store, F::arity>(values, ins, x);
                        const typename Store::Pointer out = values.at(slot);
                        for (std::size_t l = 0; l < lanes; l += width) {
                            if constexpr (F::immediate) {
                                Store::store(out, l,
                                             F::template value<MM>(Store::load(x[0], l), powi_exponent(ins)));
                            } else if constexpr (F::arity == 1) {
                                Store::store(out, l, F::template value<MM>(Store::load(x[0], l)));
                            } else if constexpr (F::arity == 2) {
                                Store::store(
                                    out, l,
                                    F::template value<MM>(Store::load(x[0], l), Store::load(x[1], l)));
                            } else {
                                Store::store(out, l,
                                             F::template value<MM>(Store::load(x[0], l), Store::load(x[1], l),
                                                                   Store::load(x[2], l)));
                            }
                        }
                    }
                });
        }
    }

    /// Forward mode over `tangents.rows` directions; input rows hold the seeds.
    static void tangent_sweep(const Tape& tape, const Plan& plan, const Values& values, const Rows& tangents,
                              Background<Arch, Real>& background) {
        const auto instructions = tape.instructions();
        const std::size_t lanes = values.lanes;
        const std::size_t rows = tangents.rows;
        for (const Step& step : plan.tangent_steps) {
            background.issue();
            const Instruction ins = instructions[step.slot];
            tapevm::detail::visit_op(
                ins.op, [&](auto tag) __attribute__((noinline)) {
                    constexpr Op op = decltype(tag)::value;
                    if constexpr (!has_flag(op, op_flag::leaf)) {
                        using F = tapevm::detail::Formula<op>;
                        if constexpr (F::has_partials) {
                            Real* x[F::arity];
                            operand_pointers<Values, F::arity>(values, ins, x);
                            Real* t[F::arity];
                            const std::uint32_t operands[3] = {ins.a, ins.b, ins.c};
                            for (std::uint32_t k = 0; k < F::arity; ++k) t[k] = tangents.at(operands[k], 0);
                            Real* const r = values.at(step.slot);
                            Real* const out = tangents.at(step.slot, 0);
                            const unsigned active = step.active;
                            for (std::size_t l = 0; l < lanes; l += width) {
                                V d[F::arity];
                                partials_at<op, M, V, Values>(ins, x, r, l, d);
                                for (std::size_t row = 0; row < rows; ++row) {
                                    const std::size_t offset = row * lanes + l;
                                    V sum(Real(0));
                                    bool first = true;
                                    for (std::uint32_t k = 0; k < F::arity; ++k) {
                                        if (!(active & (1u << k))) continue;
                                        const V c = tapevm::detail::contribution<M>(
                                            d[k], V::load_aligned(t[k] + offset));
                                        sum = first ? c : sum + c;
                                        first = false;
                                    }
                                    sum.store_aligned(out + offset);
                                }
                            }
                        }
                    }
                });
        }
    }

    /// Reverse mode over `rows` adjoint rows; output seeds are in place.
    template <class MM, class X, class Store, class Adjoints>
    static void reverse_sweep(const Tape& tape, const Plan& plan, const Store& values,
                              const Adjoints& adjoints, std::size_t rows, std::size_t lanes,
                              Background<Arch, Real>& background) {
        const auto instructions = tape.instructions();
        using AP = typename Adjoints::Pointer;
        for (const Step& step : plan.reverse_steps) {
            background.issue();
            const Instruction ins = instructions[step.slot];
            tapevm::detail::visit_op(
                ins.op, [&](auto tag) __attribute__((noinline)) {
                    constexpr Op op = decltype(tag)::value;
                    if constexpr (!has_flag(op, op_flag::leaf)) {
                        using F = tapevm::detail::Formula<op>;
                        if constexpr (F::has_partials) {
                            typename Store::Pointer x[F::arity];
                            operand_pointers<Store, F::arity>(values, ins, x);
                            const typename Store::Pointer r = values.at(step.slot);
                            const std::uint32_t operands[3] = {ins.a, ins.b, ins.c};
                            const unsigned active = step.active;
                            const unsigned first = step.first;
                            AP a[F::arity];
                            for (std::uint32_t k = 0; k < F::arity; ++k) a[k] = adjoints.at(operands[k], 0);
                            const AP seeds = adjoints.at(step.slot, 0);
                            // Partials once per vector, applied to every row (row r of a slot is
                            // r * lanes further on).
                            for (std::size_t l = 0; l < lanes; l += width) {
                                X d[F::arity];
                                partials_at<op, MM, X, Store>(ins, x, r, l, d);
                                for (std::size_t row = 0; row < rows; ++row) {
                                    const std::size_t index = row * lanes + l;
                                    const X seed = Adjoints::load(seeds, index);
                                    for (std::uint32_t k = 0; k < F::arity; ++k) {
                                        if (!(active & (1u << k))) continue;
                                        const X c = tapevm::detail::contribution<MM>(d[k], seed);
                                        if (first & (1u << k)) {
                                            Adjoints::store(a[k], index, c);
                                        } else {
                                            Adjoints::store(a[k], index, Adjoints::load(a[k], index) + c);
                                        }
                                    }
                                }
                            }
                        }
                    }
                });
        }
    }

    /// dst column c (at dst + c * stride) lane l = src[(first + l) * columns + c], zero in the
    /// padding lanes; src holds `total` rows. Tiles of `width` points by `width` columns move
    /// with vector loads and an in-register transpose. The last, narrower tile of columns is
    /// read as a whole tile too (reading on into the next row) except where that would read
    /// past the end of src; the rest goes one value at a time.
    static void gather(Real* dst, std::size_t stride, const Real* src, std::size_t columns, std::size_t first,
                       std::size_t count, std::size_t lanes, std::size_t total) {
        using T = Transpose<Arch, Real>;
        const Real* rows = src + first * columns;
        const std::size_t whole = count - count % width;
        const std::size_t tiled = columns - columns % width;
        for (std::size_t l0 = 0; l0 < whole; l0 += width) {
            const Real* tile = rows + l0 * columns;
            for (std::size_t c0 = 0; c0 < tiled; c0 += width) {
                V v[width];
                for (std::size_t l = 0; l < width; ++l) v[l] = V::load_unaligned(tile + l * columns + c0);
                T::transpose(v);
                for (std::size_t c = 0; c < width; ++c) v[c].store_aligned(dst + (c0 + c) * stride + l0);
            }
            if (tiled == columns) continue;
            const std::size_t end_of_reads = (first + l0 + width - 1) * columns + tiled + width;
            if (end_of_reads <= total * columns) {
                V v[width];
                for (std::size_t l = 0; l < width; ++l) v[l] = V::load_unaligned(tile + l * columns + tiled);
                T::transpose(v);
                for (std::size_t c = tiled; c < columns; ++c)
                    v[c - tiled].store_aligned(dst + c * stride + l0);
            } else {
                for (std::size_t c = tiled; c < columns; ++c) {
                    for (std::size_t l = 0; l < width; ++l) dst[c * stride + l0 + l] = tile[l * columns + c];
                }
            }
        }
        for (std::size_t l = whole; l < count; ++l) {
            for (std::size_t c = 0; c < columns; ++c) dst[c * stride + l] = rows[l * columns + c];
        }
        for (std::size_t c = 0; c < columns; ++c) {
            for (std::size_t l = count; l < lanes; ++l) dst[c * stride + l] = Real(0);
        }
    }

    static constexpr std::size_t scatter_chunk = 64;

    /// The block's results, results[(first + l) * columns + c] = column(c)[l] (0 where
    /// column(c) is null). Streamed results (large result arrays, which no cache holds anyway)
    /// go to the staging buffer and from there, with non-temporal stores, which do not read
    /// the destination lines first, to the results while the next block computes
    /// (background.hpp); what the previous block left pending is written first.
    template <class Column>
    static void deliver(const Request<Real>& request, BlockState<Real>& state, std::size_t columns,
                        std::size_t first, std::size_t count, Column column) {
        Real* const destination = request.results + first * columns;
        if (!request.stream_results) {
            scatter(destination, columns, count, column);
            return;
        }
        using S = ResultStream<Arch, Real>;
        S::finish(state.pending, false);
        scatter(state.staging, columns, count, column, true);
        S::begin(state.pending, destination, state.staging, count * columns);
    }

    static void finish(BlockState<Real>& state) { ResultStream<Arch, Real>::finish(state.pending, true); }

    /// rows[l * columns + c] = column(c)[l] (0 where column(c) is null) for l < count, a tile
    /// of `width` points at a time, transposed in registers.
    template <class Column>
    static void scatter(Real* rows, std::size_t columns, std::size_t count, Column column,
                        bool slack = false) {
        if (columns <= scatter_chunk) {
            scatter_rows(rows, columns, count, column, slack);
        } else {
            scatter_wide(rows, columns, count, column);
        }
    }

    /// scatter() for rows of at most scatter_chunk columns. In place when every row is whole
    /// vectors, or with `slack` (rows may take `width` more reals past their end): a tile of
    /// columns at a time over all points, the last, narrower tile first, stored whole so that
    /// it spills into the next row, whose own tiles then overwrite the spill. Otherwise a
    /// tile of points at a time is built in `staging` the same way and copied out.
    template <class Column>
    static void scatter_rows(Real* const rows, std::size_t columns, std::size_t count, Column column,
                             bool slack) {
        const std::size_t whole = count - count % width;
        const std::size_t tiled = columns - columns % width;
        if (tiled == columns || slack) {
            const auto tile_at = [&](std::size_t t) {
                const Real* sources[width];
                for (std::size_t c = 0; c < width; ++c)
                    sources[c] = t + c < columns ? column(t + c) : nullptr;
                scatter_tiles(rows + t, columns, whole, sources);
            };
            if (tiled != columns) tile_at(tiled);
            for (std::size_t t = 0; t < tiled; t += width) tile_at(t);
        } else {
            scatter_staged(rows, columns, whole, column);
        }
        const Real* sources[scatter_chunk] = {};
        for (std::size_t c = 0; c < columns; ++c) sources[c] = column(c);
        for (std::size_t l = whole; l < count; ++l) {
            for (std::size_t c = 0; c < columns; ++c)
                rows[l * columns + c] = sources[c] == nullptr ? Real(0) : sources[c][l];
        }
    }

    /// rows[l * columns + c] = sources[c][l] (0 where sources[c] is null) for l < whole (a
    /// multiple of the width) and c < width, a width x width tile at a time.
    static void scatter_tiles(Real* const rows, std::size_t columns, std::size_t whole,
                              const Real* const (&sources)[width]) {
        using T = Transpose<Arch, Real>;
        bool zeros = false;
        for (std::size_t c = 0; c < width; ++c) zeros = zeros || sources[c] == nullptr;
        for (std::size_t l0 = 0; l0 < whole; l0 += width) {
            V v[width];
            if (zeros) {
                for (std::size_t c = 0; c < width; ++c)
                    v[c] = sources[c] == nullptr ? V(Real(0)) : V::load_aligned(sources[c] + l0);
            } else {
                for (std::size_t c = 0; c < width; ++c) v[c] = V::load_aligned(sources[c] + l0);
            }
            T::transpose(v);
            Real* const tile = rows + l0 * columns;
            for (std::size_t l = 0; l < width; ++l) v[l].store_unaligned(tile + l * columns);
        }
    }

    /// scatter_rows() without room past the end: each tile of `width` points is built in a
    /// local buffer (with the spilling last tile of columns) and copied to rows.
    template <class Column>
    static void scatter_staged(Real* const rows, std::size_t columns, std::size_t whole, Column column) {
        using T = Transpose<Arch, Real>;
        const Real* sources[scatter_chunk + width] = {};
        for (std::size_t c = 0; c < columns; ++c) sources[c] = column(c);
        const std::size_t tiled = columns - columns % width;
        alignas(64) Real staging[(scatter_chunk + 1) * width];
        const auto store_tile = [&](std::size_t t, std::size_t l0) {
            V v[width];
            for (std::size_t c = 0; c < width; ++c) {
                const Real* src = sources[t + c];
                v[c] = src == nullptr ? V(Real(0)) : V::load_aligned(src + l0);
            }
            T::transpose(v);
            for (std::size_t l = 0; l < width; ++l) v[l].store_unaligned(staging + l * columns + t);
        };
        for (std::size_t l0 = 0; l0 < whole; l0 += width) {
            store_tile(tiled, l0);
            for (std::size_t t = 0; t < tiled; t += width) store_tile(t, l0);
            Real* const destination = rows + l0 * columns;
            std::size_t i = 0;
            for (; i + width <= width * columns; i += width)
                V::load_aligned(staging + i).store_unaligned(destination + i);
            for (; i < width * columns; ++i) destination[i] = staging[i];
        }
    }

    /// scatter() for wider rows, in chunks of columns, row by row.
    template <class Column>
    static void scatter_wide(Real* const rows, std::size_t columns, std::size_t count, Column column) {
        using T = Transpose<Arch, Real>;
        const Real* sources[scatter_chunk];
        const std::size_t whole = count - count % width;
        for (std::size_t c0 = 0; c0 < columns; c0 += scatter_chunk) {
            const std::size_t c1 = std::min(columns, c0 + scatter_chunk);
            const std::size_t tiled = c1 - (c1 - c0) % width;
            for (std::size_t c = c0; c < c1; ++c) sources[c - c0] = column(c);
            for (std::size_t l0 = 0; l0 < whole; l0 += width) {
                Real* const tile = rows + l0 * columns;
                for (std::size_t t = c0; t < tiled; t += width) {
                    V v[width];
                    for (std::size_t c = 0; c < width; ++c) {
                        const Real* src = sources[t + c - c0];
                        v[c] = src == nullptr ? V(Real(0)) : V::load_aligned(src + l0);
                    }
                    T::transpose(v);
                    for (std::size_t l = 0; l < width; ++l) v[l].store_unaligned(tile + l * columns + t);
                }
                for (std::size_t c = tiled; c < c1; ++c) {
                    const Real* src = sources[c - c0];
                    for (std::size_t l = 0; l < width; ++l)
                        tile[l * columns + c] = src == nullptr ? Real(0) : src[l0 + l];
                }
            }
            for (std::size_t l = whole; l < count; ++l) {
                for (std::size_t c = c0; c < c1; ++c) {
                    const Real* src = sources[c - c0];
                    rows[l * columns + c] = src == nullptr ? Real(0) : src[l];
                }
            }
        }
    }

    static void fill(Real* dst, std::size_t lanes, Real value) {
        for (std::size_t l = 0; l < lanes; l += width) V(value).store_aligned(dst + l);
    }

    static void run_block(const Tape& tape, const Plan& plan, const Request<Real>& request,
                          BlockState<Real>& state, std::size_t first, std::size_t count) {
        const std::size_t lanes = state.lanes;
        const std::size_t n = plan.inputs;
        const std::size_t m = plan.outputs;
        const std::size_t p = plan.params;
        const std::size_t slots = plan.slots;
        const Batch<Real>& batch = *request.batch;
        const bool hvp = request.mode == Mode::hvp;
        // hvp keeps a row per slot (run_hvp); the other modes share rows (Plan::value_row).
        const Values values{state.scratch, lanes, hvp ? nullptr : plan.value_row.data()};
        Real* after_values = state.scratch + (hvp ? slots : plan.value_rows) * lanes;
        const Values dual_tangents{after_values, lanes};  // hvp only

        if (!state.prefilled) {
            for (std::size_t i = 0; i < plan.const_slots.size(); ++i) {
                fill(values.at(plan.const_slots[i]), lanes, static_cast<Real>(plan.const_values[i]));
                if (hvp) fill(dual_tangents.at(plan.const_slots[i]), lanes, Real(0));
            }
            for (std::size_t j = 0; j < p; ++j) {
                if (!request.params_per_point)
                    fill(values.at(static_cast<std::uint32_t>(n + j)), lanes, batch.params[j]);
                if (hvp) fill(dual_tangents.at(static_cast<std::uint32_t>(n + j)), lanes, Real(0));
            }
            if (request.mode == Mode::tangent && request.seeds == nullptr) {
                const Rows tangents{after_values, request.rows, lanes};
                for (std::uint32_t i = 0; i < n; ++i) {
                    for (std::size_t j = 0; j < request.rows; ++j)
                        fill(tangents.at(i, j), lanes, Real(i == j ? 1 : 0));
                }
            }
            if (!state.programs_built) build_programs(tape, plan, request, state);
            state.programs_built = true;
            state.prefilled = true;
        }
        if (request.tensors) {
            for (std::uint32_t i = 0; i < n; ++i)
                tensor_load(request.tensor_inputs[i], first, count, values.at(i), lanes, false);
        } else {
            gather(values.at(0), lanes, batch.inputs.data(), gathered_inputs(plan, request), first, count,
                   lanes, batch.points);
            if (request.has_shared) {  // every block: the rows of inputs are reused after their last reader
                for (std::size_t i = request.shared_from; i < n; ++i)
                    fill(values.at(static_cast<std::uint32_t>(i)), lanes,
                         request.shared[i - request.shared_from]);
            }
        }
        if (request.params_per_point)
            gather(values.at(static_cast<std::uint32_t>(n)), lanes, batch.params.data(), p, first, count,
                   lanes, batch.points);

        // One issue() per program entry (per instruction in the tangent and hvp sweeps).
        std::size_t issues =
            hvp ? plan.compute_slots.size() + plan.reverse_steps.size() : state.program.value_count;
        if (request.mode == Mode::tangent) issues += plan.tangent_steps.size();
        if (request.mode == Mode::reverse) issues += state.program.adjoint_count;
        Background<Arch, Real> background(prefetch_next(plan, request, state), state.pending, issues);
        if (hvp) {
            run_hvp(tape, plan, request, state, first, count, background);
            return;
        }
        run_program(state.program.values, state.program.value_count, lanes, 1, background);

        switch (request.mode) {
            case Mode::forward: {
                if (request.tensors) {
                    for (std::size_t k = 0; k < m; ++k)
                        tensor_store(request.tensor_results[k], first, count, values.at(tape.outputs()[k]));
                    break;
                }
                deliver(request, state, m, first, count,
                        [&](std::size_t k) { return values.at(tape.outputs()[k]); });
                break;
            }
            case Mode::tangent: {
                const Rows tangents{after_values, request.rows, lanes};
                if (request.seeds != nullptr)
                    gather(tangents.at(0, 0), lanes, request.seeds, n, first, count, lanes, batch.points);
                tangent_sweep(tape, plan, values, tangents, background);
                const std::size_t rows = request.rows;
                deliver(request, state, m * rows, first, count, [&](std::size_t column) -> const Real* {
                    const std::uint32_t slot = tape.outputs()[column / rows];
                    return plan.active[slot] ? tangents.at(slot, column % rows) : nullptr;
                });
                break;
            }
            case Mode::reverse: {
                const std::size_t rows = request.rows;
                const Rows adjoints{after_values, rows, lanes, plan.adjoint_row.data()};
                seed_outputs(tape, plan, request, adjoints, first, count);
                run_program(state.program.adjoints, state.program.adjoint_count, lanes, rows, background);
                if (request.tensors) {
                    for (std::uint32_t i = 0; i < n; ++i) {
                        if (request.tensor_results[i].data == nullptr) continue;
                        tensor_store(request.tensor_results[i], first, count,
                                     plan.input_reached[i] ? adjoints.at(i, 0) : nullptr);
                    }
                    break;
                }
                const std::size_t gathered = gathered_inputs(plan, request);
                deliver(
                    request, state, rows * gathered, first, count, [&](std::size_t column) -> const Real* {
                        const std::uint32_t input = static_cast<std::uint32_t>(column % gathered);
                        return plan.input_reached[input] ? adjoints.at(input, column / gathered) : nullptr;
                    });
                if (request.has_shared) {
                    double* sums = request.group_sums + first / lanes * (n - request.shared_from);
                    for (std::size_t i = request.shared_from; i < n; ++i) {
                        const auto input = static_cast<std::uint32_t>(i);
                        sums[i - request.shared_from] =
                            plan.input_reached[input] ? tapevm::detail::tree_sum(adjoints.at(input, 0), count)
                                                      : 0.0;
                    }
                }
                break;
            }
            case Mode::hvp: break;
        }
    }

    /// The participant's programs (program.hpp) over its scratch; the zero rows they read
    /// where a reverse step writes an adjoint first.
    static void build_programs(const Tape& tape, const Plan& plan, const Request<Real>& request,
                               BlockState<Real>& state) {
        using P = ProgramSweeps<Arch, Real>;
        const std::size_t lanes = state.lanes;
        Real* values = state.scratch;
        if (request.mode == Mode::hvp) return;
        P::build_values(tape, plan, values, lanes, state.program);
        if (request.mode != Mode::reverse) return;
        const std::size_t rows = request.rows;
        Real* adjoints = values + std::size_t{plan.value_rows} * lanes;
        Real* zeros = adjoints + std::size_t{plan.adjoint_rows} * rows * lanes;
        for (std::size_t i = 0; i < rows * lanes; i += width) V(Real(0)).store_aligned(zeros + i);
        P::build_adjoints(tape, plan, values, adjoints, zeros, rows, lanes, state.program);
    }

    static void run_program(const Entry<Real>* entries, std::size_t count, std::size_t lanes,
                            std::size_t rows, Background<Arch, Real>& background) {
        for (const Entry<Real>* e = entries; e != entries + count; ++e) {
            background.issue();
            e->run(*e, lanes, rows);
        }
    }

    /// Tensor bindings (float only: the Vm makes no tensor request in double).
    static void tensor_load(const TensorBinding& binding, std::size_t first, std::size_t count, Real* row,
                            std::size_t lanes, bool add) {
        if constexpr (std::is_same_v<Real, float>) load_binding(binding, first, count, row, lanes, add);
    }
    static void tensor_store(const TensorBinding& binding, std::size_t first, std::size_t count,
                             const Real* row) {
        if constexpr (std::is_same_v<Real, float>) store_binding(binding, first, count, row);
    }

    /// The next block's inputs, per-point parameters and (unless streamed) results.
    static Prefetch prefetch_next(const Plan& plan, const Request<Real>& request,
                                  const BlockState<Real>& state) {
        Prefetch prefetch;
        const std::size_t first = state.next_first;
        const std::size_t count = state.next_count;
        if (count == 0 || request.tensors) return prefetch;
        const Batch<Real>& batch = *request.batch;
        const std::size_t p = plan.params;
        const std::size_t gathered = gathered_inputs(plan, request);
        prefetch.add(batch.inputs.data() + first * gathered, count * gathered * sizeof(Real), false);
        if (request.params_per_point)
            prefetch.add(batch.params.data() + first * p, count * p * sizeof(Real), false);
        const std::size_t columns = result_columns(plan, request);
        Real* const destination = request.results + first * columns;
        const std::size_t reals = count * columns;
        if (!request.stream_results) {
            prefetch.add(destination, reals * sizeof(Real), true);
        } else {
            // The partial lines at either end, which take plain stores (ResultStream::begin).
            using S = ResultStream<Arch, Real>;
            if (S::head(destination, reals) != 0) prefetch.add(destination, 1, true);
            if (S::body_end(destination, reals) != reals) prefetch.add(destination + reals - 1, 1, true);
        }
        return prefetch;
    }

    /// Output seeds of the reverse sweep: unit rows, or the caller's cotangents (one row).
    static void seed_outputs(const Tape& tape, const Plan& plan, const Request<Real>& request,
                             const Rows& adjoints, std::size_t first, std::size_t count) {
        const std::size_t m = plan.outputs;
        const std::size_t lanes = adjoints.lanes;
        for (std::size_t k = 0; k < m; ++k) {
            const std::uint32_t slot = tape.outputs()[k];
            if (request.tensors) {  // one row
                tensor_load(request.tensor_seeds[k], first, count, adjoints.at(slot, 0), lanes,
                            !plan.seed_first[k]);
                continue;
            }
            for (std::size_t row = 0; row < adjoints.rows; ++row) {
                Real* adjoint = adjoints.at(slot, row);
                if (request.seeds == nullptr) {
                    const V seed(Real(adjoints.rows == 1 || row == k ? 1 : 0));
                    for (std::size_t l = 0; l < lanes; l += width) {
                        (plan.seed_first[k] ? seed : V::load_aligned(adjoint + l) + seed)
                            .store_aligned(adjoint + l);
                    }
                } else {
                    const Real* cotangents = request.seeds + first * m + k;
                    for (std::size_t l = 0; l < lanes; ++l) {
                        const Real seed = l < count ? cotangents[l * m] : Real(0);
                        adjoint[l] = (plan.seed_first[k] ? Real(0) : adjoint[l]) + seed;
                    }
                }
            }
        }
    }

    static void run_hvp(const Tape& tape, const Plan& plan, const Request<Real>& request,
                        BlockState<Real>& state, std::size_t first, std::size_t count,
                        Background<Arch, Real>& background) {
        const std::size_t lanes = state.lanes;
        const std::size_t slots = plan.slots;
        const std::size_t n = plan.inputs;
        const std::size_t m = plan.outputs;
        Real* base = state.scratch;
        const DualValues values{{base, lanes}, {base + slots * lanes, lanes}};
        const DualRows adjoints{{{base + 2 * slots * lanes, lanes}, {base + 3 * slots * lanes, lanes}}};
        gather(values.tangent.at(0), lanes, request.directions, n, first, count, lanes,
               request.batch->points);
        evaluate<DM, D>(tape, plan, values, lanes, background);
        for (std::size_t k = 0; k < m; ++k) {
            const std::uint32_t slot = tape.outputs()[k];
            Real* value = adjoints.values.value.at(slot);
            Real* tangent = adjoints.values.tangent.at(slot);
            const Real* cotangents = request.seeds + first * m + k;
            for (std::size_t l = 0; l < lanes; ++l) {
                const Real seed = l < count ? cotangents[l * m] : Real(0);
                value[l] = (plan.seed_first[k] ? Real(0) : value[l]) + seed;
                if (plan.seed_first[k]) tangent[l] = Real(0);
            }
        }
        reverse_sweep<DM, D>(tape, plan, values, adjoints, 1, lanes, background);
        deliver(request, state, n, first, count, [&](std::size_t i) -> const Real* {
            return plan.input_reached[i] ? adjoints.values.tangent.at(static_cast<std::uint32_t>(i))
                                         : nullptr;
        });
    }

    /// KernelSet::point_directions. The part's entries in order: a value per instruction from
    /// broadcast operands with the formulas of evaluate() (lane 0 kept), and for each tangent
    /// step the sum tangent_sweep() forms, over the directions in the lanes.
    static bool point_directions(const Tape& tape, const PointPart& part, const Real* inputs,
                                 const Real* params, const Real* directions, std::size_t count, Real* results,
                                 Real* scratch) {
        const auto instructions = tape.instructions();
        const auto constants = tape.constants();
        const std::size_t n = tape.input_count();
        const std::size_t m = tape.output_count();
        const std::size_t stride = (count + width - 1) / width * width;
        Real* const values = scratch;
        Real* const tangents = scratch + (std::size_t{part.rows} + width - 1) / width * width;
        for (const PointEntry& entry : part.entries) {
            const Instruction ins = instructions[entry.slot];
            Real* const out = tangents + std::size_t{entry.row} * stride;
            switch (ins.op) {
                case Op::Input:
                    values[entry.row] = inputs[ins.a];
                    for (std::size_t c = 0; c < stride; ++c)
                        out[c] = c < count ? directions[c * n + ins.a] : Real(0);
                    continue;
                case Op::Param: values[entry.row] = params[ins.a]; continue;
                case Op::Const: values[entry.row] = static_cast<Real>(constants[ins.a]); continue;
                default: break;
            }
            tapevm::detail::visit_op(
                ins.op, [&](auto tag) __attribute__((noinline)) {
                    constexpr Op op = decltype(tag)::value;
                    if constexpr (!has_flag(op, op_flag::leaf)) {
                        using F = SimdFormula<op>;
                        V x[F::arity == 0 ? 1 : F::arity];
                        for (std::uint32_t k = 0; k < F::arity; ++k) x[k] = V(values[entry.operand_row[k]]);
                        V r;
                        if constexpr (F::immediate) {
                            r = F::template value<M>(x[0], powi_exponent(ins));
                        } else if constexpr (F::arity == 1) {
                            r = F::template value<M>(x[0]);
                        } else if constexpr (F::arity == 2) {
                            r = F::template value<M>(x[0], x[1]);
                        } else {
                            r = F::template value<M>(x[0], x[1], x[2]);
                        }
                        values[entry.row] = r.get(0);
                        if constexpr (F::has_partials) {
                            if (entry.step == 0) return;
                            V d[F::arity];
                            if constexpr (F::immediate) {
                                F::template partials<M>(x[0], powi_exponent(ins), r, d);
                            } else if constexpr (F::arity == 1) {
                                F::template partials<M>(x[0], r, d);
                            } else if constexpr (F::arity == 2) {
                                F::template partials<M>(x[0], x[1], r, d);
                            } else {
                                F::template partials<M>(x[0], x[1], x[2], r, d);
                            }
                            const unsigned active = entry.active;
                            for (std::size_t c = 0; c < stride; c += width) {
                                V sum(Real(0));
                                bool first = true;
                                for (std::uint32_t k = 0; k < F::arity; ++k) {
                                    if (!(active & (1u << k))) continue;
                                    const V t = V::load_aligned(
                                        tangents + std::size_t{entry.operand_row[k]} * stride + c);
                                    const V contribution = tapevm::detail::contribution<M>(d[k], t);
                                    sum = first ? contribution : sum + contribution;
                                    first = false;
                                }
                                sum.store_aligned(out + c);
                            }
                        }
                    }
                });
        }
        for (std::size_t o = 0; o < part.outputs.size(); ++o) {
            const std::uint32_t k = part.outputs[o];
            const bool active = part.output_active[o] != 0;
            const Real* t = tangents + std::size_t{part.output_rows[o]} * stride;
            for (std::size_t c = 0; c < count; ++c) results[c * m + k] = active ? t[c] : Real(0);
        }
        for (std::size_t g = 0; g < part.guard_rows.size(); ++g) {
            if ((values[part.guard_rows[g]] != Real(0)) != (part.guard_expected[g] != 0)) return false;
        }
        return true;
    }

    static KernelSet<Real> kernels() { return {width, &run_block, &finish, &point_directions}; }
};

}  // namespace tapevm::cpu::detail
