// The gpu Device the nn gpu suites share, made on first use and released by their main
// (nn_gpu_main.cpp) before it returns: a Device in a function-local static was destroyed during
// static destruction, after the validation layer's state, and crashed at exit in the stream's
// last submit (seen with MALLOC_PERTURB_, as meson test runs it).
#pragma once

#include "tapevm/nn/device.hpp"

namespace tapevm::nn::test {

/// The suites' gpu Device (Device::gpu() once).
Device gpu_device();
/// Drops it (main, after the tests ran).
void release_gpu_device();

}  // namespace tapevm::nn::test
