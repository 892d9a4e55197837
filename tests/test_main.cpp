// The one main() every doctest suite links with (the GPU suites have their own, gpu/gpu_main.cpp).
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include "keep_driver_loaded.hpp"

int main(int argc, char** argv) {
    tapevm::test::keep_vulkan_driver_loaded();
    return doctest::Context(argc, argv).run();
}
