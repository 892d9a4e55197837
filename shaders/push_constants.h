// The interpreter's push constants: ONE definition read by the GLSL kernels and by the C++
// runtime (src/vm_gpu/kernels.hpp includes it inside a namespace), so the two layouts cannot
// drift apart. Every field is a 32-bit unsigned integer: std430 push-constant layout and C++
// struct layout are then the same (checked by a static_assert on the C++ side).
#ifdef __cplusplus
#define TV_PUSH_CONSTANTS_BEGIN struct PushConstants {
#define TV_PUSH_CONSTANTS_END };
#define TV_UINT std::uint32_t
#else
#define TV_PUSH_CONSTANTS_BEGIN layout(push_constant) uniform PushConstants {
#define TV_PUSH_CONSTANTS_END } pc;
#define TV_UINT uint
#endif

TV_PUSH_CONSTANTS_BEGIN
    TV_UINT lanes;              // the chunk's capacity: slot s of lane l lives at s * lanes + l
    TV_UINT points;             // points in this chunk (<= lanes); lanes beyond do nothing
    TV_UINT slot_count;         // tape instructions
    TV_UINT input_count;        // n
    TV_UINT param_count;        // p
    TV_UINT params_per_point;   // 1: params [points][p]; 0: one set [p] shared by all points
    TV_UINT output_count;       // m
    TV_UINT guard_count;
    TV_UINT directions;         // K: tangent directions (tangent) or adjoint seeds (reverse) per lane
    TV_UINT seeds_from_buffer;  // 1: directions/seeds from `extra0` (jvp, vjp); 0: unit vectors (Jacobian)
    TV_UINT slot_begin;         // this dispatch's slots [slot_begin, slot_end) (compact kernels: entries)
    TV_UINT slot_end;
    TV_UINT phase;              // TV_PHASE_* bits: what this dispatch does
    TV_UINT adjoint_count;      // compact kernels: adjoint homes per seed (slot_count: value homes)
    TV_UINT reverse_begin;      // compact kernels: the program's first reverse entry (in uvec4s)
    TV_UINT table_begin;        // compact kernels: the output and guard table (in uvec4s)
TV_PUSH_CONSTANTS_END

// A chunk is evaluated by one dispatch doing every phase, or (on devices that limit the
// iterations of a shader's loops, like lavapipe) by several, each over a range of slots:
// forward ranges in order, the last one also seeding; reverse ranges backwards, the last one
// (slot_begin = 0) also finishing. Everything lives in the work buffer between dispatches.
#define TV_PHASE_FORWARD 1u  // values (and tangents) of [slot_begin, slot_end); adjoints zeroed there
#define TV_PHASE_SEED 2u     // adjoint seeds at the outputs (after every forward range)
#define TV_PHASE_REVERSE 4u  // the reverse sweep over [slot_begin, slot_end), downwards
#define TV_PHASE_FINISH 8u   // results and guard flags

#define TV_PUSH_CONSTANT_FIELDS 16

// The program buffer holds each instruction's op number in the low 16 bits of its op word
// and the op's number of slot operands from this bit up (kernels.hpp: device_program).
#define TV_PROGRAM_ARITY_SHIFT 16u

// Flags of a compact reverse entry (src/vm_gpu/compact.hpp): target k's first write, target k skipped.
#define TV_COMPACT_FIRST 1u
#define TV_COMPACT_SKIP 8u
// ... and from this bit the values its partials read (OpInfo::partial_reads: a, b, c, result).
#define TV_COMPACT_READS_SHIFT 6u
#undef TV_PUSH_CONSTANTS_BEGIN
#undef TV_PUSH_CONSTANTS_END
#undef TV_UINT
