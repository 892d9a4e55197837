// The compact kernels' common part (after interpreter.glsl): the program is the compact
// program of src/vm_gpu/compact.hpp, where operands name homes (reused storage) instead of
// slots. Per lane there are the value homes (pc.slot_count of them), then per seed k the
// adjoint homes (pc.adjoint_count): one numbering, home h = value home h, home
// pc.slot_count + k * pc.adjoint_count + a = adjoint home a of seed k.
//
// Where the homes live depends on the build of the kernel (shaders/meson.build):
//   TV_LOCAL_HOMES 0 (forward_compact, reverse_compact): in the work buffer, [homes][lane]:
//     home h of lane l at h * pc.lanes + l, so neighbouring invocations touch neighbouring
//     addresses; the work buffer keeps them between the dispatches of a chunk.
//   TV_LOCAL_HOMES 1 (forward_local, reverse_local): in `homes`, an array private to the
//     invocation whose length is specialization constant 1 (HOME_COUNT, set by the runtime to
//     at least slot_count + directions * adjoint_count: kernels.hpp, local_home_count). A
//     dynamically indexed private array is what a GPU compiler keeps in per-thread local memory
//     (on NVIDIA interleaved by the hardware and cached in L1) instead of device-buffer rows.
//     Homes do not survive the dispatch: the runner gives these kernels every phase of a chunk
//     in one dispatch (whole_program() holds), and binds no work buffer.
#ifndef TV_LOCAL_HOMES
#define TV_LOCAL_HOMES 0
#endif

#if TV_LOCAL_HOMES
layout(constant_id = TV_SPEC_HOME_COUNT) const uint HOME_COUNT = 1;
REAL homes[HOME_COUNT];
#define TV_HOME(home, lane) homes[home]
#else
#define TV_HOME(home, lane) work[(home) * pc.lanes + (lane)]
#endif

// Value home `home` and seed k's adjoint home `home` of `lane`, as lvalues.
#define TV_VALUE(home, lane) TV_HOME(home, lane)
#define TV_ADJOINT(k, home, lane) TV_HOME(pc.slot_count + (k) * pc.adjoint_count + (home), lane)

// Output j's {value home, adjoint home}; guard g's {value home, expected}.
uvec4 output_entry(uint j) { return instructions[pc.table_begin + j]; }
uvec4 guard_entry(uint g) { return instructions[pc.table_begin + pc.output_count + g]; }

// 1 when some guard fails at `lane`.
uint compact_guards_fail(uint lane) {
    for (uint g = 0u; g < pc.guard_count; ++g) {
        uvec4 guard = guard_entry(g);
        if (truth(TV_VALUE(guard.x, lane)) != (guard.y != 0u)) return 1u;
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
            REAL a = TV_VALUE(ins.y, lane);
            REAL b = arity > 1u ? TV_VALUE(ins.z, lane) : REAL(0);
            REAL c = arity > 2u ? TV_VALUE(ins.w, lane) : REAL(0);
            value = tv_value(op_of(ins), a, b, c, int(info.y));
        }
        TV_VALUE(info.x, lane) = value;
    }
}

// The outputs' values and the guard flags.
void compact_finish_forward(uint lane) {
    for (uint k = 0u; k < pc.output_count; ++k)
        results[lane * pc.output_count + k] = TV_VALUE(output_entry(k).x, lane);
    write_flag(lane, compact_guards_fail(lane));
}
