#include "chunking.hpp"

#include <algorithm>
#include <string>
#include <string_view>

#include "tapevm/error.hpp"

namespace tapevm::gpu::detail {

std::uint64_t working_set_target(const char* device_type) {
    // An H100 has 50 MB of L2; a CPU device (lavapipe) works best with chunks its threads'
    // caches hold.
    return std::string_view(device_type) == "cpu" ? (std::uint64_t{8} << 20) : (std::uint64_t{48} << 20);
}

std::uint64_t occupancy_target(const char* device_type) {
    // An H100 keeps 132 SMs x 2048 interpreter threads resident (the kernels need ~30
    // registers), 270,336 lanes per wave; chunks of about four waves measured fastest there
    // (bench/RESULTS.md: 2^17 to 2^22 lanes tried, 2^20 best for BA and rosenbrock16): each
    // chunk ends with a barrier that drains the device. A CPU device has a few threads, each
    // working through workgroups of 64 lanes.
    return std::string_view(device_type) == "cpu" ? 1024 : (std::uint64_t{1} << 20);
}

std::size_t chunk_lanes(const ChunkLimits& limits, const ChunkCost& cost, std::size_t points,
                        std::size_t requested) {
    const std::uint64_t group = limits.workgroup_size;
    const auto round_up = [group](std::uint64_t lanes) { return (lanes + group - 1) / group * group; };
    const auto round_down = [group](std::uint64_t lanes) { return lanes / group * group; };

    std::uint64_t hard = std::min(std::uint64_t{limits.max_workgroup_count_x} * group, max_chunk_lanes);
    const std::uint64_t binding_limit =
        std::min(limits.max_storage_buffer_range, limits.max_allocation_bytes);
    const std::uint64_t widest = std::max(cost.work_bytes_per_lane, cost.largest_io_bytes_per_lane);
    if (widest > 0) hard = std::min(hard, binding_limit / widest);
    // Two chunks in flight, each with its work buffer, its io buffer and as much staging.
    const std::uint64_t per_lane_memory = 2 * (cost.work_bytes_per_lane + 2 * cost.io_bytes_per_lane);
    if (per_lane_memory > 0) hard = std::min(hard, limits.memory_bytes / 4 / per_lane_memory);
    hard = round_down(hard);
    if (hard < group) {
        throw Unsupported(
            "gpu: one chunk of " + std::to_string(group) + " points needs " + std::to_string(group * widest) +
            " bytes in one buffer (" + std::to_string(cost.work_bytes_per_lane) +
            " bytes of work per point), more than this device allows (" + std::to_string(binding_limit) +
            " bytes per buffer, " + std::to_string(limits.memory_bytes) +
            " bytes of memory): the tape is too large for the GPU VM");
    }
    std::uint64_t lanes = hard;
    if (requested != 0) {
        lanes = std::min<std::uint64_t>(lanes, round_up(requested));
    } else if (cost.work_bytes_per_lane > 0) {
        const std::uint64_t cached = round_down(limits.working_set_bytes / cost.work_bytes_per_lane);
        lanes = std::min(lanes, std::max({group, cached, round_up(limits.occupancy_lanes)}));
    } else {
        lanes = std::min(lanes, round_up(unbuffered_chunk_lanes));
    }
    lanes = std::min<std::uint64_t>(lanes, round_up(std::max<std::size_t>(points, 1)));
    return static_cast<std::size_t>(lanes);
}

}  // namespace tapevm::gpu::detail
