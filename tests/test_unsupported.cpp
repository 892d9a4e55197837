// A build with optional parts compiled out (meson_options.txt): their public entry points link
// and throw tapevm::Unsupported naming what is missing, and the CLI reports it as one error
// line. Built only in such a build; TAPEVM_TEST_HAVE_{GPU,NN,BENCH} say which parts are in.
#include <string>
#include <string_view>

#include <doctest/doctest.h>

#include "cli_support.hpp"
#include "tapevm/error.hpp"
#include "tapevm/examples.hpp"
#include "tapevm/gpu.hpp"
#if TAPEVM_TEST_HAVE_NN
#include "tapevm/nn/device.hpp"
#endif

namespace {

using tapevm::test::CliResult;
using tapevm::test::run_cli;

void check_unsupported(const CliResult& result, std::string_view part) {
    INFO(result.out << result.err);
    CHECK(result.status == 2);
    CHECK(result.err.starts_with("error: "));
    CHECK(result.err.find(part) != std::string::npos);
}

}  // namespace

#if !TAPEVM_TEST_HAVE_GPU
TEST_CASE("without the GPU VM: every tapevm::gpu entry point throws Unsupported") {
    const tapevm::Tape tape = tapevm::examples::example_tape("rosenbrock16");
    constexpr std::string_view message = "tapevm was built without the GPU VM";
    CHECK_THROWS_WITH_AS(tapevm::gpu::Vm{tape}, doctest::Contains(message.data()), tapevm::Unsupported);
    tapevm::gpu::Options compiled;
    compiled.engine = tapevm::gpu::Engine::compiled;
    CHECK_THROWS_WITH_AS((tapevm::gpu::Vm{tape, compiled}), doctest::Contains(message.data()),
                         tapevm::Unsupported);
    CHECK_THROWS_WITH_AS(tapevm::gpu::devices(), doctest::Contains(message.data()), tapevm::Unsupported);
    CHECK_THROWS_AS(tapevm::gpu::generated_glsl(tape, "gradient", false), tapevm::Unsupported);
    CHECK_THROWS_AS(tapevm::gpu::planned_compile(tape, "gradient", true), tapevm::Unsupported);
    CHECK(tapevm::gpu::validation_messages().empty());
}

TEST_CASE("without the GPU VM: the CLI says so, and the demo runs without its GPU row") {
    check_unsupported(run_cli({"devices"}), "tapevm was built without the GPU VM");
    const CliResult demo = run_cli({"demo", "--points", "3000"});
    INFO(demo.out << demo.err);
    CHECK(demo.status == 0);
    CHECK(demo.out.find("GPU VM: tapevm was built without the GPU VM") != std::string::npos);
}
#endif

#if !TAPEVM_TEST_HAVE_NN
TEST_CASE("without the nn layer: its commands are listed and say so") {
    const CliResult help = run_cli({"help"});
    CHECK(help.out.find("  train ") != std::string::npos);
    check_unsupported(run_cli({"train", "mlp"}), "tapevm train: tapevm was built without the nn layer");
    check_unsupported(run_cli({"sample", "--checkpoint", "x", "--prompt", "y"}),
                      "built without the nn layer");
    check_unsupported(run_cli({"bench-nn"}), "tapevm bench-nn: tapevm was built without the nn layer");
}
#elif !TAPEVM_TEST_HAVE_GPU
TEST_CASE("the nn layer without the GPU VM: Device::gpu() throws Unsupported, the cpu device works") {
    CHECK_FALSE(tapevm::nn::Device::gpu_available());
    CHECK_THROWS_WITH_AS(tapevm::nn::Device::gpu(), doctest::Contains("tapevm was built without the GPU VM"),
                         tapevm::Unsupported);
    CHECK(tapevm::nn::Device::cpu().kind() == tapevm::nn::DeviceKind::cpu);
}
#endif

#if !TAPEVM_TEST_HAVE_BENCH
TEST_CASE("without the benchmark: tapevm bench and adbench say so") {
    check_unsupported(run_cli({"bench", "--list"}), "tapevm was built without the benchmark");
    check_unsupported(run_cli({"adbench", "ba", "x.txt"}), "tapevm was built without the benchmark");
    check_unsupported(run_cli({"help", "bench"}), "tapevm was built without the benchmark");
}
#endif
