#version 450
// copy_words: dst[i] = src[i] for 16-byte words i < n (same-dtype tensor copies: on NVIDIA a
// compute copy moves about 3x the bytes per second of vkCmdCopyBuffer on the compute queue).
// The host rounds the byte count up to whole words: tensor buffers are multiples of 256 bytes.
layout(local_size_x = 256) in;
layout(set = 0, binding = 0, std430) readonly buffer Src { uvec4 src[]; };
layout(set = 0, binding = 1, std430) writeonly buffer Dst { uvec4 dst[]; };
layout(push_constant) uniform Push { uint n; } pc;

void main() {
    const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint i = gl_GlobalInvocationID.x; i < pc.n; i += stride) dst[i] = src[i];
}
