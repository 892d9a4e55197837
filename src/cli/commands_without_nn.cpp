// bench-nn, train and sample in a build without the nn layer (meson option nn disabled, or
// OpenBLAS or nlohmann-json not found): listed by `tapevm help` as in a full build, each
// throwing tapevm::Unsupported. Built instead of command_bench_nn.cpp, command_train.cpp and
// command_sample.cpp (src/cli/meson.build).
#include <ostream>
#include <span>
#include <string>
#include <string_view>

#include "commands.hpp"
#include "tapevm/error.hpp"

namespace tapevm::cli {
namespace {

template <const char* Name>
int built_without_nn(std::span<const std::string_view>, std::ostream&, std::ostream&) {
    throw Unsupported("tapevm " + std::string(Name) +
                      ": tapevm was built without the nn layer (meson option nn: disabled, or OpenBLAS or "
                      "nlohmann-json not found when it was configured)");
}

constexpr char bench_nn[] = "bench-nn";
constexpr char train[] = "train";
constexpr char sample[] = "sample";
constexpr std::string_view help =
    "not in this build: tapevm was built without the nn layer (meson option nn)\n";

}  // namespace

Command bench_nn_command() {
    return {"bench-nn", "time the nn kernels (not in this build: no nn layer)", help,
            built_without_nn<bench_nn>};
}

Command train_command() {
    return {"train", "train the examples (not in this build: no nn layer)", help, built_without_nn<train>};
}

Command sample_command() {
    return {"sample", "continue a prompt with a char-gpt checkpoint (not in this build: no nn layer)", help,
            built_without_nn<sample>};
}

}  // namespace tapevm::cli
