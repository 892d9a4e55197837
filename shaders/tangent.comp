// Tangent (forward-mode) kernel: values and K tangent directions in one sweep. Plane 1 + k
// holds direction k's tangents.
//   seeds_from_buffer = 1 (jvp, K = 1): direction = extra0 [points][n]; results [points][m]
//   seeds_from_buffer = 0 (Jacobian, K = n): direction k = unit vector e_k;
//                         results [points][m][n], column k from direction k
#version 450
#extension GL_GOOGLE_include_directive : require
#include "ops.glsl"
#include "interpreter.glsl"

REAL direction(uint k, uint input_index, uint lane) {
    if (pc.seeds_from_buffer != 0u) return extra0[lane * pc.input_count + input_index];
    return k == input_index ? REAL(1) : REAL(0);
}

void main() {
    uint lane = gl_GlobalInvocationID.x;
    if (lane >= pc.points) return;
    uint directions = pc.directions;
    for (uint slot = pc.slot_begin; slot < (phase(TV_PHASE_FORWARD) ? pc.slot_end : 0u); ++slot) {
        uvec4 ins = instructions[slot];
        if (is_leaf(ins)) {
            work[at(0u, slot, lane)] = leaf_value(ins, lane);
            bool is_input = op_of(ins) == TV_OP_INPUT;
            for (uint k = 0u; k < directions; ++k)
                work[at(1u + k, slot, lane)] = is_input ? direction(k, ins.y, lane) : REAL(0);
            continue;
        }
        REAL a, b, c;
        load_operands(ins, lane, a, b, c);
        int immediate = int(ins.z);
        uint op = op_of(ins);
        REAL r = tv_value(op, a, b, c, immediate);
        work[at(0u, slot, lane)] = r;
        REAL d0, d1, d2;
        uint count = tv_partials(op, a, b, c, immediate, r, d0, d1, d2);
        for (uint k = 0u; k < directions; ++k) {
            REAL sum = REAL(0);
            if (count > 0u) sum += tv_contribution(d0, work[at(1u + k, ins.y, lane)]);
            if (count > 1u) sum += tv_contribution(d1, work[at(1u + k, ins.z, lane)]);
            if (count > 2u) sum += tv_contribution(d2, work[at(1u + k, ins.w, lane)]);
            work[at(1u + k, slot, lane)] = sum;
        }
    }
    if (!phase(TV_PHASE_FINISH)) return;
    uint m = pc.output_count;
    for (uint j = 0u; j < m; ++j) {
        uint slot = output_slots[j];
        for (uint k = 0u; k < directions; ++k)
            results[(lane * m + j) * directions + k] = work[at(1u + k, slot, lane)];
    }
    write_flag(lane, guards_fail(lane));
}
