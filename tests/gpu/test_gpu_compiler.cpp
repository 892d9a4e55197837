// The tape compiler (gpu::Engine::compiled): its kernels against the interpreter bit for bit,
// the fallback over the size limit, the caches (SPIR-V in memory and on disk, a corrupted
// entry rebuilt), the fused value-and-gradient kernel, and the generated GLSL of small tapes
// against golden files. The shared suites (gpu_modes_compiled, conformance_gpu_compiled) check
// the compiled kernels against the reference VM.
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <doctest/doctest.h>
#include <unistd.h>
#include <xxhash.h>

#include "compiler.hpp"
#include "disk_cache.hpp"
#include "glsl_compiler.hpp"
#include "reverse_order.hpp"
#include "tape_ops.hpp"
#include "gpu_support.hpp"
#include "tapevm/error.hpp"
#include "tapevm/examples.hpp"
#include "tapevm/var.hpp"

namespace tapevm::test {
namespace {

namespace fs = std::filesystem;
using gpu::detail::DiskCache;

// A folder of its own under the system's temporary folder, removed at the end.
class TemporaryFolder {
public:
    explicit TemporaryFolder(const std::string& name)
        : path_(fs::temp_directory_path() / ("tapevm_" + name + "_" + std::to_string(getpid()))) {
        fs::remove_all(path_);
        fs::create_directories(path_);
    }
    ~TemporaryFolder() {
        std::error_code ignored;
        fs::remove_all(path_, ignored);
    }
    const fs::path& path() const { return path_; }

private:
    fs::path path_;
};

std::vector<std::byte> bytes(std::string_view text) {
    std::vector<std::byte> out(text.size());
    if (!text.empty()) std::memcpy(out.data(), text.data(), text.size());
    return out;
}

// Equal bit for bit (NaNs equal when both are NaN: their payloads may differ between kernels).
template <class Real>
void check_identical(const std::vector<Real>& compiled, const std::vector<Real>& interpreted,
                     const std::string& what) {
    REQUIRE(compiled.size() == interpreted.size());
    for (std::size_t i = 0; i < compiled.size(); ++i) {
        const bool same = (std::isnan(compiled[i]) && std::isnan(interpreted[i])) ||
                          std::memcmp(&compiled[i], &interpreted[i], sizeof(Real)) == 0;
        if (!same) {
            FAIL_CHECK(what << ": value " << i << ": compiled " << compiled[i] << ", interpreter "
                            << interpreted[i]);
            return;
        }
    }
}

gpu::Options engine_options(gpu::Engine engine, std::size_t chunk_points = 0) {
    gpu::Options options = test_options(chunk_points);
    options.engine = engine;
    return options;
}

// sin, cos, sinh and cosh of the same operands (the partial of each is the value of another:
// the compiled kernels take it from there), a guard, per-point parameters, a constant output.
Tape sibling_tape() {
    const std::vector<double> at = {0.5, -1.25, 2.0};
    const std::vector<double> params = {1.5};
    Tape tape = record(std::span<const double>(at), std::span<const double>(params),
                       [](std::span<const Var> x, std::span<const Var> p) {
                           // One statement per op: the order of recording (and so the golden
                           // GLSL) must not depend on the compiler's order of evaluating operands.
                           const Var sin0 = sin(x[0]);
                           const Var cos0 = cos(x[0]);
                           const Var sinh1 = sinh(x[1]);
                           const Var cosh1 = cosh(x[1]);
                           const Var trig = sin0 * cos0;
                           const Var scaled = sinh1 * p[0];
                           const Var sum = trig + scaled;
                           Var s = sum - cosh1;
                           if (x[2] > 0.0) {
                               const Var cos2 = cos(x[2]);
                               const Var sin2 = sin(x[2]);
                               s = s + cos2 * sin2;
                           }
                           const Var abs1 = abs(x[1]);
                           const Var sign1 = sign(x[1]);
                           return std::vector<Var>{s, abs1 + sign1, Var(3.0)};
                       });
    tape.optimize();
    return tape;
}

// Every mode of `tape` on the compiled engine and on the interpreter, 200 points in chunks of
// 64 (a partial workgroup and several chunks), compared bit for bit.
template <class Real> void check_against_interpreter(const Tape& tape, double low, double high) {
    const gpu::Vm compiled(tape, engine_options(gpu::Engine::compiled, 64));
    const gpu::Vm interpreter(tape, engine_options(gpu::Engine::interpreter, 64));
    if (!compiled.device().float64 && sizeof(Real) == 8) return;
    const std::size_t points = 200, n = tape.input_count(), m = tape.output_count(), p = tape.param_count();
    const auto x = random_values<Real>(points * n, low, high, 11);
    const auto params = random_values<Real>(points * p, 0.5, 2.0, 12);
    const auto seeds = random_values<Real>(points * m, -1, 1, 13);
    const auto directions = random_values<Real>(points * n, -1, 1, 14);
    const Batch<Real> batch{points, x, params};
    const auto both = [&](auto&& call, const std::string& what) {
        CAPTURE(what);
        auto from_compiled = call(compiled);
        auto from_interpreter = call(interpreter);
        check_identical(from_compiled.values, from_interpreter.values, what);
        CHECK(from_compiled.report.diverged == from_interpreter.report.diverged);
    };
    both([&](const gpu::Vm& vm) { return vm.forward(batch); }, "forward");
    if (m == 1) both([&](const gpu::Vm& vm) { return vm.gradient(batch); }, "gradient");
    both([&](const gpu::Vm& vm) { return vm.jacobian(batch, JacobianMode::reverse); }, "jacobian reverse");
    both([&](const gpu::Vm& vm) { return vm.jacobian(batch, JacobianMode::forward); }, "jacobian forward");
    both([&](const gpu::Vm& vm) { return vm.vjp(batch, std::span<const Real>(seeds)); }, "vjp");
    both([&](const gpu::Vm& vm) { return vm.jvp(batch, std::span<const Real>(directions)); }, "jvp");
    both(
        [&](const gpu::Vm& vm) {
            return vm.hvp(batch, std::span<const Real>(seeds), std::span<const Real>(directions));
        },
        "hvp");
    for (const char* mode : {"forward", "jacobian", "jvp", "vjp", "hvp"}) {
        CAPTURE(mode);
        CHECK(compiled.compile_plan<Real>(mode).compiled);
    }
    check_validation_clean();
}

TEST_CASE("compiled kernels equal the interpreter bit for bit, every mode") {
    const TemporaryFolder cache("compiler_modes");
    const ScopedEnv env("TAPEVM_CACHE_DIR", cache.path().c_str());
    for (const char* name : {"ba-param", "rosenbrock16"}) {
        CAPTURE(name);
        const Tape tape = examples::example_tape(name);
        if (std::string_view(name) == "ba-param") {
            // Points near the example's, where the residual is well defined.
            const gpu::Vm compiled(tape, engine_options(gpu::Engine::compiled, 64));
            const gpu::Vm interpreter(tape, engine_options(gpu::Engine::interpreter, 64));
            const auto x = perturbed_rows<float>(examples::ba_test_inputs, 150, 0.03, 5);
            const auto feature = perturbed_rows<float>(examples::ba_test_feature, 150, 0.03, 6);
            const Batch<float> batch{150, x, feature};
            check_identical(compiled.jacobian(batch).values, interpreter.jacobian(batch).values,
                            "ba jacobian");
            continue;
        }
        check_against_interpreter<float>(tape, -2, 2);
        check_against_interpreter<double>(tape, -2, 2);
    }
    check_against_interpreter<float>(sibling_tape(), -3, 3);
    check_against_interpreter<double>(sibling_tape(), -3, 3);
}

// sum_{i<blocks} sin(x[i]) exp(cos(x[i-1 mod blocks])) + x[i]^2 / (1 + x[i]^2): trig16's
// shape, small enough for lavapipe. The cosine of x[i-1] is used a block later, so its
// contribution to x[i-1]'s adjoint comes first in the reference order but is computed after
// the other contributions, which wait for it.
Tape trig_tape(std::uint32_t blocks) {
    Tape tape = record(blocks, [&](std::span<const Var> x) {
        Var sum(0.0);
        for (std::uint32_t i = 0; i < blocks; ++i) {
            const Var square = x[i] * x[i];
            sum = sum + sin(x[i]) * exp(cos(x[(i + blocks - 1) % blocks])) + square / (1.0 + square);
        }
        return std::vector<Var>{sum};
    });
    tape.optimize();
    return tape;
}

TEST_CASE("reverse statements placed early keep the reference order of every adjoint's sum") {
    const Tape tape = trig_tape(2);
    const std::string glsl = gpu::generated_glsl(tape, "gradient", false);
    CHECK(glsl.find("precise REAL c0_") != std::string::npos);  // a contribution waited
    check_against_interpreter<float>(tape, -2, 2);
    check_against_interpreter<double>(tape, -2, 2);
}

// The placement's promises (reverse_order.hpp) on `tape` with `seeds` seeds: each statement after
// what it reads and after every consumer that contributes to its adjoint; each adjoint's terms
// numbered 0, 1, ... once each. Returns the placements.
std::vector<std::int64_t> check_reverse_order(const Tape& tape, std::uint32_t seeds, bool from_buffer) {
    using gpu::detail::operand;
    const auto instructions = tape.instructions();
    const std::size_t slots = instructions.size();
    std::vector<bool> depends(slots, false);
    std::vector<std::int64_t> reads(slots, gpu::detail::ReverseOrder::before_forward);
    for (std::size_t s = 0; s < slots; ++s) {
        const Instruction& ins = instructions[s];
        depends[s] = ins.op == Op::Input;
        const std::uint32_t bits = info(ins.op).partial_reads;
        for (std::uint32_t k = 0; k < arity(ins.op); ++k) {
            depends[s] = depends[s] || depends[operand(ins, k)];
            if ((bits >> k) & 1u) reads[s] = std::max<std::int64_t>(reads[s], operand(ins, k));
        }
        if (bits & gpu::detail::partial_reads_result) reads[s] = static_cast<std::int64_t>(s);
    }
    const auto order = gpu::detail::reverse_order(tape, depends, seeds, from_buffer, reads);
    for (std::uint32_t k = 0; k < seeds; ++k) {
        std::vector<std::vector<std::uint32_t>> terms(slots);
        const auto outputs = tape.outputs();
        for (std::uint32_t j = 0; j < outputs.size(); ++j)
            if (depends[outputs[j]] && (from_buffer || j == k))
                terms[outputs[j]].push_back(static_cast<std::uint32_t>(terms[outputs[j]].size()));
        for (std::size_t s = 0; s < slots; ++s) {
            if (!order.active[s] || !order.reached[k][s]) continue;
            CHECK(order.after[s] >= reads[s]);
            const Instruction& ins = instructions[s];
            for (std::uint32_t i = 0; i < arity(ins.op); ++i) {
                const std::uint32_t x = operand(ins, i);
                if (!depends[x]) continue;
                terms[x].push_back(order.position[k][3 * s + i]);
                // The consumer comes first: placed no later, and higher slots go first in a placement.
                if (order.active[x]) CHECK(order.after[s] <= order.after[x]);
            }
        }
        for (std::size_t x = 0; x < slots; ++x) {
            std::sort(terms[x].begin(), terms[x].end());
            CHECK(terms[x].size() == order.terms[k][x]);
            for (std::uint32_t t = 0; t < terms[x].size(); ++t) CHECK(terms[x][t] == t);
        }
    }
    return order.after;
}

TEST_CASE("reverse statements go as early as their values and consumers allow") {
    check_reverse_order(examples::example_tape("ba"), 2, false);
    check_reverse_order(examples::example_tape("ba"), 1, true);
    check_reverse_order(examples::example_tape("rosenbrock16"), 1, false);
    check_reverse_order(sibling_tape(), 3, false);
    // trig16: every statement that reads values goes within its block (10 slots), not after the
    // forward sweep as in the reference order.
    const Tape trig16 = examples::example_tape("trig16");
    const auto after = check_reverse_order(trig16, 1, false);
    const auto instructions = trig16.instructions();
    for (std::size_t s = 0; s < instructions.size(); ++s) {
        if (after[s] == gpu::detail::ReverseOrder::before_forward) continue;
        CAPTURE(s);
        CHECK(after[s] <= static_cast<std::int64_t>(s) + 12);
    }
}

TEST_CASE("a kernel that reads one of several inputs (random tree 30 of the conformance suite)") {
    // asinh(exp(log(x1))) of three inputs, and log1p(exp(x1)): lavapipe (Mesa 22.3, LLVM 15)
    // miscompiles the f32 kernels where exp's result feeds a logarithm (5.9e-39 for 1.23) unless
    // LLVM's optimiser is off (GALLIVM_PERF=nopt, which the compiled suites set: meson.build);
    // the interpreter, which runs the same functions one instruction at a time, is right.
    for (const bool log_first : {true, false}) {
        CAPTURE(log_first);
        Tape tape = record(3, [&](std::span<const Var> x) {
            return std::vector<Var>{log_first ? asinh(exp(log(x[1]))) : log1p(exp(x[1]))};
        });
        tape.optimize();
        check_against_interpreter<float>(tape, 0.1, 2.0);
        check_against_interpreter<double>(tape, 0.1, 2.0);
    }
}

TEST_CASE("partials taken from values the kernel has: siblings, and sine and cosine from one reduction") {
    // Sinh's partial is the Cosh of the same operand and the other way round; Sin and Cos of one
    // operand come from one tv_sincos, which also gives their partials.
    const std::string glsl = gpu::generated_glsl(sibling_tape(), "jacobian", false);
    CHECK(glsl.find("tv_partials_sinh(") == std::string::npos);
    CHECK(glsl.find("tv_partials_cosh(") == std::string::npos);
    CHECK(glsl.find("tv_partials_sin(") == std::string::npos);
    CHECK(glsl.find("tv_partials_cos(") == std::string::npos);
    CHECK(glsl.find("tv_value_sin(") == std::string::npos);
    CHECK(glsl.find("tv_sincos(v0, sin0, cos0)") != std::string::npos);
    // Without a Cosh, Sinh computes its partial; a lone Sin needs its cosine only for its partial.
    const Tape lone = record(1, [](std::span<const Var> x) { return sin(x[0]) + sinh(x[0] * 2.0); });
    const std::string gradient = gpu::generated_glsl(lone, "gradient", false);
    CHECK(gradient.find("tv_partials_sinh(") != std::string::npos);
    CHECK(gradient.find("tv_sincos(v0, sin0, cos0)") != std::string::npos);
    const std::string forward = gpu::generated_glsl(lone, "forward", false);
    CHECK(forward.find("tv_value_sin(v0)") != std::string::npos);
    CHECK(forward.find("tv_sincos") == std::string::npos);
}

TEST_CASE("a kernel over the statement limit falls back to the interpreter, visibly") {
    const TemporaryFolder cache("compiler_limit");
    const ScopedEnv env("TAPEVM_CACHE_DIR", cache.path().c_str());
    const Tape tape = examples::example_tape("rosenbrock16");
    const auto x = random_values<float>(100 * 16, -2, 2, 3);
    const Batch<float> batch{100, x, {}};
    std::vector<float> expected;
    {
        const gpu::Vm interpreter(tape, engine_options(gpu::Engine::interpreter));
        expected = interpreter.gradient(batch).values;
    }
    {
        const ScopedEnv limit("TAPEVM_GPU_COMPILE_LIMIT", "50");
        const gpu::Vm vm(tape, engine_options(gpu::Engine::compiled));
        const gpu::CompilePlan plan = vm.compile_plan<float>("gradient");
        CHECK_FALSE(plan.compiled);
        CHECK(plan.reason.find("over the limit of 50") != std::string::npos);
        CHECK(plan.reason.find("TAPEVM_GPU_COMPILE_LIMIT") != std::string::npos);
        CHECK(vm.gradient(batch).values == expected);
        CHECK_FALSE(gpu::planned_compile(tape, "gradient", false).compiled);
        // The interpreter engine reports that it compiles nothing.
        const gpu::Vm interpreter(tape, engine_options(gpu::Engine::interpreter));
        CHECK(interpreter.compile_plan<float>("gradient").reason == "the interpreter engine");
    }
    {
        const ScopedEnv limit("TAPEVM_GPU_COMPILE_LIMIT", "-3");
        const gpu::Vm vm(tape, engine_options(gpu::Engine::compiled));
        CHECK_THROWS_WITH_AS(vm.compile_plan<float>("gradient"),
                             doctest::Contains("TAPEVM_GPU_COMPILE_LIMIT"), Error);
    }
    CHECK(gpu::planned_compile(tape, "gradient", false).compiled);
    CHECK_THROWS_AS(gpu::planned_compile(tape, "no-such-mode", false), Unsupported);
}

TEST_CASE("on lavapipe kernels are compiled only with LLVM's optimiser off (GALLIVM_PERF=nopt)") {
    const std::string lavapipe = "llvmpipe (LLVM 15.0.6, 256 bits)";
    {
        const ScopedEnv perf("GALLIVM_PERF", nullptr);
        CHECK(gpu::detail::device_refuses("NVIDIA H100 80GB HBM3").empty());
        CHECK(gpu::detail::device_refuses(lavapipe).find("GALLIVM_PERF=nopt") != std::string::npos);
    }
    {
        const ScopedEnv perf("GALLIVM_PERF", "no_filter_hacks");
        CHECK_FALSE(gpu::detail::device_refuses(lavapipe).empty());
    }
    for (const char* value : {"nopt", "no_filter_hacks,nopt"}) {
        CAPTURE(value);
        const ScopedEnv perf("GALLIVM_PERF", value);
        CHECK(gpu::detail::device_refuses(lavapipe).empty());
    }
    // On lavapipe without it, the compiled engine runs the interpreter and says why.
    const gpu::Vm probe(examples::example_tape("rosenbrock16"), engine_options(gpu::Engine::interpreter));
    if (probe.device().name.find("llvmpipe") != std::string::npos) {
        const ScopedEnv perf("GALLIVM_PERF", nullptr);
        const gpu::Vm vm(examples::example_tape("rosenbrock16"), engine_options(gpu::Engine::compiled));
        const gpu::CompilePlan plan = vm.compile_plan<float>("gradient");
        CHECK_FALSE(plan.compiled);
        CHECK(plan.reason.find("miscompiles") != std::string::npos);
    }
}

TEST_CASE("on CPU devices math-library calls count toward the size limit, more in double") {
    // trig16: 16 each of sin and cos (one tv_sincos), exp and tanh, plus a division each.
    const Tape tape = examples::example_tape("trig16");
    const gpu::CompilePlan f32 = gpu::planned_compile(tape, "forward", false);
    const gpu::CompilePlan f64 = gpu::planned_compile(tape, "forward", true);
    CHECK(f32.library_calls == 64);
    CHECK(f64.library_calls == 64);
    CHECK(f32.statements == f64.statements);
    // Reverse kernels add the partials' calls (none here: tanh's and exp's read the result,
    // sin's and cos's come from the tv_sincos); in hvp's duals tanh and exp count twice.
    CHECK(gpu::planned_compile(tape, "gradient", true).library_calls == 64);
    CHECK(gpu::planned_compile(tape, "hvp", true).library_calls == 96);
    gpu::detail::GeneratedKernel generated;
    generated.statements = f32.statements;
    generated.library_calls = f32.library_calls;
    for (const bool double_precision : {false, true}) {
        CAPTURE(double_precision);
        // GPUs count statements only; CPU devices 25 (float) or 150 (double) per call.
        CHECK(gpu::detail::over_limit(generated, "discrete", double_precision).empty());
        const std::string on_cpu = gpu::detail::over_limit(generated, "cpu", double_precision);
        CHECK(on_cpu.empty() == !double_precision);
        if (double_precision) {
            CHECK(on_cpu.find("64 math-library calls") != std::string::npos);
            CHECK(on_cpu.find("over the limit of 2500") != std::string::npos);
        }
    }
    const auto rosenbrock = gpu::planned_compile(examples::example_tape("rosenbrock16"), "hvp", true);
    CHECK(rosenbrock.library_calls == 0);
}

TEST_CASE("SPIR-V comes from the disk cache in a new process; a corrupted entry is rebuilt") {
    const TemporaryFolder cache("compiler_cache");
    const ScopedEnv env("TAPEVM_CACHE_DIR", cache.path().c_str());
    // A tape no other test compiles (its constant), so nothing is in memory yet.
    const Tape tape = record(2, [](std::span<const Var> x) { return x[0] * x[1] + 0.123456789 * exp(x[1]); });
    const auto x = random_values<float>(70 * 2, -1, 1, 8);
    const Batch<float> batch{70, x, {}};
    const std::vector<float> expected =
        gpu::Vm(tape, engine_options(gpu::Engine::interpreter)).gradient(batch).values;
    const auto compile = [&] {
        const gpu::Vm vm(tape, engine_options(gpu::Engine::compiled));
        const gpu::CompilePlan plan = vm.compile_plan<float>("gradient");
        REQUIRE(plan.compiled);
        CHECK(vm.gradient(batch).values == expected);
        return plan;
    };
    gpu::detail::clear_spirv_memory_cache();
    const gpu::CompilePlan cold = compile();
    CHECK_FALSE(cold.spirv_from_cache);
    CHECK(cold.generate_s > 0);
    CHECK(cold.glslang_s > 0);
    CHECK(cold.total_s >= cold.generate_s + cold.glslang_s + cold.pipeline_s);
    CHECK(cold.pipeline_s >= cold.pipeline_cache_s + cold.pipeline_create_s);
    // The same kernel in a new Vm of this process: the SPIR-V from memory, the device's pipeline.
    const gpu::CompilePlan warm = compile();
    CHECK(warm.spirv_from_cache);
    CHECK(warm.pipeline_reused);
    CHECK(warm.statements == cold.statements);
    // As in a new process: from disk, keyed by the tape, so no GLSL is generated and glslang
    // does not run; the sizes the limit checks come from the entry.
    gpu::detail::clear_spirv_memory_cache();
    const gpu::CompilePlan disk = compile();
    CHECK(disk.spirv_from_cache);
    CHECK(disk.generate_s == 0);
    CHECK(disk.glslang_s == 0);
    CHECK(disk.statements == cold.statements);
    CHECK(disk.library_calls == cold.library_calls);
    // Where the device offers module identifiers (the H100, not lavapipe), the driver's pipeline
    // comes by the identifier, no SPIR-V read; the gradient above is right either way.
    MESSAGE("from the disk cache by module identifier: ", disk.pipeline_from_identifier);
    if (disk.pipeline_from_identifier) CHECK(disk.driver_cache_hit != false);
    // Another mode or precision of the same tape is another kernel.
    {
        const gpu::Vm vm(tape, engine_options(gpu::Engine::compiled));
        CHECK_FALSE(vm.compile_plan<float>("forward").spirv_from_cache);
    }

    // Corrupt every entry (one byte in the middle of the payload) or truncate it: each is
    // detected, removed and rebuilt by glslang, and the results stay right.
    for (const bool truncate : {false, true}) {
        CAPTURE(truncate);
        std::size_t damaged = 0;
        for (const auto& entry : fs::directory_iterator(cache.path())) {
            const auto size = fs::file_size(entry.path());
            if (truncate) {
                fs::resize_file(entry.path(), size / 2);
            } else {
                std::fstream file(entry.path(), std::ios::in | std::ios::out | std::ios::binary);
                file.seekp(static_cast<std::streamoff>(size - size / 3));
                char byte = 0;
                file.read(&byte, 1);
                file.seekp(static_cast<std::streamoff>(size - size / 3));
                byte = static_cast<char>(byte ^ 0x5a);
                file.write(&byte, 1);
            }
            ++damaged;
        }
        CHECK(damaged >= 1);
        gpu::detail::clear_spirv_memory_cache();
        CHECK_FALSE(compile().spirv_from_cache);
        gpu::detail::clear_spirv_memory_cache();
        CHECK(compile().spirv_from_cache);  // the rebuilt entry is good
    }
}

TEST_CASE("the disk cache: round trips, and damaged, foreign or missing entries are misses") {
    const TemporaryFolder folder("disk_cache");
    const DiskCache cache(folder.path() / "sub");  // created on the first store
    CHECK_FALSE(cache.load("a").has_value());
    cache.store("a", bytes("payload of a"));
    cache.store("b", bytes(""));
    REQUIRE(cache.load("a").has_value());
    CHECK(*cache.load("a") == bytes("payload of a"));
    CHECK(cache.load("b") == std::optional(std::vector<std::byte>{}));
    cache.store("a", bytes("new payload"));  // replaced
    CHECK(*cache.load("a") == bytes("new payload"));
    // An entry moved under another key's name holds the wrong key: a miss, and removed.
    fs::copy_file(cache.path("a"), cache.path("c"));
    CHECK_FALSE(cache.load("c").has_value());
    CHECK_FALSE(fs::exists(cache.path("c")));
    // Garbage, a truncated header, a wrong payload size: misses.
    std::ofstream(cache.path("d"), std::ios::binary) << "not a cache entry at all, just text";
    CHECK_FALSE(cache.load("d").has_value());
    std::ofstream(cache.path("e"), std::ios::binary) << "tvcache2";
    CHECK_FALSE(cache.load("e").has_value());
    cache.store("f", bytes("0123456789"));
    {
        std::ofstream append(cache.path("f"), std::ios::binary | std::ios::app);
        append << "tail";
    }
    CHECK_FALSE(cache.load("f").has_value());
    // An empty folder path disables the cache; a folder that cannot be created drops stores.
    const DiskCache off{fs::path()};
    off.store("a", bytes("x"));
    CHECK_FALSE(off.load("a").has_value());
    std::ofstream(folder.path() / "file") << "x";
    const DiskCache blocked(folder.path() / "file" / "under");
    blocked.store("a", bytes("x"));
    CHECK_FALSE(blocked.load("a").has_value());
    // Where the cache lives.
    {
        const ScopedEnv dir("TAPEVM_CACHE_DIR", "/some/folder");
        CHECK(gpu::detail::default_cache_folder() == fs::path("/some/folder"));
    }
    {
        const ScopedEnv dir("TAPEVM_CACHE_DIR", nullptr);
        const ScopedEnv xdg("XDG_CACHE_HOME", "/xdg");
        CHECK(gpu::detail::default_cache_folder() == fs::path("/xdg/tapevm"));
        const ScopedEnv no_xdg("XDG_CACHE_HOME", nullptr);
        const ScopedEnv home("HOME", "/home/user");
        CHECK(gpu::detail::default_cache_folder() == fs::path("/home/user/.cache/tapevm"));
    }
}

TEST_CASE("kernel keys name the tape's contents and the spec, nothing else") {
    using gpu::detail::kernel_key;
    const auto make = [](double constant, bool use_exp) {
        return record(2, [&](std::span<const Var> x) {
            return x[0] * x[1] + constant * (use_exp ? exp(x[1]) : sin(x[1]));
        });
    };
    gpu::detail::KernelSpec spec;
    spec.kernel = gpu::detail::Kernel::reverse;
    spec.directions = 1;
    const std::string key = kernel_key(make(0.5, true), spec);
    CHECK(key.rfind("kernel-", 0) == 0);
    CHECK(key.size() == 7 + 32);                       // 128 bits in hex
    CHECK(kernel_key(make(0.5, true), spec) == key);   // the same tape recorded again
    CHECK(kernel_key(make(0.25, true), spec) != key);  // a constant
    CHECK(kernel_key(make(0.5, false), spec) != key);  // an op
    for (const auto change : std::initializer_list<void (*)(gpu::detail::KernelSpec&)>{
             [](gpu::detail::KernelSpec& s) { s.double_precision = true; },
             [](gpu::detail::KernelSpec& s) { s.directions = 2; },
             [](gpu::detail::KernelSpec& s) { s.seeds_from_buffer = true; },
             [](gpu::detail::KernelSpec& s) { s.write_values = true; },
             [](gpu::detail::KernelSpec& s) { s.workgroup = 128; },
             [](gpu::detail::KernelSpec& s) { s.staging = false; },
             [](gpu::detail::KernelSpec& s) { s.kernel = gpu::detail::Kernel::forward; }}) {
        gpu::detail::KernelSpec other = spec;
        change(other);
        CHECK(kernel_key(make(0.5, true), other) != key);
    }
}

TEST_CASE("hash64 is XXH64: xxHash's own values (xxhsum -H1), every tail length") {
    using gpu::detail::hash64;
    // Values from xxhsum, not from the library hash64 calls: entries written by an earlier build
    // (the hand-written XXH64) keep their names and checksums, so they still load.
    CHECK(hash64(bytes("")) == 0xef46db3751d8e999ull);
    CHECK(hash64(bytes("a")) == 0xd24ec4f1a98c6e5bull);
    CHECK(hash64(bytes("abc")) == 0x44bc2cf5ad770999ull);
    CHECK(hash64(bytes(std::string(100, 'x'))) == 0x92f0de5a88a3c094ull);  // stripes, 8- and 4-byte tails
    CHECK(hash64(bytes("0123456789abcdef0123456789abcdef0123456789abcdefxyz")) == 0xdeb1c83f420a99efull);
    // The seed chains hashes, and every byte counts.
    CHECK(hash64(bytes("abc"), 1) != hash64(bytes("abc")));
    const std::string text(67, 'q');
    for (std::size_t i = 0; i < text.size(); ++i) {
        std::string changed = text;
        changed[i] = 'r';
        CHECK(hash64(bytes(changed)) != hash64(bytes(text)));
    }
}

TEST_CASE("an entry is named and checksummed by XXH64 of its key (then payload, seeded by the key's)") {
    // The on-disk format, recomputed here with libxxhash (fuzz_kernel_cache does the same).
    const TemporaryFolder temporary("cache_format");
    const fs::path& folder = temporary.path();
    const DiskCache cache(folder);
    const std::string key = "kernel-format";
    const std::vector<std::byte> payload = bytes("0123456789abcdef0123456789abcdef-payload");
    char name[32];
    std::snprintf(name, sizeof name, "%016llx.bin",
                  static_cast<unsigned long long>(XXH64(key.data(), key.size(), 0)));
    CHECK(cache.path(key) == folder / name);
    cache.store(key, payload);
    std::ifstream in(folder / name, std::ios::binary);
    REQUIRE(in);
    char header[32];
    REQUIRE(in.read(header, sizeof header));
    std::uint64_t checksum;
    std::memcpy(&checksum, header + 24, sizeof checksum);
    CHECK(checksum == XXH64(payload.data(), payload.size(), XXH64(key.data(), key.size(), 0)));
}

TEST_CASE("glslang's warm-up runs beside compiles on other threads, and compiles still check their source") {
    using gpu::detail::compile_glsl;
    gpu::detail::warm_up_glsl_compiler();
    gpu::detail::warm_up_glsl_compiler();  // a second call is allowed (it starts nothing)
    const std::string source =
        "#version 450\nlayout(local_size_x = 64) in;\n"
        "layout(std430, binding = 0) buffer Data { float data[]; };\n"
        "void main() { data[gl_GlobalInvocationID.x] *= 2.0; }\n";
    std::vector<std::uint32_t> beside;
    std::thread other([&] { beside = compile_glsl(source); });
    const std::vector<std::uint32_t> here = compile_glsl(source);
    other.join();
    REQUIRE(here.size() > 5);
    CHECK(here[0] == 0x07230203u);  // SPIR-V's magic number
    CHECK(beside == here);
    CHECK_THROWS_AS(compile_glsl("#version 450\nvoid main() { undeclared = 1; }\n"), Error);
}

template <class Real> void check_value_and_gradient(gpu::Engine engine) {
    const Tape tape = examples::example_tape("rosenbrock16");
    const gpu::Vm vm(tape, engine_options(engine, 64));
    if (sizeof(Real) == 8 && !vm.device().float64) return;
    const std::size_t points = 130;
    const auto x = random_values<Real>(points * 16, -2, 2, 4);
    const auto inputs = vm.upload<Real>(x);
    auto values = vm.allocate<Real>(points);
    auto gradients = vm.allocate<Real>(points * 16);
    vm.value_and_gradient<Real>(points, inputs, nullptr, values, gradients);
    std::vector<Real> got_values(points), got_gradients(points * 16);
    vm.download(values, std::span<Real>(got_values));
    vm.download(gradients, std::span<Real>(got_gradients));
    const Batch<Real> batch{points, x, {}};
    check_identical(got_values, vm.forward(batch).values, "values");
    check_identical(got_gradients, vm.gradient(batch).values, "gradients");
    if (engine == gpu::Engine::compiled) CHECK(vm.compile_plan<Real>("value_and_gradient").compiled);
    // Wrong sizes and a tape of two outputs are errors.
    auto short_values = vm.allocate<Real>(points - 1);
    CHECK_THROWS_AS(vm.value_and_gradient<Real>(points, inputs, nullptr, short_values, gradients),
                    ShapeError);
    const gpu::Vm two(examples::example_tape("ba"), engine_options(engine));
    auto ba_inputs = two.allocate<Real>(15);
    auto one_value = two.allocate<Real>(1);
    auto ba_gradients = two.allocate<Real>(15);
    CHECK_THROWS_AS(two.value_and_gradient<Real>(1, ba_inputs, nullptr, one_value, ba_gradients),
                    Unsupported);
    check_validation_clean();
}

TEST_CASE("value_and_gradient: a loss and its gradient in one dispatch, equal to forward and gradient") {
    const TemporaryFolder cache("compiler_fused");
    const ScopedEnv env("TAPEVM_CACHE_DIR", cache.path().c_str());
    for (const gpu::Engine engine : {gpu::Engine::compiled, gpu::Engine::interpreter}) {
        CAPTURE(static_cast<int>(engine));
        check_value_and_gradient<float>(engine);
        check_value_and_gradient<double>(engine);
    }
}

// The generated GLSL of small tapes: a change in the code generator shows up here; rerun with
// TAPEVM_UPDATE_GOLDEN=1 to rewrite tests/data/compiled/ after checking the diff.
TEST_CASE("the generated GLSL matches its golden files") {
    const char* update_flag = std::getenv("TAPEVM_UPDATE_GOLDEN");
    const bool update = update_flag != nullptr && std::string(update_flag) == "1";
    // One statement per op: the recording order must not depend on the compiler's order of
    // evaluating operands (g++ and clang differ).
    const Tape small = record(2, [](std::span<const Var> x) {
        const Var s = sin(x[0]);
        const Var c = cos(x[0]);
        const Var product = s * c;
        const Var shifted = x[0] + 2.0;
        const Var quotient = x[1] / shifted;
        return product + quotient;
    });
    const Tape siblings = sibling_tape();
    const Tape exponential = record(1, [](std::span<const Var> x) { return exp(x[0]); });
    const struct {
        const char* file;
        const Tape& tape;
        const char* mode;
        bool double_precision;
    } cases[] = {
        {"small_gradient_f32.glsl", small, "gradient", false},
        {"small_jvp_f64.glsl", small, "jvp", true},
        {"small_hvp_f32.glsl", small, "hvp", false},
        {"sibling_jacobian_f32.glsl", siblings, "jacobian", false},
        {"exp_value_and_gradient_f64.glsl", exponential, "value_and_gradient", true},
    };
    for (const auto& c : cases) {
        const std::string path = std::string(TAPEVM_TEST_DATA) + "/compiled/" + c.file;
        const std::string glsl = gpu::generated_glsl(c.tape, c.mode, c.double_precision);
        if (update) {
            std::ofstream(path) << glsl;
            continue;
        }
        std::ifstream in(path);
        std::stringstream golden;
        golden << in.rdbuf();
        INFO(path);
        CHECK(glsl == golden.str());
    }
}

}  // namespace
}  // namespace tapevm::test
