// Linked into the README examples (whose code stays verbatim): under AddressSanitizer, keeps
// lavapipe loaded until exit as every test main does (tests/keep_driver_loaded.hpp says why).
#include "../../keep_driver_loaded.hpp"

namespace {
[[maybe_unused]] const int driver_kept = (tapevm::test::keep_vulkan_driver_loaded(), 0);
}  // namespace
