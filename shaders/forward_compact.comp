// Forward kernel on the compact program (compact.glsl): outputs [points][m], guard flags. Same
// results as forward.comp. Built twice (shaders/meson.build): forward_compact with the homes in
// the work buffer, forward_local with them in per-invocation local memory (TV_LOCAL_HOMES).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "op_set.glsl"
#include "ops.glsl"
#include "interpreter.glsl"
#include "compact.glsl"

void main() {
    uint lane = gl_GlobalInvocationID.x;
    if (lane >= pc.points) return;
    if (phase(TV_PHASE_FORWARD)) compact_forward(lane);
    if (phase(TV_PHASE_FINISH)) compact_finish_forward(lane);
}
