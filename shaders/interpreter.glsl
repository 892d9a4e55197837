// The interpreter's common part: bindings, operand loads and the value of one slot. Included
// by the kernels (forward, tangent, reverse, hvp) after `#define REAL float|double`,
// `#define REAL_IS_DOUBLE 0|1` and the generated ops.glsl (shaders/lib), which holds every
// per-op formula: nothing here knows what an op computes, only where its operands live.
//
// One invocation per point ("lane") of a chunk. The work buffer holds [planes][slot][lane]:
// slot s of lane l of plane q at (q * slot_count + s) * lanes + l, so neighbouring invocations
// touch neighbouring addresses. Plane 0 holds values; the kernels put tangents or adjoints in
// the planes after it. Inputs, parameters and results keep the user's row-major layout.

layout(local_size_x = 64) in;

#include "push_constants.h"

layout(std430, set = 0, binding = 0) readonly buffer Program { uvec4 instructions[]; };
layout(std430, set = 0, binding = 1) readonly buffer Constants { REAL constants[]; };
layout(std430, set = 0, binding = 2) readonly buffer OutputSlots { uint output_slots[]; };
layout(std430, set = 0, binding = 3) readonly buffer Guards { uvec2 guards[]; };
layout(std430, set = 0, binding = 4) readonly buffer Inputs { REAL inputs[]; };
layout(std430, set = 0, binding = 5) readonly buffer Params { REAL params[]; };
layout(std430, set = 0, binding = 6) readonly buffer Extra0 { REAL extra0[]; };
layout(std430, set = 0, binding = 7) readonly buffer Extra1 { REAL extra1[]; };
layout(std430, set = 0, binding = 8) writeonly buffer Results { REAL results[]; };
layout(std430, set = 0, binding = 9) buffer Work { REAL work[]; };
layout(std430, set = 0, binding = 10) writeonly buffer Flags { uint diverged[]; };

// Index of slot `slot` of plane `plane` for `lane`.
uint at(uint plane, uint slot, uint lane) { return (plane * pc.slot_count + slot) * pc.lanes + lane; }

bool is_leaf(uint op) { return op == TV_OP_INPUT || op == TV_OP_CONST || op == TV_OP_PARAM; }

// The value of a leaf (Input, Param, Const) at `lane`.
REAL leaf_value(uvec4 ins, uint lane) {
    if (ins.x == TV_OP_INPUT) return inputs[lane * pc.input_count + ins.y];
    if (ins.x == TV_OP_PARAM) return params[pc.params_per_point != 0u ? lane * pc.param_count + ins.y : ins.y];
    return constants[ins.y];
}

// The operand values of a non-leaf instruction, read from plane 0. Unused operand fields are
// 0 in a valid tape (they then read slot 0, harmlessly); Powi's b is its exponent, not a slot.
void load_operands(uvec4 ins, uint lane, out REAL a, out REAL b, out REAL c) {
    a = work[at(0u, ins.y, lane)];
    b = work[at(0u, ins.x == TV_OP_POWI ? 0u : ins.z, lane)];
    c = work[at(0u, ins.w, lane)];
}

// M::truth of the reference VM: non-zero, NaN included.
bool truth(REAL x) { return !(x == REAL(0)); }

// 1 when some guard fails at `lane` (values in plane 0), else 0.
uint guards_fail(uint lane) {
    for (uint g = 0u; g < pc.guard_count; ++g) {
        uvec2 guard = guards[g];
        if (truth(work[at(0u, guard.x, lane)]) != (guard.y != 0u)) return 1u;
    }
    return 0u;
}

bool phase(uint bit) { return (pc.phase & bit) != 0u; }

// Plane 0 for the slots of this dispatch: the forward sweep.
void forward_sweep(uint lane) {
    for (uint slot = pc.slot_begin; slot < pc.slot_end; ++slot) {
        uvec4 ins = instructions[slot];
        REAL value;
        if (is_leaf(ins.x)) {
            value = leaf_value(ins, lane);
        } else {
            REAL a, b, c;
            load_operands(ins, lane, a, b, c);
            value = tv_value(ins.x, a, b, c, int(ins.z));
        }
        work[at(0u, slot, lane)] = value;
    }
}
