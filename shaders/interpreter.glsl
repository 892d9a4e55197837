// The interpreter's common part: bindings, operand loads and the value of one slot. Included
// by the kernels (forward, tangent, reverse, hvp) after `#define REAL float|double`,
// `#define REAL_IS_DOUBLE 0|1` and the generated ops.glsl (shaders/lib), which holds every
// per-op formula: nothing here knows what an op computes, only where its operands live.
//
// One invocation per point ("lane") of a chunk. The work buffer holds [planes][slot][lane]:
// slot s of lane l of plane q at (q * slot_count + s) * lanes + l, so neighbouring invocations
// touch neighbouring addresses. Plane 0 holds values; the kernels put tangents or adjoints in
// the planes after it. Inputs, parameters and results keep the user's row-major layout.

// The bindings and specialization constant ids are shaders/bindings.h's, shared with the C++
// runtime. The workgroup size is specialization constant TV_SPEC_WORKGROUP, set by the runtime
// (kernels.hpp: workgroup_size); 64 when none is given.
#include "bindings.h"

layout(local_size_x = 64, local_size_x_id = TV_SPEC_WORKGROUP) in;

#include "push_constants.h"

layout(std430, set = 0, binding = TV_BINDING_PROGRAM) readonly buffer Program { uvec4 instructions[]; };
layout(std430, set = 0, binding = TV_BINDING_CONSTANTS) readonly buffer Constants { REAL constants[]; };
layout(std430, set = 0, binding = TV_BINDING_OUTPUT_SLOTS) readonly buffer OutputSlots { uint output_slots[]; };
layout(std430, set = 0, binding = TV_BINDING_GUARDS) readonly buffer Guards { uvec2 guards[]; };
layout(std430, set = 0, binding = TV_BINDING_INPUTS) readonly buffer Inputs { REAL inputs[]; };
layout(std430, set = 0, binding = TV_BINDING_PARAMS) readonly buffer Params { REAL params[]; };
layout(std430, set = 0, binding = TV_BINDING_EXTRA0) readonly buffer Extra0 { REAL extra0[]; };
layout(std430, set = 0, binding = TV_BINDING_EXTRA1) readonly buffer Extra1 { REAL extra1[]; };
layout(std430, set = 0, binding = TV_BINDING_RESULTS) writeonly buffer Results { REAL results[]; };
layout(std430, set = 0, binding = TV_BINDING_WORK) buffer Work { REAL work[]; };
layout(std430, set = 0, binding = TV_BINDING_FLAGS) buffer Flags { uint diverged[]; };  // [lanes] and a count

// Index of slot `slot` of plane `plane` for `lane`.
uint at(uint plane, uint slot, uint lane) { return (plane * pc.slot_count + slot) * pc.lanes + lane; }

// The program as the runner uploads it (kernels.hpp: device_program): each tape instruction
// {op, a, b, c} with the op's number of slot operands (0 for leaves, 1 for Powi, whose b is
// its exponent) in the high half of the op word, so that no kernel loads an operand it does
// not use. Every lane runs the same instruction: branches on these are uniform.
uint op_of(uvec4 ins) { return ins.x & 0xffffu; }
uint arity_of(uvec4 ins) { return ins.x >> TV_PROGRAM_ARITY_SHIFT; }
bool is_leaf(uvec4 ins) { return arity_of(ins) == 0u; }

// The value of a leaf (Input, Param, Const) at `lane`.
REAL leaf_value(uvec4 ins, uint lane) {
    uint op = op_of(ins);
    if (op == TV_OP_INPUT) return inputs[lane * pc.input_count + ins.y];
    if (op == TV_OP_PARAM) return params[pc.params_per_point != 0u ? lane * pc.param_count + ins.y : ins.y];
    return constants[ins.y];
}

// The operand values of a non-leaf instruction, read from plane 0: only those it has (the
// others are 0).
void load_operands(uvec4 ins, uint lane, out REAL a, out REAL b, out REAL c) {
    uint arity = arity_of(ins);
    a = work[at(0u, ins.y, lane)];
    b = REAL(0);
    c = REAL(0);
    if (arity > 1u) b = work[at(0u, ins.z, lane)];
    if (arity > 2u) c = work[at(0u, ins.w, lane)];
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

// The guard flag of `lane` (1: some guard fails), and the chunk's count of failing lanes at
// diverged[pc.lanes], which the runner zeroes before the dispatch and reads back instead of
// every flag (the flags come back only when the count is not zero).
void write_flag(uint lane, uint failed) {
    diverged[lane] = failed;
    if (failed != 0u) atomicAdd(diverged[pc.lanes], 1u);
}

bool phase(uint bit) { return (pc.phase & bit) != 0u; }

// Plane 0 for the slots of this dispatch: the forward sweep.
void forward_sweep(uint lane) {
    for (uint slot = pc.slot_begin; slot < pc.slot_end; ++slot) {
        uvec4 ins = instructions[slot];
        REAL value;
        if (is_leaf(ins)) {
            value = leaf_value(ins, lane);
        } else {
            REAL a, b, c;
            load_operands(ins, lane, a, b, c);
            value = tv_value(op_of(ins), a, b, c, int(ins.z));
        }
        work[at(0u, slot, lane)] = value;
    }
}
