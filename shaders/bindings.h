// The interpreter's descriptor bindings (set 0, all storage buffers) and specialization
// constant ids: ONE definition read by the GLSL kernels (shaders/interpreter.glsl, compact.glsl,
// op_set.glsl) and by the C++ runtime (src/vm_gpu/kernels.hpp: Binding, Kernels' pipelines;
// codegen.cpp writes its layouts from the same numbers), so the two sides cannot drift apart.
// Plain integer macros: usable in GLSL layout qualifiers and in C++ constant expressions.
#ifndef TV_BINDINGS_H
#define TV_BINDINGS_H

#define TV_BINDING_PROGRAM 0       // uvec4 instructions (kernels.hpp: device_program)
#define TV_BINDING_CONSTANTS 1     // REAL constants
#define TV_BINDING_OUTPUT_SLOTS 2  // uint output slots
#define TV_BINDING_GUARDS 3        // uvec2 guards
#define TV_BINDING_INPUTS 4        // REAL inputs [points][n]
#define TV_BINDING_PARAMS 5        // REAL params [points][p] or [p]
#define TV_BINDING_EXTRA0 6        // REAL directions or seeds
#define TV_BINDING_EXTRA1 7        // REAL second directions (hvp)
#define TV_BINDING_RESULTS 8       // REAL results
#define TV_BINDING_WORK 9          // REAL work planes (compiled reverse kernels: output values)
#define TV_BINDING_FLAGS 10        // uint diverged flags [lanes] and a count
#define TV_BINDING_COUNT 11

#define TV_SPEC_WORKGROUP 0   // local_size_x_id: the workgroup size
#define TV_SPEC_HOME_COUNT 1  // local kernels: HOME_COUNT (compact.glsl)
#define TV_SPEC_OPS_0 2       // compact and local kernels: TV_OPS_0, ops 0-31 (op_set.glsl)
#define TV_SPEC_OPS_1 3       // TV_OPS_1, ops 32-63
#define TV_SPEC_DIRECTIONS 4  // TV_DIRECTIONS: reverse seeds K (0: pc.directions)
#define TV_SPEC_COUNT 5

#endif
