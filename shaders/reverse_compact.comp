// Reverse-mode kernel in vector mode on the compact program (compact.glsl): the forward sweep,
// then ONE reverse sweep over the active instructions carrying K adjoint seeds at once. Same
// seeds, layout and results as reverse.comp:
//   seeds_from_buffer = 1 (vjp, K = 1): output j seeded with extra0 [points][m]; results [points][n]
//   seeds_from_buffer = 0 (gradient, Jacobian, K = m): seed k is output k's unit vector;
//                         results [points][m][n], row k from seed k
// Each entry reads its adjoint, then writes (first contribution) or adds to its targets'
// adjoints in operand order; a target may share the entry's own home, which is read first.
// Every contribution follows tv_contribution (0 for a zero adjoint or partial).
// Built twice (shaders/meson.build): reverse_compact with the homes in the work buffer,
// reverse_local with them in per-invocation local memory (TV_LOCAL_HOMES, compact.glsl).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "op_set.glsl"
#include "ops.glsl"
#include "interpreter.glsl"
#include "compact.glsl"

REAL seed(uint k, uint output_index, uint lane) {
    if (pc.seeds_from_buffer != 0u) return extra0[lane * pc.output_count + output_index];
    return k == output_index ? REAL(1) : REAL(0);
}

void contribute(uint k, uint target, uint flags, uint position, REAL partial, REAL adjoint, uint lane) {
    if ((flags & (TV_COMPACT_SKIP << position)) != 0u) return;
    REAL before = (flags & (TV_COMPACT_FIRST << position)) != 0u ? REAL(0) : TV_ADJOINT(k, target, lane);
    TV_ADJOINT(k, target, lane) = before + tv_contribution(partial, adjoint);
}

void main() {
    uint lane = gl_GlobalInvocationID.x;
    if (lane >= pc.points) return;
    // The seeds K: specialization constant 4 where the runtime fixes it (pipelines made for
    // a tape, shaders/op_set.glsl), so that the loops over the seeds unroll; else the push constant.
    uint seeds = TV_DIRECTIONS != 0u ? TV_DIRECTIONS : pc.directions;
    uint n = pc.input_count;
    if (phase(TV_PHASE_FORWARD)) {
        compact_forward(lane);
        if (pc.slot_begin == 0u)
            for (uint k = 0u; k < seeds; ++k)
                for (uint i = 0u; i < n; ++i) TV_ADJOINT(k, i, lane) = REAL(0);
    }
    if (phase(TV_PHASE_SEED)) {
        for (uint k = 0u; k < seeds; ++k) {
            for (uint j = 0u; j < pc.output_count; ++j) TV_ADJOINT(k, output_entry(j).y, lane) = REAL(0);
            for (uint j = 0u; j < pc.output_count; ++j) {
                uint home = output_entry(j).y;
                TV_ADJOINT(k, home, lane) = TV_ADJOINT(k, home, lane) + seed(k, j, lane);
            }
        }
    }
    uint reverse_first = whole_program() ? 0u : pc.slot_begin;
    uint reverse_end = whole_program() ? (pc.table_begin - pc.reverse_begin) / 3u
                                       : (phase(TV_PHASE_REVERSE) ? pc.slot_end : pc.slot_begin);
    for (uint e = reverse_first; e < reverse_end; ++e) {
        uint at_entry = pc.reverse_begin + 3u * e;
        uvec4 ins = instructions[at_entry];
        uvec4 info = instructions[at_entry + 1u];
        uvec4 targets = instructions[at_entry + 2u];
        // Only the values the partials read (the others' homes may hold later values).
        uint reads = info.w >> TV_COMPACT_READS_SHIFT;
        REAL a = (reads & 1u) != 0u ? TV_VALUE(ins.y, lane) : REAL(0);
        REAL b = (reads & 2u) != 0u ? TV_VALUE(ins.z, lane) : REAL(0);
        REAL c = (reads & 4u) != 0u ? TV_VALUE(ins.w, lane) : REAL(0);
        REAL r = (reads & 8u) != 0u ? TV_VALUE(info.x, lane) : REAL(0);
        REAL d0, d1, d2;
        uint count = tv_partials(op_of(ins), a, b, c, int(info.y), r, d0, d1, d2);
        for (uint k = 0u; k < seeds; ++k) {
            REAL adjoint = TV_ADJOINT(k, info.z, lane);
            if (count > 0u) contribute(k, targets.x, info.w, 0u, d0, adjoint, lane);
            if (count > 1u) contribute(k, targets.y, info.w, 1u, d1, adjoint, lane);
            if (count > 2u) contribute(k, targets.z, info.w, 2u, d2, adjoint, lane);
        }
    }
    if (!phase(TV_PHASE_FINISH)) return;
    for (uint k = 0u; k < seeds; ++k)
        for (uint i = 0u; i < n; ++i) results[(lane * seeds + k) * n + i] = TV_ADJOINT(k, i, lane);
    write_flag(lane, compact_guards_fail(lane));
}
