// Reverse-mode kernel in vector mode: the forward sweep, then ONE reverse sweep carrying K
// adjoint seeds at once (plane 1 + k holds seed k's adjoints), so the partials of each
// instruction are computed once for all K.
//   seeds_from_buffer = 1 (vjp, K = 1): output j seeded with extra0 [points][m]; results [points][n]
//   seeds_from_buffer = 0 (gradient, Jacobian, K = m): seed k is output k's unit vector;
//                         results [points][m][n], row k from seed k
// As in the reference VM, a zero seed contributes nothing and every contribution follows
// tv_contribution (a zero partial absorbs an infinite or NaN adjoint).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "ops.glsl"
#include "interpreter.glsl"

REAL seed(uint k, uint output_index, uint lane) {
    if (pc.seeds_from_buffer != 0u) return extra0[lane * pc.output_count + output_index];
    return k == output_index ? REAL(1) : REAL(0);
}

void accumulate(uint plane, uint slot, uint lane, REAL partial, REAL adjoint) {
    uint index = at(plane, slot, lane);
    work[index] = work[index] + tv_contribution(partial, adjoint);
}

void main() {
    uint lane = gl_GlobalInvocationID.x;
    if (lane >= pc.points) return;
    uint seeds = pc.directions;
    if (phase(TV_PHASE_FORWARD)) {
        forward_sweep(lane);
        for (uint k = 0u; k < seeds; ++k)
            for (uint slot = pc.slot_begin; slot < pc.slot_end; ++slot) work[at(1u + k, slot, lane)] = REAL(0);
    }
    if (phase(TV_PHASE_SEED)) {
        for (uint k = 0u; k < seeds; ++k)
            for (uint j = 0u; j < pc.output_count; ++j) {
                uint index = at(1u + k, output_slots[j], lane);
                work[index] = work[index] + seed(k, j, lane);
            }
    }
    uint reverse_end = phase(TV_PHASE_REVERSE) ? pc.slot_end : pc.slot_begin;
    for (uint slot = reverse_end; slot-- > pc.slot_begin;) {
        uvec4 ins = instructions[slot];
        if (is_leaf(ins)) continue;
        // Each adjoint is loaded once; the operands and partials only at the first non-zero
        // one (a slot no output depends on costs K loads).
        bool have_partials = false;
        uint count = 0u;
        REAL d0, d1, d2;
        for (uint k = 0u; k < seeds; ++k) {
            REAL adjoint = work[at(1u + k, slot, lane)];
            if (adjoint == REAL(0)) continue;
            if (!have_partials) {
                REAL a, b, c;
                load_operands(ins, lane, a, b, c);
                count = tv_partials(op_of(ins), a, b, c, int(ins.z), work[at(0u, slot, lane)], d0, d1, d2);
                have_partials = true;
            }
            if (count > 0u) accumulate(1u + k, ins.y, lane, d0, adjoint);
            if (count > 1u) accumulate(1u + k, ins.z, lane, d1, adjoint);
            if (count > 2u) accumulate(1u + k, ins.w, lane, d2, adjoint);
        }
    }
    if (!phase(TV_PHASE_FINISH)) return;
    uint n = pc.input_count;
    for (uint k = 0u; k < seeds; ++k)
        for (uint i = 0u; i < n; ++i) results[(lane * seeds + k) * n + i] = work[at(1u + k, i, lane)];
    write_flag(lane, guards_fail(lane));
}
