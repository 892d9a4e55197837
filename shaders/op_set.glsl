// What a compact or local interpreter pipeline is made for. The ops it handles (included before ops.glsl): op
// 32 * w + b when bit b of TV_OPS_<w> is set. Specialization constants 2 and 3, set by the
// runtime to the ops of the tape the pipeline runs (kernels.hpp: OpSet), so that the driver's
// compiler drops every other op's case from the dispatch switches (tv_value, tv_partials); all
// ops when not set.
layout(constant_id = 2) const uint TV_OPS_0 = 0xffffffffu;
layout(constant_id = 3) const uint TV_OPS_1 = 0xffffffffu;
#define TV_OP_ENABLED(word, bit) (((TV_OPS_##word >> (bit)) & 1u) != 0u)
// Set with them for the reverse kernels: the call's seeds K (0: pc.directions says).
layout(constant_id = 5) const uint TV_DIRECTIONS = 0u;
