// Compile check of ops.glsl and the math library (built for REAL = float and double): calls
// every dispatcher so that every op's value and partial formulas are compiled.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "ops.glsl"

layout(local_size_x = 64) in;
layout(std430, set = 0, binding = 0) buffer Values { REAL values[]; };

void main() {
    uint i = gl_GlobalInvocationID.x * 8u;
    REAL a = values[i + 1u], b = values[i + 2u], c = values[i + 3u];
    int imm = int(values[i + 4u]);
    for (uint op = 0u; op < TV_OP_COUNT; ++op) {
        REAL r = tv_value(op, a, b, c, imm);
        REAL d0, d1, d2;
        uint count = tv_partials(op, a, b, c, imm, r, d0, d1, d2);
        values[i] += r + tv_contribution(d0, a) + tv_contribution(d1, b) + tv_contribution(d2, c)
            + REAL(count);
    }
}
