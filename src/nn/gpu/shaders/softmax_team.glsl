// Row "teams" for the row kernels (softmax, norm, cross_entropy). A workgroup of
// ROW_GROUP_SIZE invocations is split into teams of `subgroups` whole subgroups (a power of
// two chosen by the host from the row length; clamped to the workgroup), one row per team at a
// time. A team's sum or maximum is subgroupAdd / subgroupMax within each subgroup, then (teams
// of several subgroups) the subgroups' results added in subgroup order through shared memory:
// a fixed order for a given row length and device, whatever the number of workgroups
// (deterministic). Teams are made of subgroups by gl_SubgroupID, so nothing assumes how
// invocations map onto subgroups. Every invocation of the workgroup must call team_sum /
// team_max together when teams span several subgroups (they hold barriers): callers loop over
// row blocks uniformly and mask rows past the end.
#ifndef SOFTMAX_TEAM_GLSL
#define SOFTMAX_TEAM_GLSL

#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require

#define ROW_GROUP_SIZE 256
layout(local_size_x = ROW_GROUP_SIZE) in;

shared float team_scratch[ROW_GROUP_SIZE];  // one entry per subgroup

struct Team {
    uint subgroups;       // subgroups per team
    uint size;            // invocations per team (the stride of a row loop)
    uint lane;            // this invocation's index in its team
    uint slot;            // its team's index in the workgroup
    uint rows_per_group;  // teams per workgroup
};

Team make_team(uint subgroups) {
    Team team;
    team.subgroups = clamp(subgroups, 1u, gl_NumSubgroups);
    team.size = team.subgroups * gl_SubgroupSize;
    team.lane = (gl_SubgroupID % team.subgroups) * gl_SubgroupSize + gl_SubgroupInvocationID;
    team.slot = gl_SubgroupID / team.subgroups;
    team.rows_per_group = gl_NumSubgroups / team.subgroups;
    return team;
}

float team_sum(float value, Team team) {
    value = subgroupAdd(value);
    if (team.subgroups == 1u) return value;
    if (subgroupElect()) team_scratch[gl_SubgroupID] = value;
    barrier();
    uint first = team.slot * team.subgroups;
    float total = 0.0;
    for (uint s = 0u; s < team.subgroups; ++s) total += team_scratch[first + s];
    barrier();
    return total;
}

float team_max(float value, Team team) {
    value = subgroupMax(value);
    if (team.subgroups == 1u) return value;
    if (subgroupElect()) team_scratch[gl_SubgroupID] = value;
    barrier();
    uint first = team.slot * team.subgroups;
    float total = -1.0 / 0.0;
    for (uint s = 0u; s < team.subgroups; ++s) total = max(total, team_scratch[first + s]);
    barrier();
    return total;
}

#endif
