// The CPU VM's own behaviour: instruction-set choice, threads, concurrent callers, guards,
// NaN and infinity confined to their lanes, shared and per-point parameters, shape errors.
#include <cstdlib>
#include <limits>
#include <thread>

#include "cpu_test_support.hpp"
#include "tapevm/error.hpp"
#include "tapevm/var.hpp"

namespace {

using tapevm::Batch;
using tapevm::Tape;
using tapevm::Var;
using tapevm::cpu::Isa;
using tapevm::cpu::Vm;
using namespace tapevm::cpu_test;

// Sets an environment variable for the scope of the object.
class ScopedEnvironment {
public:
    ScopedEnvironment(const char* name, const char* value) : name_(name) {
        if (const char* old = std::getenv(name)) old_ = old;
        if (value != nullptr) {
            setenv(name, value, 1);
        } else {
            unsetenv(name);
        }
    }
    ~ScopedEnvironment() {
        if (old_.empty()) {
            unsetenv(name_);
        } else {
            setenv(name_, old_.c_str(), 1);
        }
    }

private:
    const char* name_;
    std::string old_;
};

TEST_CASE("supported_isas: sse2 first, no duplicates, names") {
    const auto isas = tapevm::cpu::supported_isas();
    REQUIRE(!isas.empty());
    CHECK(isas.front() == Isa::sse2);
    for (std::size_t k = 1; k < isas.size(); ++k)
        CHECK(static_cast<int>(isas[k - 1]) < static_cast<int>(isas[k]));
    CHECK(tapevm::cpu::isa_name(Isa::sse2) == "sse2");
    CHECK(tapevm::cpu::isa_name(Isa::avx2) == "avx2");
    CHECK(tapevm::cpu::isa_name(Isa::avx512) == "avx512");
    CHECK(tapevm::cpu::isa_name(Isa::automatic) == "automatic");
}

TEST_CASE("every supported instruction set gives the reference's results on every example") {
    const ScopedEnvironment no_override("TAPEVM_CPU_ISA", nullptr);
    for (const Isa isa : tapevm::cpu::supported_isas()) {
        for (const char* name : {"ba", "rosenbrock16", "trig16"}) {
            CAPTURE(tapevm::cpu::isa_name(isa));
            CAPTURE(name);
            const Tape tape = tapevm::examples::example_tape(name);
            const Vm vm(tape, {.threads = 1, .isa = isa});
            CHECK(vm.isa() == isa);
            CHECK(vm.name() == "cpu (" + std::string(tapevm::cpu::isa_name(isa)) + ", 1 thread)");
            const tapevm::reference::Vm reference(tape);
            const RandomBatch<double> f64(tape, 37, 11, is_ba(name));
            check_all_operations<double>(vm, reference, f64, tolerance<double>(name), name);
            const RandomBatch<float> f32(tape, 37, 12, is_ba(name));
            check_all_operations<float>(vm, reference, f32, tolerance<float>(name), name);
        }
    }
}

TEST_CASE("automatic picks the widest set; TAPEVM_CPU_ISA overrides it; unsupported sets throw") {
    const Tape tape = tapevm::examples::example_tape("rosenbrock16");
    const auto isas = tapevm::cpu::supported_isas();
    {
        const ScopedEnvironment no_override("TAPEVM_CPU_ISA", nullptr);
        CHECK(Vm(tape).isa() == isas.back());
    }
    for (const Isa isa : isas) {
        const ScopedEnvironment forced("TAPEVM_CPU_ISA", std::string(tapevm::cpu::isa_name(isa)).c_str());
        CHECK(Vm(tape).isa() == isa);
        // An explicit Options::isa wins over the variable.
        CHECK(Vm(tape, {.isa = Isa::sse2}).isa() == Isa::sse2);
    }
    {
        const ScopedEnvironment bad("TAPEVM_CPU_ISA", "neon");
        CHECK_THROWS_AS(Vm{tape}, tapevm::Unsupported);
        try {
            Vm vm(tape);
        } catch (const tapevm::Unsupported& error) {
            CHECK(std::string(error.what()).find("neon") != std::string::npos);
            CHECK(std::string(error.what()).find("sse2") != std::string::npos);
        }
    }
    const ScopedEnvironment no_override("TAPEVM_CPU_ISA", nullptr);
    for (const Isa isa : {Isa::avx2, Isa::avx512}) {
        if (std::find(isas.begin(), isas.end(), isa) != isas.end()) continue;
        CAPTURE(tapevm::cpu::isa_name(isa));
        CHECK_THROWS_AS(Vm(tape, {.isa = isa}), tapevm::Unsupported);
    }
}

TEST_CASE("threads 1, 2 and 3 give identical results; block_lanes is a multiple of the width") {
    const Tape tape = tapevm::examples::example_tape("trig16");
    const RandomBatch<double> data(tape, 5000, 21, false);
    const Vm one(tape, {.threads = 1, .block_lanes = 64});
    CHECK(one.threads() == 1);
    const auto expected = one.gradient(data.batch());
    for (const unsigned threads : {2u, 3u}) {
        const Vm vm(tape, {.threads = threads, .block_lanes = 64});
        CHECK(vm.threads() == threads);
        const auto got = vm.gradient(data.batch());
        CHECK(tapevm::test::first_different_value(got.values, expected.values) == -1);
    }
    CHECK(Vm(tape).threads() >= 1);
    for (const std::size_t size : {4u, 8u}) {
        const std::size_t lanes = Vm(tape).block_lanes(size);
        CHECK(lanes >= 16);
        CHECK(lanes <= 1024);
        CHECK(lanes % 4 == 0);
    }
    CHECK(Vm(tape, {.block_lanes = 21}).block_lanes(8) % 2 == 0);
}

TEST_CASE("TAPEVM_CPU_BLOCK_LANES sets the block size unless Options does; bad values throw") {
    const Tape tape = tapevm::examples::example_tape("trig16");
    const RandomBatch<double> data(tape, 300, 4, false);
    const auto expected =
        Vm(tape, {.threads = 1, .isa = Isa::sse2, .block_lanes = 64}).gradient(data.batch());
    {
        const ScopedEnvironment lanes("TAPEVM_CPU_BLOCK_LANES", "40");
        const Vm vm(tape, {.threads = 1, .isa = Isa::sse2});
        CHECK(vm.block_lanes(8) == 40);
        CHECK(Vm(tape, {.threads = 1, .isa = Isa::sse2, .block_lanes = 16}).block_lanes(8) == 16);
        CHECK(tapevm::test::first_different_value(vm.gradient(data.batch()).values, expected.values) == -1);
    }
    for (const char* bad : {"0", "-8", "12x", "999999999"}) {
        CAPTURE(bad);
        const ScopedEnvironment lanes("TAPEVM_CPU_BLOCK_LANES", bad);
        CHECK_THROWS_WITH_AS(Vm{tape}, doctest::Contains("TAPEVM_CPU_BLOCK_LANES"), tapevm::Error);
    }
}

TEST_CASE("four user threads calling one Vm at once get the same results as one call") {
    const Tape tape = tapevm::examples::example_tape("ba-param");
    const RandomBatch<double> data(tape, 3001, 5, true);
    const Vm vm(tape, {.threads = 2, .block_lanes = 32});
    const auto expected = vm.jacobian(data.batch());
    std::vector<std::vector<double>> results(4);
    std::vector<std::thread> callers;
    for (std::size_t t = 0; t < 4; ++t) {
        callers.emplace_back([&, t] {
            for (int repeat = 0; repeat < 5; ++repeat) results[t] = vm.jacobian(data.batch()).values;
        });
    }
    for (std::thread& caller : callers) caller.join();
    for (const auto& result : results)
        CHECK(tapevm::test::first_different_value(result, expected.values) == -1);
}

TEST_CASE("guards: the points on the other side of a recorded branch are reported, sorted") {
    // Recorded at x = 1: the branch x > 0 holds there.
    const std::vector<double> at = {1.0};
    const Tape tape = tapevm::record(std::span<const double>(at), [](std::span<const Var> x) {
        if (x[0] > 0.0) return x[0] * x[0];
        return -x[0];
    });
    REQUIRE(tape.guard_count() == 1);
    std::vector<double> inputs(1037);
    for (std::size_t p = 0; p < inputs.size(); ++p) inputs[p] = (p % 7 == 3 || p > 1030) ? -1.0 - p : 0.5 + p;
    inputs[500] = std::numeric_limits<double>::quiet_NaN();  // NaN > 0 is false: diverges
    const Batch<double> batch{inputs.size(), inputs, {}};
    const tapevm::reference::Vm reference(tape);
    const Vm vm(tape, {.threads = 3, .block_lanes = 16});
    const auto expected = reference.gradient(batch);
    REQUIRE(expected.report.diverged.size() > 100);
    CHECK(vm.forward(batch).report.diverged == expected.report.diverged);
    CHECK(vm.gradient(batch).report.diverged == expected.report.diverged);
    CHECK(vm.jacobian(batch).report.diverged == expected.report.diverged);
    const std::vector<double> ones(inputs.size(), 1.0);
    CHECK(vm.hvp(batch, std::span<const double>(ones), std::span<const double>(ones)).report.diverged ==
          expected.report.diverged);
    const std::vector<float> inputs_f(inputs.begin(), inputs.end());
    CHECK(vm.forward(Batch<float>{inputs_f.size(), inputs_f, {}}).report.diverged ==
          expected.report.diverged);
}

TEST_CASE("NaN and infinity in some lanes leave every other lane's results unchanged") {
    const Tape tape = tapevm::examples::example_tape("trig16");
    const RandomBatch<double> clean(tape, 64, 9, false);
    RandomBatch<double> poisoned = clean;
    const double specials[] = {std::numeric_limits<double>::quiet_NaN(),
                               std::numeric_limits<double>::infinity(),
                               -std::numeric_limits<double>::infinity(), 1e308};
    const std::vector<std::size_t> bad_points = {0, 5, 8, 33, 63};
    for (std::size_t k = 0; k < bad_points.size(); ++k) {
        poisoned.inputs[bad_points[k] * 16 + k % 16] = specials[k % 4];
    }
    const Vm vm(tape, {.threads = 1, .block_lanes = 64});
    const tapevm::reference::Vm reference(tape);
    // Poisoned lanes follow the reference VM's NaN and infinity semantics ...
    check_all_operations<double>(vm, reference, poisoned, 1e-11, "poisoned");
    // ... and the others are exactly what they are without the poison.
    const auto clean_gradient = vm.gradient(clean.batch()).values;
    const auto poisoned_gradient = vm.gradient(poisoned.batch()).values;
    const auto clean_hvp = vm.hvp(clean.batch(), std::span<const double>(clean.cotangents),
                                  std::span<const double>(clean.directions))
                               .values;
    const auto poisoned_hvp = vm.hvp(poisoned.batch(), std::span<const double>(poisoned.cotangents),
                                     std::span<const double>(poisoned.directions))
                                  .values;
    for (std::size_t p = 0; p < 64; ++p) {
        if (std::find(bad_points.begin(), bad_points.end(), p) != bad_points.end()) continue;
        for (std::size_t i = 0; i < 16; ++i) {
            CHECK(tapevm::test::same_value(poisoned_gradient[p * 16 + i], clean_gradient[p * 16 + i]));
            CHECK(tapevm::test::same_value(poisoned_hvp[p * 16 + i], clean_hvp[p * 16 + i]));
        }
    }
}

TEST_CASE("parameters shared by all points or one set per point") {
    const Tape tape = tapevm::examples::example_tape("ba-param");
    REQUIRE(tape.param_count() == 2);
    const RandomBatch<double> data(tape, 100, 31, true);
    const Vm vm(tape, {.threads = 2, .block_lanes = 16});
    const tapevm::reference::Vm reference(tape);
    check_all_operations<double>(vm, reference, data, 1e-11, "per point");
    const std::vector<double> shared = {-525.0, 161.0};
    const Batch<double> shared_batch{data.points, data.inputs, shared};
    check_close(vm.jacobian(shared_batch).values, reference.jacobian(shared_batch).values, 1e-11, "shared");
    check_close(vm.forward(shared_batch).values, reference.forward(shared_batch).values, 1e-11, "shared");
    // One point: both layouts are one set.
    const Batch<double> one{1, std::span<const double>(data.inputs).first(15), shared};
    check_close(vm.hvp(one, std::span<const double>(data.cotangents).first(2),
                       std::span<const double>(data.directions).first(15))
                    .values,
                reference
                    .hvp(one, std::span<const double>(data.cotangents).first(2),
                         std::span<const double>(data.directions).first(15))
                    .values,
                1e-11, "one point");
}

TEST_CASE("a buffer of the wrong size is a ShapeError; gradient of 2 outputs is Unsupported") {
    const Tape tape = tapevm::examples::example_tape("ba");
    const Vm vm(tape, {.threads = 1});
    const RandomBatch<double> data(tape, 3, 1, true);
    std::vector<double> wrong(5);
    CHECK_THROWS_AS(vm.forward(data.batch(), std::span<double>(wrong)), tapevm::ShapeError);
    CHECK_THROWS_AS(vm.jacobian(data.batch(), std::span<double>(wrong)), tapevm::ShapeError);
    CHECK_THROWS_AS(vm.gradient(data.batch()), tapevm::Unsupported);
    const Batch<double> short_inputs{4, data.inputs, {}};
    CHECK_THROWS_AS(vm.forward(short_inputs), tapevm::ShapeError);
}

TEST_CASE("an empty batch and tapes without inputs or outputs") {
    const Tape tape = tapevm::examples::example_tape("rosenbrock16");
    const Vm vm(tape, {.threads = 2});
    const Batch<double> empty{0, {}, {}};
    CHECK(vm.forward(empty).values.empty());
    CHECK(vm.gradient(empty).values.empty());
    // A constant function: no input reaches the output, every derivative is 0.
    const Tape constant = tapevm::record(2, [](std::span<const Var>) { return Var(3.0); });
    const Vm constant_vm(constant, {.threads = 1});
    const std::vector<double> x = {1, 2, 3, 4, 5, 6};
    const Batch<double> batch{3, x, {}};
    CHECK(constant_vm.forward(batch).values == std::vector<double>{3, 3, 3});
    CHECK(constant_vm.gradient(batch).values == std::vector<double>(6, 0.0));
    CHECK(constant_vm.jacobian(batch, tapevm::JacobianMode::forward).values == std::vector<double>(6, 0.0));
}

}  // namespace
