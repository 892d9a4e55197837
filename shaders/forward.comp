// Forward kernel: values of every slot, outputs [points][m], guard flags.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "ops.glsl"
#include "interpreter.glsl"

void main() {
    uint lane = gl_GlobalInvocationID.x;
    if (lane >= pc.points) return;
    if (phase(TV_PHASE_FORWARD)) forward_sweep(lane);
    if (!phase(TV_PHASE_FINISH)) return;
    for (uint k = 0u; k < pc.output_count; ++k)
        results[lane * pc.output_count + k] = work[at(0u, output_slots[k], lane)];
    write_flag(lane, guards_fail(lane));
}
