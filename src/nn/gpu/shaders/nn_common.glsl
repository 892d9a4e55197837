// Included by every nn kernel (after #version): the device error buffer at binding 15 and
// how a kernel reports an error the host throws at its next wait (GpuBackend::synchronize,
// a read). Only the first error of a batch is kept.
#ifndef NN_COMMON_GLSL
#define NN_COMMON_GLSL

#define NN_ERROR_BINDING 15
layout(set = 0, binding = NN_ERROR_BINDING, std430) buffer NnErrorBuffer { uint nn_error[8]; };

// Error codes (stream.cpp turns them into messages): an id or a target outside [0, limit).
#define NN_ERROR_ID_OUT_OF_RANGE 1u
#define NN_ERROR_TARGET_OUT_OF_RANGE 2u

// Records error `code` of kernel `kernel` (the KernelId number, backend.hpp) found at element
// `position` holding `value`, with `limit` the bound it broke.
void nn_report_error(uint code, uint kernel, int value, uint position, uint limit) {
    if (atomicCompSwap(nn_error[0], 0u, code) == 0u) {
        nn_error[1] = kernel;
        nn_error[2] = uint(value);
        nn_error[3] = position;
        nn_error[4] = limit;
    }
}

#endif  // NN_COMMON_GLSL
