// Devices: listing, selection by TAPEVM_DEVICE / Options::device (index, name, bad values),
// chunk planning, validation.
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <doctest/doctest.h>
#include <unistd.h>

#include "chunking.hpp"
#include "compact.hpp"
#include "context.hpp"
#include "gpu_support.hpp"
#include "kernels.hpp"
#include "runner.hpp"
#include "tapevm/error.hpp"
#include "tapevm/examples.hpp"
#include "tuning.hpp"

namespace tapevm::test {
namespace {

using gpu::detail::chunk_lanes;
using gpu::detail::ChunkCost;
using gpu::detail::ChunkLimits;
using gpu::detail::select_device;

TEST_CASE("devices() lists every device with its limits") {
    const auto devices = gpu::devices();
    REQUIRE(!devices.empty());
    for (std::size_t i = 0; i < devices.size(); ++i) {
        const auto& device = devices[i];
        CAPTURE(device.name);
        CHECK(device.index == i);
        CHECK(!device.name.empty());
        CHECK(!device.type.empty());
        CHECK(device.memory_bytes > 0);
        CHECK(device.max_storage_buffer_range >= (1u << 27));  // Vulkan's minimum is 2^27
        CHECK(device.max_workgroup_count_x >= 65535);
        CHECK(device.max_workgroup_size_x >= 64);
        CHECK(device.subgroup_size >= 1);
        CHECK(!device.api_version.empty());
    }
}

std::vector<gpu::DeviceInfo> fake_devices() {
    const char* names[] = {"llvmpipe (LLVM 15.0.6, 256 bits)", "NVIDIA H100 80GB HBM3",
                           "Intel(R) UHD Graphics"};
    const char* types[] = {"cpu", "discrete", "integrated"};
    std::vector<gpu::DeviceInfo> devices(3);
    for (std::size_t i = 0; i < 3; ++i) {
        devices[i].index = i;
        devices[i].name = names[i];
        devices[i].type = types[i];
    }
    return devices;
}

TEST_CASE("device selection: default, index, name substring, bad selectors") {
    const auto devices = fake_devices();
    CHECK(select_device(devices, "") == 1);  // the first discrete GPU
    CHECK(select_device({devices[0], devices[2]}, "") == 0);
    CHECK(select_device(devices, "2") == 2);
    CHECK(select_device(devices, "h100") == 1);
    CHECK(select_device(devices, "LLVMPIPE") == 0);
    CHECK_THROWS_AS(select_device(devices, "3"), DeviceUnavailable);
    CHECK_THROWS_AS(select_device(devices, "99999999999999999999"), DeviceUnavailable);
    CHECK_THROWS_AS(select_device(devices, "radeon"), DeviceUnavailable);
    CHECK_THROWS_AS(select_device({}, ""), DeviceUnavailable);
    try {
        select_device(devices, "radeon");
    } catch (const DeviceUnavailable& error) {
        CHECK(std::string(error.what()).find("radeon") != std::string::npos);
        CHECK(std::string(error.what()).find("NVIDIA H100") != std::string::npos);  // lists what exists
    }
}

TEST_CASE("TAPEVM_DEVICE selects the device by index or name; a bad value is DeviceUnavailable") {
    const auto devices = gpu::devices();
    const Tape tape = examples::example_tape("rosenbrock16");
    {
        const ScopedEnv env("TAPEVM_DEVICE", "0");
        const gpu::Vm vm(tape, test_options());
        CHECK(vm.device().index == 0);
        CHECK(vm.name() == "gpu (" + devices[0].name + ")");
    }
    {
        const std::string name = devices.back().name.substr(0, 6);
        const ScopedEnv env("TAPEVM_DEVICE", name.c_str());
        const gpu::Vm vm(tape, test_options());
        CHECK(vm.device().name.find(name) != std::string::npos);
    }
    {
        const ScopedEnv env("TAPEVM_DEVICE", "no-such-device");
        CHECK_THROWS_AS(gpu::Vm(tape, test_options()), DeviceUnavailable);
        auto options = test_options();
        options.device = std::string(1, '0');  // Options::device wins over the environment
        CHECK_NOTHROW(gpu::Vm(tape, options));
    }
    {
        const ScopedEnv env("TAPEVM_DEVICE", std::to_string(devices.size()).c_str());
        CHECK_THROWS_AS(gpu::Vm(tape, test_options()), DeviceUnavailable);
    }
    check_validation_clean();
}

TEST_CASE("the validation layer is on in the tests when it is installed") {
    const gpu::Vm vm(examples::example_tape("rosenbrock16"), test_options());
    if (validation_layer_installed()) CHECK(vm.validation());
    check_validation_clean();
}

ChunkLimits limits() {
    ChunkLimits limits;
    limits.max_storage_buffer_range = 128u << 20;  // lavapipe
    limits.max_allocation_bytes = 1u << 31;
    limits.max_workgroup_count_x = 65535;
    limits.memory_bytes = std::uint64_t{8} << 30;
    limits.working_set_bytes = 8u << 20;
    limits.workgroup_size = 64;
    return limits;
}

TEST_CASE("chunk planning: workgroup multiples, the batch, the request and every limit") {
    ChunkCost cost;
    cost.work_bytes_per_lane = 4 * 100;
    cost.largest_io_bytes_per_lane = 4 * 30;
    cost.io_bytes_per_lane = 4 * 50;
    // Working set: 8 MiB / 400 bytes = 20971 lanes, rounded down to a multiple of 64.
    CHECK(chunk_lanes(limits(), cost, 100'000'000, 0) == 20928);
    CHECK(chunk_lanes(limits(), cost, 1, 0) == 64);  // never more than the batch needs
    CHECK(chunk_lanes(limits(), cost, 1000, 0) == 1024);
    CHECK(chunk_lanes(limits(), cost, 100'000, 100) == 128);  // the request, rounded up
    // A huge request is capped by the storage-buffer range: 128 MiB / 400 bytes.
    CHECK(chunk_lanes(limits(), cost, 100'000'000, 10'000'000) == 335488);
    // ... and by the dispatch size.
    ChunkCost tiny;
    tiny.work_bytes_per_lane = 4;
    tiny.largest_io_bytes_per_lane = 4;
    tiny.io_bytes_per_lane = 8;
    CHECK(chunk_lanes(limits(), tiny, 100'000'000, 100'000'000) == 65535u * 64);
    // A big tape: the working set would allow 256 lanes, the occupancy target asks for 4096.
    ChunkLimits busy = limits();
    busy.occupancy_lanes = 4096;
    ChunkCost big;
    big.work_bytes_per_lane = 32768;
    big.largest_io_bytes_per_lane = 64;
    big.io_bytes_per_lane = 128;
    CHECK(chunk_lanes(limits(), big, 100'000'000, 0) == 256);
    CHECK(chunk_lanes(busy, big, 100'000'000, 0) == 4096);
    CHECK(chunk_lanes(busy, cost, 100'000'000, 0) == 20928);  // a small tape: the cache wins
    // No work buffer (the local and compiled kernels): no working-set or occupancy
    // target, only the operands and the device's limits: here 128 MiB / 120 bytes of results.
    ChunkCost io_only = cost;
    io_only.work_bytes_per_lane = 0;
    CHECK(chunk_lanes(limits(), io_only, 100'000'000, 0) == 1118464);
    CHECK(chunk_lanes(busy, io_only, 100'000'000, 0) == 1118464);
    CHECK(chunk_lanes(busy, io_only, 100'000'000, 1000) == 1024);
    // ... and at most unbuffered_chunk_lanes where the operands would allow more (on a GPU with
    // a 4 GiB range), unless asked for more.
    ChunkLimits large = limits();
    large.max_storage_buffer_range = std::uint64_t{4} << 30;
    large.max_workgroup_count_x = 1u << 31;
    large.memory_bytes = std::uint64_t{80} << 30;
    CHECK(chunk_lanes(large, io_only, 100'000'000, 0) == gpu::detail::unbuffered_chunk_lanes);
    CHECK(chunk_lanes(large, io_only, 100'000'000, 10'000'000) == 10'000'000);
    // A tape whose work for one workgroup exceeds a buffer is refused clearly.
    ChunkCost huge;
    huge.work_bytes_per_lane = 4u << 20;
    CHECK_THROWS_AS(chunk_lanes(limits(), huge, 10, 0), Unsupported);
}

TEST_CASE("the program buffer carries each op's number of slot operands") {
    TapeParts parts;
    parts.inputs = 2;
    parts.constants = {3.0};
    parts.instructions = {{Op::Input, 0, 0, 0}, {Op::Input, 1, 0, 0},         {Op::Const, 0, 0, 0},
                          {Op::Sin, 0, 0, 0},   {Op::Powi, 3, 0xfffffffd, 0}, {Op::Add, 0, 1, 0},
                          {Op::Fma, 0, 1, 2}};
    parts.outputs = {4, 5, 6};
    const Tape tape(parts);
    const auto program = gpu::detail::device_program(tape);
    REQUIRE(program.size() == tape.instructions().size());
    const std::uint32_t expected_arity[] = {0, 0, 0, 1, 1, 2, 3};
    for (std::size_t k = 0; k < program.size(); ++k) {
        CAPTURE(k);
        const Instruction& ins = tape.instructions()[k];
        CHECK((program[k][0] & 0xffff) == static_cast<std::uint32_t>(ins.op));
        CHECK((program[k][0] >> TV_PROGRAM_ARITY_SHIFT) == expected_arity[k]);
        CHECK(program[k][1] == ins.a);
        CHECK(program[k][2] == ins.b);  // Powi: the exponent, untouched
        CHECK(program[k][3] == ins.c);
    }
}

TEST_CASE("the GPU tuning variables: defaults, values, and bad values named in the error") {
    const char* names[] = {"TAPEVM_GPU_INTERPRETER",    "TAPEVM_GPU_WORKGROUP",   "TAPEVM_GPU_CHUNK_POINTS",
                           "TAPEVM_GPU_PIPELINE_STATS", "TAPEVM_GPU_LOCAL_HOMES", "TAPEVM_GPU_OP_SET"};
    std::vector<std::string> saved;
    for (const char* name : names) {
        const char* value = std::getenv(name);
        saved.emplace_back(value == nullptr ? "" : value);
        unsetenv(name);
    }
    using gpu::detail::Interpreter;
    using gpu::detail::OpSetChoice;
    const auto defaults = gpu::detail::read_tuning();
    CHECK(defaults.interpreter == Interpreter::automatic);
    CHECK(defaults.op_set == OpSetChoice::automatic);
    CHECK(defaults.local_homes == 512);
    CHECK(defaults.workgroup_size == 64);
    CHECK(defaults.chunk_points == 0);
    CHECK(!defaults.pipeline_stats);
    setenv("TAPEVM_GPU_INTERPRETER", "slots", 1);
    setenv("TAPEVM_GPU_WORKGROUP", "256", 1);
    setenv("TAPEVM_GPU_CHUNK_POINTS", "1000", 1);
    setenv("TAPEVM_GPU_LOCAL_HOMES", "96", 1);
    setenv("TAPEVM_GPU_OP_SET", "tape", 1);
    const auto set = gpu::detail::read_tuning();
    CHECK(set.op_set == OpSetChoice::tape);
    setenv("TAPEVM_GPU_OP_SET", "all", 1);
    CHECK(gpu::detail::read_tuning().op_set == OpSetChoice::all);
    CHECK(set.interpreter == Interpreter::slots);
    CHECK(set.workgroup_size == 256);
    CHECK(set.chunk_points == 1000);
    CHECK(set.local_homes == 96);
    const std::pair<const char*, Interpreter> interpreters[] = {{"auto", Interpreter::automatic},
                                                                {"compact", Interpreter::compact},
                                                                {"local", Interpreter::local},
                                                                {"slots", Interpreter::slots}};
    for (const auto& entry : interpreters) {
        const char* value = entry.first;  // not a structured binding: clang 14 cannot capture one
        CAPTURE(value);
        setenv("TAPEVM_GPU_INTERPRETER", value, 1);
        CHECK(gpu::detail::read_tuning().interpreter == entry.second);
    }
    const std::pair<const char*, const char*> bad[] = {
        {"TAPEVM_GPU_INTERPRETER", "fast"},      {"TAPEVM_GPU_INTERPRETER", "Local"},
        {"TAPEVM_GPU_INTERPRETER", "automatic"}, {"TAPEVM_GPU_INTERPRETER", "shared"},
        {"TAPEVM_GPU_INTERPRETER", "local "},    {"TAPEVM_GPU_LOCAL_HOMES", "0"},
        {"TAPEVM_GPU_LOCAL_HOMES", "65537"},     {"TAPEVM_GPU_LOCAL_HOMES", "many"},
        {"TAPEVM_GPU_WORKGROUP", "48"},          {"TAPEVM_GPU_WORKGROUP", "2048"},
        {"TAPEVM_GPU_CHUNK_POINTS", "-5"},       {"TAPEVM_GPU_PIPELINE_STATS", "yes"},
        {"TAPEVM_GPU_OP_SET", "Tape"},           {"TAPEVM_GPU_OP_SET", "some"}};
    for (const auto& entry : bad) {
        const char* name = entry.first;
        const char* value = entry.second;
        CAPTURE(name);
        CAPTURE(value);
        const std::string before = std::getenv(name) == nullptr ? "" : std::getenv(name);
        setenv(name, value, 1);
        try {
            (void)gpu::detail::read_tuning();
            FAIL("no error");
        } catch (const Error& error) {
            CHECK(std::string(error.what()).find(name) != std::string::npos);
        }
        setenv(name, before.c_str(), 1);
    }
    for (std::size_t k = 0; k < saved.size(); ++k) setenv(names[k], saved[k].c_str(), 1);
}

// The calls a Vm makes of `tape` for forward, vjp, the reverse Jacobian, jvp and hvp, with the
// operands' widths, for a batch far larger than any chunk.
struct ModeCalls {
    gpu::detail::Call forward, vjp, jacobian, tangent, hvp;
    std::array<gpu::detail::Call*, 5> all() { return {&forward, &vjp, &jacobian, &tangent, &hvp}; }
};
ModeCalls mode_calls(const Tape& tape) {
    using gpu::detail::Kernel;
    const std::uint32_t n = tape.input_count(), m = tape.output_count();
    ModeCalls calls;
    calls.forward.kernel = Kernel::forward;
    calls.forward.result_width = m;
    calls.vjp.kernel = Kernel::reverse, calls.vjp.planes = 2, calls.vjp.directions = 1;
    calls.vjp.seeds_from_buffer = true, calls.vjp.extra0.width = m, calls.vjp.result_width = n;
    calls.jacobian.kernel = Kernel::reverse, calls.jacobian.planes = 1 + m, calls.jacobian.directions = m;
    calls.jacobian.result_width = m * n;
    calls.tangent.kernel = Kernel::tangent, calls.tangent.planes = 2, calls.tangent.directions = 1;
    calls.tangent.extra0.width = n, calls.tangent.result_width = m;
    calls.hvp.kernel = Kernel::hvp, calls.hvp.planes = 4, calls.hvp.extra0.width = n;
    calls.hvp.result_width = n;
    for (gpu::detail::Call* call : calls.all()) {
        call->inputs.width = n;
        call->points = std::size_t{1} << 30;
    }
    return calls;
}

TEST_CASE("chunk sizes stay within the device's storage-buffer range, with every interpreter") {
    using gpu::detail::Interpreter;
    const Tape tape = examples::example_tape("ba-param");
    const gpu::Vm vm(tape, test_options());
    for (const char* mode : {"forward", "jacobian", "jvp", "vjp", "hvp"}) {
        CAPTURE(mode);
        const std::size_t lanes = vm.chunk_points<float>(mode);
        CHECK(lanes % 64 == 0);
        CHECK(lanes >= 64);
    }
    const auto device = gpu::detail::Device::acquire(test_options());
    const std::lock_guard lock(device->mutex());
    const std::uint64_t range = device->info().max_storage_buffer_range;
    for (Interpreter interpreter :
         {Interpreter::automatic, Interpreter::local, Interpreter::compact, Interpreter::slots}) {
        CAPTURE(static_cast<int>(interpreter));
        gpu::detail::Tuning tuning;
        tuning.interpreter = interpreter;
        const gpu::detail::Runner runner(device, tape, 0, tuning);
        ModeCalls calls = mode_calls(tape);
        for (gpu::detail::Call* call : calls.all()) {
            CAPTURE(gpu::detail::kernel_name(runner.kernel(*call)));
            const std::uint64_t lanes = runner.lanes(*call);
            CHECK(lanes % 64 == 0);
            CHECK(lanes >= 64);
            CHECK(lanes * runner.work_values_per_lane(*call) * 4 <= range);
            for (std::uint64_t width : {std::uint64_t{call->inputs.width}, std::uint64_t{call->extra0.width},
                                        std::uint64_t{call->result_width}})
                CHECK(lanes * width * 4 <= range);
        }
    }
}

// The interpreters' choices, with a tuning of the test's own (the environment's is read once per
// process). local: the local kernels where the homes per point are within the limit, with a
// pipeline specialised for them and no work buffer, so chunks are bounded by the operands only;
// the compact kernels above the limit. auto: local on GPUs, compact on CPU devices. Tangent and
// hvp as asked.
TEST_CASE("the interpreters: local within the home limit, else compact; auto picks by device type") {
    using gpu::detail::Interpreter;
    using gpu::detail::Kernel;
    const Tape tape = examples::example_tape("ba-param");
    const std::uint32_t m = tape.output_count();
    const auto forward_program = gpu::detail::compact_program(tape, false);
    const auto reverse_program = gpu::detail::compact_program(tape, true);
    const std::uint32_t one_seed = reverse_program.value_count + reverse_program.adjoint_count;
    const std::uint32_t all_seeds = reverse_program.value_count + m * reverse_program.adjoint_count;
    REQUIRE(forward_program.value_count < one_seed);
    REQUIRE(one_seed < all_seeds);
    ModeCalls calls = mode_calls(tape);
    const auto& [forward, vjp, jacobian, tangent, hvp] = calls;

    const auto device = gpu::detail::Device::acquire(test_options());
    const std::lock_guard lock(device->mutex());
    gpu::detail::Tuning local;
    local.interpreter = Interpreter::local;
    local.local_homes = one_seed;  // one seed's homes fit, m seeds' do not
    const gpu::detail::Runner runner(device, tape, 0, local);
    CHECK(runner.kernel(forward) == Kernel::forward_local);
    CHECK(runner.kernel(vjp) == Kernel::reverse_local);
    CHECK(runner.kernel(jacobian) == Kernel::reverse_compact);
    CHECK(runner.kernel(tangent) == Kernel::tangent);
    CHECK(runner.kernel(hvp) == Kernel::hvp);
    CHECK(runner.local_homes(forward) == gpu::detail::local_home_count(forward_program.value_count));
    CHECK(runner.local_homes(vjp) == gpu::detail::local_home_count(one_seed));
    CHECK(runner.local_homes(jacobian) == 0);
    CHECK(runner.local_homes(vjp) >= one_seed);
    CHECK(gpu::detail::local_home_count(1) == gpu::detail::local_home_minimum);
    CHECK(gpu::detail::local_home_count(64) == 64);
    CHECK(gpu::detail::local_home_count(65) == 128);
    CHECK(runner.work_values_per_lane(forward) == 0);
    CHECK(runner.work_values_per_lane(vjp) == 0);
    CHECK(runner.work_values_per_lane(jacobian) == all_seeds);

    gpu::detail::Tuning compact;
    compact.interpreter = Interpreter::compact;
    const gpu::detail::Runner compact_runner(device, tape, 0, compact);
    CHECK(compact_runner.kernel(forward) == Kernel::forward_compact);
    CHECK(compact_runner.kernel(vjp) == Kernel::reverse_compact);
    CHECK(compact_runner.local_homes(forward) == 0);
    CHECK(compact_runner.work_values_per_lane(forward) == forward_program.value_count);
    // No work buffer: the chunk is not held to the working-set target.
    CHECK(runner.lanes(forward) > compact_runner.lanes(forward));
    gpu::detail::Tuning slots;
    slots.interpreter = Interpreter::slots;
    const gpu::detail::Runner slots_runner(device, tape, 0, slots);
    CHECK(slots_runner.kernel(forward) == Kernel::forward);
    CHECK(slots_runner.kernel(jacobian) == Kernel::reverse);

    // auto: local on a GPU (where every call here fits the default home limit), compact on a
    // CPU device.
    const gpu::detail::Runner auto_runner(device, tape, 0, gpu::detail::Tuning{});
    const bool on_cpu = device->info().type == "cpu";
    CHECK(auto_runner.kernel(forward) == (on_cpu ? Kernel::forward_compact : Kernel::forward_local));
    CHECK(auto_runner.kernel(vjp) == (on_cpu ? Kernel::reverse_compact : Kernel::reverse_local));
    CHECK(auto_runner.kernel(jacobian) == (on_cpu ? Kernel::reverse_compact : Kernel::reverse_local));
    CHECK(auto_runner.kernel(hvp) == Kernel::hvp);
}

// The compact and local pipelines handle only the tape's ops on GPUs (the others' cases compiled
// out: shaders/op_set.glsl), all ops on CPU devices unless TAPEVM_GPU_OP_SET says.
TEST_CASE("the op set of the compact and local pipelines: the tape's, or all") {
    using gpu::detail::OpSetChoice;
    const Tape tape = examples::example_tape("rosenbrock16");
    gpu::detail::OpSet expected = 0;
    for (const Instruction& ins : tape.instructions())
        expected |= gpu::detail::OpSet{1} << static_cast<std::uint32_t>(ins.op);
    CHECK(gpu::detail::tape_ops(tape) == expected);
    CHECK((expected >> static_cast<std::uint32_t>(Op::Mul) & 1u) == 1u);
    CHECK((expected >> static_cast<std::uint32_t>(Op::Sin) & 1u) == 0u);
    CHECK(gpu::detail::takes_op_set(gpu::detail::Kernel::reverse_local));
    CHECK(gpu::detail::takes_op_set(gpu::detail::Kernel::forward_compact));
    CHECK(!gpu::detail::takes_op_set(gpu::detail::Kernel::hvp));

    const auto device = gpu::detail::Device::acquire(test_options());
    const std::lock_guard lock(device->mutex());
    const auto ops_with = [&](OpSetChoice choice) {
        gpu::detail::Tuning tuning;
        tuning.op_set = choice;
        return gpu::detail::Runner(device, tape, 0, tuning).ops();
    };
    CHECK(ops_with(OpSetChoice::tape) == expected);
    CHECK(ops_with(OpSetChoice::all) == gpu::detail::all_ops);
    const bool on_cpu = device->info().type == "cpu";
    // CPU devices share one pipeline for all ops but the special functions the tape does not use.
    const gpu::detail::OpSet shared =
        (gpu::detail::all_ops & ~gpu::detail::special_function_ops()) | expected;
    CHECK(ops_with(OpSetChoice::automatic) == (on_cpu ? shared : expected));
}

TEST_CASE("an interpreter pipeline keeps the driver's code on disk, under its op set") {
    const auto folder =
        std::filesystem::temp_directory_path() / ("tapevm-interpreter-cache-" + std::to_string(getpid()));
    std::filesystem::remove_all(folder);
    const ScopedEnv env("TAPEVM_CACHE_DIR", folder.c_str());
    const auto files = [&] {
        std::size_t count = 0;
        std::error_code error;
        for (auto it = std::filesystem::directory_iterator(folder, error);
             !error && it != std::filesystem::directory_iterator(); it.increment(error))
            count += it->is_regular_file() ? 1 : 0;
        return count;
    };
    const auto device = gpu::detail::Device::acquire(test_options());
    const std::lock_guard lock(device->mutex());
    gpu::detail::Kernels& kernels = device->kernels();
    // An op set no test of this process runs: the pipeline is made now, through its own cache.
    gpu::detail::Specialization specialization;
    specialization.ops = 0;
    for (const Op op : {Op::Input, Op::Const, Op::Atan2, Op::Copysign, Op::Cbrt})
        specialization.ops |= gpu::detail::OpSet{1} << static_cast<std::uint32_t>(op);
    CHECK(files() == 0);
    (void)kernels.pipeline(gpu::detail::Kernel::forward_compact, false, specialization);
    CHECK(files() == 1);
    (void)kernels.pipeline(gpu::detail::Kernel::forward_compact, false, specialization);  // from memory
    CHECK(files() == 1);
    specialization.ops |= gpu::detail::OpSet{1} << static_cast<std::uint32_t>(Op::Hypot);
    (void)kernels.pipeline(gpu::detail::Kernel::forward_compact, false, specialization);
    CHECK(files() == 2);  // another op set is another pipeline, with a cache of its own
    std::filesystem::remove_all(folder);
}

// Last in this file: it replaces the shared device. A lost device (as after
// VK_ERROR_DEVICE_LOST) fails every later call of its Vms clearly; a new Vm gets a new device.
TEST_CASE("a lost device: its Vms throw DeviceLost, a new Vm works") {
    const Tape tape = examples::example_tape("rosenbrock16");
    const auto inputs = random_values<float>(100 * tape.input_count(), -2, 2, 3);
    const Batch<float> batch{100, inputs, {}};
    const auto expected = reference::Vm(tape).gradient(batch);
    const gpu::Vm vm(tape, test_options());
    check_close(vm.gradient(batch).values, expected.values, "gradient before");
    gpu::detail::Device::acquire(test_options())->mark_lost("lost on purpose by the test");
    try {
        (void)vm.gradient(batch);
        FAIL_CHECK("a lost device still computes");
    } catch (const DeviceLost& error) {
        CHECK(std::string(error.what()).find("lost on purpose by the test") != std::string::npos);
    }
    CHECK_THROWS_AS(vm.upload<float>(inputs), DeviceLost);
    const gpu::Vm fresh(tape, test_options());
    check_close(fresh.gradient(batch).values, expected.values, "gradient on a new device");
    check_validation_clean();
}

}  // namespace
}  // namespace tapevm::test
