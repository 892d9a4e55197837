// How many points (lanes) one chunk holds: the arithmetic behind chunked evaluation, free of
// Vulkan so it is tested on its own.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tapevm::gpu::detail {

struct ChunkLimits {
    std::uint64_t max_storage_buffer_range = 0;  // bytes one binding may span
    std::uint64_t max_allocation_bytes = 0;      // bytes one allocation may hold
    std::uint32_t max_workgroup_count_x = 0;
    std::uint64_t memory_bytes = 0;       // device-local heap
    std::uint64_t working_set_bytes = 0;  // target for one chunk's work buffer (cache-sized)
    std::uint64_t occupancy_lanes = 0;    // fewer lanes than this leave the device idle
    std::uint32_t workgroup_size = 64;
};

struct ChunkCost {
    std::uint64_t work_bytes_per_lane = 0;        // the [planes][slot] work buffer
    std::uint64_t largest_io_bytes_per_lane = 0;  // the widest of inputs, params, extras, results
    std::uint64_t io_bytes_per_lane = 0;          // all of them (+ flags)
};

/// The largest automatic chunk of a kernel without a work buffer: 2^22 lanes, about 15 waves
/// of an H100, so the barrier that ends a chunk costs next to nothing, while a larger batch
/// still overlaps its transfers with compute and its memory stays bounded.
inline constexpr std::uint64_t unbuffered_chunk_lanes = std::uint64_t{1} << 22;

/// The most lanes one chunk may hold, whatever the device allows: the kernels take a chunk's
/// lanes and points as uint32 push constants and index its buffers in uint32 (slot s of lane l
/// at s * lanes + l; the compiled kernels also rely on points < 2^31, codegen.cpp's tv_hide),
/// and every buffer binding is within maxStorageBufferRange (a uint32, in bytes), so with
/// 2^30 lanes no index a kernel computes exceeds 2^32 - 1. Batches of more points run in
/// several chunks (tests/limits checks the arithmetic at 2^31 + 5 points).
inline constexpr std::uint64_t max_chunk_lanes = std::uint64_t{1} << 30;

/// The working-set target for a device type ("discrete", "cpu", ...): about an L2 cache.
std::uint64_t working_set_target(const char* device_type);
/// Lanes a chunk needs to keep a device of that type busy (all its cores, several waves).
std::uint64_t occupancy_target(const char* device_type);

/// Lanes per chunk: a multiple of the workgroup size, at most `points` rounded up to one, at
/// most `requested` rounded up (when not 0), at most max_chunk_lanes, and within every limit: each binding within
/// max_storage_buffer_range and max_allocation_bytes, two chunks' memory (double buffering,
/// staging included) within a quarter of the heap, the dispatch within max_workgroup_count_x,
/// the work buffer within the working-set target unless that leaves less than one workgroup.
/// Without a work buffer (work_bytes_per_lane 0: the local and compiled kernels) neither the
/// working-set nor the occupancy target applies: the largest chunk within the limits and
/// unbuffered_chunk_lanes.
/// Throws Unsupported when not even one workgroup of lanes fits the limits.
std::size_t chunk_lanes(const ChunkLimits& limits, const ChunkCost& cost, std::size_t points,
                        std::size_t requested);

}  // namespace tapevm::gpu::detail
