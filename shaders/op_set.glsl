// What a compact or local interpreter pipeline is made for (included before ops.glsl), set by
// the runtime where it makes pipelines for a tape (kernels.hpp: Specialization); the constant
// ids are shaders/bindings.h's:
//   TV_SPEC_OPS_0 and TV_SPEC_OPS_1: the ops it handles, op 32 * w + b when bit b of
//     TV_OPS_<w> is set (kernels.hpp: OpSet), so that the driver's compiler drops every other
//     op's case from the dispatch switches (tv_value, tv_partials); all ops when not set;
//   TV_SPEC_DIRECTIONS: in reverse mode the call's seeds K, so the loops over them unroll (0,
//     the default: pc.directions says).
#include "bindings.h"
layout(constant_id = TV_SPEC_OPS_0) const uint TV_OPS_0 = 0xffffffffu;
layout(constant_id = TV_SPEC_OPS_1) const uint TV_OPS_1 = 0xffffffffu;
#define TV_OP_ENABLED(word, bit) (((TV_OPS_##word >> (bit)) & 1u) != 0u)
layout(constant_id = TV_SPEC_DIRECTIONS) const uint TV_DIRECTIONS = 0u;
