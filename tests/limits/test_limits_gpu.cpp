// Limits (issue 24 item 5) of the GPU VM on the device the tests use (lavapipe here), with
// the interpreter and with compiled kernels: batches of 0 and 1 points, counts past int32 and
// past the size_t limit (limits_support.hpp), the device-resident calls' count check, and the
// chunk arithmetic for 2^31 + 5 points on an H100's limits (no device memory needed).
#include <algorithm>

#include <doctest/doctest.h>

#include "../gpu/gpu_support.hpp"
#include "chunking.hpp"
#include "limits_support.hpp"
#include "tapevm/gpu.hpp"

namespace tapevm::test {
namespace {

void check_engine(gpu::Engine engine) {
    gpu::Options options = test_options();
    options.engine = engine;
    const gpu::Vm vector_vm(limits_tape(), options);
    const gpu::Vm scalar_vm(limits_scalar_tape(), options);
    check_limits<float>(vector_vm, scalar_vm);
    if (vector_vm.device().float64) check_limits<double>(vector_vm, scalar_vm);

    // Device-resident calls take the count apart from the buffers: the same limit.
    const auto empty = vector_vm.allocate<float>(0);
    auto results = vector_vm.allocate<float>(0);
    vector_vm.forward(0, empty, nullptr, results);  // 0 points: nothing to do
    const std::size_t limit = detail::max_points(vector_vm.tape(), sizeof(float));
    for (const std::size_t points : {std::size_t{1} << 63, limit + 1}) {
        INFO(points << " points");
        try {
            vector_vm.forward(points, empty, nullptr, results);
            FAIL_CHECK("no error");
        } catch (const Unsupported& error) {
            CHECK(std::string(error.what()).find(std::to_string(limit) + "-point limit") !=
                  std::string::npos);
        }
    }
    try {
        vector_vm.forward((std::size_t{1} << 31) + 1, empty, nullptr, results);
        FAIL_CHECK("no error");
    } catch (const ShapeError& error) {
        CHECK(error.expected() == (std::size_t{2} << 31) + 2);
    }
    check_validation_clean();
}

TEST_CASE("limits: the GPU interpreter") { check_engine(gpu::Engine::interpreter); }
TEST_CASE("limits: the GPU compiled kernels") { check_engine(gpu::Engine::compiled); }

// The chunks of a batch past int32 on a device whose limits would allow a chunk past 2^32
// lanes (maxComputeWorkGroupCount[0] = 2^31 - 1 as on NVIDIA, 80 GB): every chunk within
// max_chunk_lanes (so the kernels' uint32 push constants and indices hold), a multiple of
// the workgroup, and the chunks cover every point once.
TEST_CASE("limits: chunks of 2^31 + 5 points stay within uint32 indices") {
    gpu::detail::ChunkLimits limits;
    limits.max_storage_buffer_range = 0xffffffffu;
    limits.max_allocation_bytes = std::uint64_t{1} << 40;
    limits.max_workgroup_count_x = 0x7fffffffu;
    limits.memory_bytes = std::uint64_t{80} << 30;
    limits.working_set_bytes = std::uint64_t{48} << 20;
    limits.occupancy_lanes = std::uint64_t{1} << 20;
    limits.workgroup_size = 64;
    const std::size_t points = (std::size_t{1} << 31) + 5;
    for (const std::uint64_t work : {std::uint64_t{0}, std::uint64_t{4}}) {
        for (const std::size_t requested : {std::size_t{0}, points, std::size_t{1} << 40}) {
            gpu::detail::ChunkCost cost;
            cost.work_bytes_per_lane = work;
            cost.largest_io_bytes_per_lane = work == 0 ? 0 : 4;
            cost.io_bytes_per_lane = work == 0 ? 0 : 8;
            INFO("work " << work << " bytes, requested " << requested);
            const std::size_t lanes = gpu::detail::chunk_lanes(limits, cost, points, requested);
            CHECK(lanes >= 64);
            CHECK(lanes % 64 == 0);
            CHECK(lanes <= gpu::detail::max_chunk_lanes);
            // Every index a kernel computes in a chunk: slots * lanes + lane within the binding
            // (work bytes per lane * lanes within maxStorageBufferRange) or lanes < 2^31.
            if (work > 0) CHECK(work * lanes <= limits.max_storage_buffer_range);
            std::size_t covered = 0, chunks = 0;
            for (std::size_t first = 0; first < points; first += lanes, ++chunks) {
                const std::size_t count = std::min(lanes, points - first);
                CHECK(static_cast<std::uint32_t>(count) == count);  // the push constant
                CHECK((count >> 31) == 0);                          // codegen.cpp's tv_hide is 0
                covered += count;
            }
            CHECK(covered == points);
            CHECK(chunks == (points + lanes - 1) / lanes);
        }
    }
}

}  // namespace
}  // namespace tapevm::test
