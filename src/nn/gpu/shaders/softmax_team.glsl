// Row "teams" for the row kernels (softmax, norm, cross_entropy): a workgroup of
// ROW_GROUP_SIZE invocations works on ROW_GROUP_SIZE / team rows at once, `team` consecutive
// invocations per row (team a power of two, chosen by the host from the row length). Sums and
// maxima over a team are shared-memory trees with a fixed shape, so a row's result depends on
// its length and the team size only, never on how many workgroups run (deterministic).
// Every invocation of the workgroup must call team_sum / team_max together (they hold
// barriers): callers loop over row blocks uniformly and mask rows past the end.
#ifndef SOFTMAX_TEAM_GLSL
#define SOFTMAX_TEAM_GLSL

#define ROW_GROUP_SIZE 256
layout(local_size_x = ROW_GROUP_SIZE) in;

shared float team_scratch[ROW_GROUP_SIZE];

// Threads per row, lane within the row, and the row's slot in the workgroup's block.
uint team_lane(uint team) { return gl_LocalInvocationID.x & (team - 1u); }
uint team_slot(uint team) { return gl_LocalInvocationID.x / team; }

float team_sum(float value, uint team) {
    uint id = gl_LocalInvocationID.x;
    uint lane = id & (team - 1u);
    team_scratch[id] = value;
    barrier();
    for (uint stride = team >> 1; stride > 0u; stride >>= 1) {
        if (lane < stride) team_scratch[id] += team_scratch[id + stride];
        barrier();
    }
    float total = team_scratch[id - lane];
    barrier();
    return total;
}

float team_max(float value, uint team) {
    uint id = gl_LocalInvocationID.x;
    uint lane = id & (team - 1u);
    team_scratch[id] = value;
    barrier();
    for (uint stride = team >> 1; stride > 0u; stride >>= 1) {
        if (lane < stride) team_scratch[id] = max(team_scratch[id], team_scratch[id + stride]);
        barrier();
    }
    float total = team_scratch[id - lane];
    barrier();
    return total;
}

#endif
