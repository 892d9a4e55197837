// The compact kernels' common part (after interpreter.glsl): the program is the compact
// program of src/vm_gpu/compact.hpp, where operands name homes (reused storage) instead of
// slots. The work buffer holds per lane the value homes (pc.slot_count of them), then per seed
// k the adjoint homes (pc.adjoint_count): [homes][lane], so neighbouring invocations touch
// neighbouring addresses.

uint value_at(uint home, uint lane) { return home * pc.lanes + lane; }
uint adjoint_at(uint k, uint home, uint lane) {
    return (pc.slot_count + k * pc.adjoint_count + home) * pc.lanes + lane;
}

// Output j's {value home, adjoint home}; guard g's {value home, expected}.
uvec4 output_entry(uint j) { return instructions[pc.table_begin + j]; }
uvec4 guard_entry(uint g) { return instructions[pc.table_begin + pc.output_count + g]; }

// 1 when some guard fails at `lane`.
uint compact_guards_fail(uint lane) {
    for (uint g = 0u; g < pc.guard_count; ++g) {
        uvec4 guard = guard_entry(g);
        if (truth(work[value_at(guard.x, lane)]) != (guard.y != 0u)) return 1u;
    }
    return 0u;
}

// A dispatch with both the forward and the reverse phase runs every entry of both; otherwise
// [pc.slot_begin, pc.slot_end) are the entries of its one sweep (forward or reverse).
bool whole_program() { return phase(TV_PHASE_FORWARD) && phase(TV_PHASE_REVERSE); }

// Forward entries: values into their homes.
void compact_forward(uint lane) {
    uint end = whole_program() ? pc.reverse_begin / 2u : pc.slot_end;
    for (uint e = pc.slot_begin; e < end; ++e) {
        uvec4 ins = instructions[2u * e];
        uvec4 info = instructions[2u * e + 1u];
        REAL value;
        if (is_leaf(ins)) {
            value = leaf_value(ins, lane);
        } else {
            uint arity = arity_of(ins);
            REAL a = work[value_at(ins.y, lane)];
            REAL b = arity > 1u ? work[value_at(ins.z, lane)] : REAL(0);
            REAL c = arity > 2u ? work[value_at(ins.w, lane)] : REAL(0);
            value = tv_value(op_of(ins), a, b, c, int(info.y));
        }
        work[value_at(info.x, lane)] = value;
    }
}

// The outputs' values and the guard flags.
void compact_finish_forward(uint lane) {
    for (uint k = 0u; k < pc.output_count; ++k)
        results[lane * pc.output_count + k] = work[value_at(output_entry(k).x, lane)];
    diverged[lane] = compact_guards_fail(lane);
}
