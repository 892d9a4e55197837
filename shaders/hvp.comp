// Hessian-vector products, forward over reverse in dual numbers (dual_ops.glsl, generated from
// the op table by src/vm_gpu/gen_dual_glsl.py), exactly as the reference VM does:
//   values  Dual(value, tangent along the direction): planes 0 and 1
//   adjoints Dual: planes 2 and 3
// extra0 = cotangents [points][m], extra1 = directions [points][n]; results [points][n] are the
// tangent parts of the input adjoints.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "ops.glsl"
#include "interpreter.glsl"
#include "dual_ops.glsl"

Dual dual_at(uint plane, uint slot, uint lane) {
    return Dual(work[at(plane, slot, lane)], work[at(plane + 1u, slot, lane)]);
}
// The operand values (and tangents) of a non-leaf instruction: only those it has.
void load_dual_operands(uvec4 ins, uint lane, out Dual a, out Dual b, out Dual c) {
    uint arity = arity_of(ins);
    a = dual_at(0u, ins.y, lane);
    b = td_const(REAL(0));
    c = td_const(REAL(0));
    if (arity > 1u) b = dual_at(0u, ins.z, lane);
    if (arity > 2u) c = dual_at(0u, ins.w, lane);
}
void store_dual(uint plane, uint slot, uint lane, Dual x) {
    work[at(plane, slot, lane)] = x.v;
    work[at(plane + 1u, slot, lane)] = x.t;
}

void main() {
    uint lane = gl_GlobalInvocationID.x;
    if (lane >= pc.points) return;
    uint n = pc.input_count;
    uint m = pc.output_count;
    for (uint slot = pc.slot_begin; slot < (phase(TV_PHASE_FORWARD) ? pc.slot_end : 0u); ++slot) {
        uvec4 ins = instructions[slot];
        Dual value;
        if (is_leaf(ins)) {
            value = Dual(leaf_value(ins, lane), op_of(ins) == TV_OP_INPUT ? extra1[lane * n + ins.y] : REAL(0));
        } else {
            Dual a, b, c;
            load_dual_operands(ins, lane, a, b, c);
            value = td_value(op_of(ins), a, b, c, int(ins.z));
        }
        store_dual(0u, slot, lane, value);
        store_dual(2u, slot, lane, td_const(REAL(0)));
    }
    for (uint j = 0u; j < (phase(TV_PHASE_SEED) ? m : 0u); ++j) {
        uint slot = output_slots[j];
        store_dual(2u, slot, lane, td_add(dual_at(2u, slot, lane), td_const(extra0[lane * m + j])));
    }
    uint reverse_end = phase(TV_PHASE_REVERSE) ? pc.slot_end : pc.slot_begin;
    for (uint slot = reverse_end; slot-- > pc.slot_begin;) {
        uvec4 ins = instructions[slot];
        if (is_leaf(ins)) continue;
        Dual seed = dual_at(2u, slot, lane);
        if (td_is_zero(seed)) continue;
        Dual a, b, c;
        load_dual_operands(ins, lane, a, b, c);
        Dual d0, d1, d2;
        uint count = td_partials(op_of(ins), a, b, c, int(ins.z), dual_at(0u, slot, lane), d0, d1, d2);
        if (count > 0u)
            store_dual(2u, ins.y, lane, td_add(dual_at(2u, ins.y, lane), td_contribution(d0, seed)));
        if (count > 1u)
            store_dual(2u, ins.z, lane, td_add(dual_at(2u, ins.z, lane), td_contribution(d1, seed)));
        if (count > 2u)
            store_dual(2u, ins.w, lane, td_add(dual_at(2u, ins.w, lane), td_contribution(d2, seed)));
    }
    if (!phase(TV_PHASE_FINISH)) return;
    for (uint i = 0u; i < n; ++i) results[lane * n + i] = work[at(3u, i, lane)];
    write_flag(lane, guards_fail(lane));
}
