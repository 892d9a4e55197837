// The engine behind gpu::Vm: the tape on the device, and chunked execution of one call.
//
// A call evaluates one kernel over `points` points. Per-point operands (inputs, parameters,
// tangents, cotangents) and results are either host memory (staged through host-visible
// buffers chunk by chunk) or device buffers (bound in place at the chunk's offset). Two sets
// of chunk resources alternate, so the host stages chunk i + 1 and reads back chunk i - 1
// while the device works on chunk i. Memory is bounded by the chunk size, not the batch.
//
// Every member expects the caller to hold the device's mutex.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "chunking.hpp"
#include "compact.hpp"
#include "context.hpp"
#include "kernels.hpp"
#include "memory.hpp"
#include "tapevm/batch.hpp"
#include "tapevm/tape.hpp"
#include "tuning.hpp"

namespace tapevm::gpu::detail {

/// One per-point operand of a call.
struct Operand {
    const void* host = nullptr;            // row-major [points][width], or [width] when shared
    const DeviceBuffer* device = nullptr;  // the same layout on the device
    std::uint32_t width = 0;               // values per point (0: unused)
    bool shared = false;                   // one set of `width` values for every point
};

struct Call {
    Kernel kernel = Kernel::forward;
    bool double_precision = false;
    std::size_t points = 0;
    std::uint32_t planes = 1;      // planes of the work buffer: [planes][slot][lane]
    std::uint32_t directions = 0;  // tangent directions or adjoint seeds per lane
    bool seeds_from_buffer = false;
    Operand inputs, params, extra0, extra1;
    void* host_results = nullptr;  // row-major [points][result_width], or
    const DeviceBuffer* device_results = nullptr;
    std::uint32_t result_width = 0;
    /// A compiled kernel (compiler.hpp) that replaces `kernel`: one dispatch per chunk, no
    /// work buffer. Null: the interpreter.
    const vk::raii::Pipeline* compiled = nullptr;
    /// Run the interpreter's kernels every tape shares (the compact ones, for every op), not
    /// those specialised for this tape (local homes, its op set), whose pipelines the driver
    /// would compile now: for calls made while the compiled kernel builds in the background.
    bool generic_interpreter = false;
    /// Compiled reverse kernels that write the outputs' values too: [points][m] on the device.
    const DeviceBuffer* device_values = nullptr;
};

struct Timing {
    double compute_s = 0;
    double transfer_s = 0;
};

class Runner {
public:
    /// `requested_chunk_points`: points per chunk (0: tuning's chunk_points, or planned).
    /// `tuning`: the interpreter variant and its limits (tuning.hpp; tests pass their own).
    Runner(std::shared_ptr<Device> device, const Tape& tape, std::size_t requested_chunk_points,
           const Tuning& tuning = detail::tuning());
    ~Runner();
    Runner(const Runner&) = delete;
    Runner& operator=(const Runner&) = delete;

    /// Evaluates `call`; guard failures in the report, GPU time in `timing`.
    Report run(const Call& call, Timing& timing);
    /// Lanes per chunk `call` would use.
    std::size_t lanes(const Call& call) const;
    /// The kernel that runs `call` (unless call.compiled): forward and reverse run the compact
    /// program (compact.hpp) unless TAPEVM_GPU_INTERPRETER=slots, with its homes in local
    /// memory where the interpreter asks for local (auto does on GPUs) and local_fits(), else
    /// in the work buffer (tuning.hpp). Other kernels run as asked.
    Kernel kernel(const Call& call) const;
    /// Work-buffer values per lane: planes of slots, homes of the compact kernels, 0 for the
    /// local and compiled kernels (which get no work buffer).
    std::uint64_t work_values_per_lane(const Call& call) const;
    /// The length of the local kernel's home array for `call` (kernels.hpp:
    /// local_home_count), or 0 when `call` does not run a local kernel.
    std::uint32_t local_homes(const Call& call) const;
    /// The ops the compact and local pipelines are specialised for (TAPEVM_GPU_OP_SET).
    OpSet ops() const { return ops_; }

    void upload(const DeviceBuffer& destination, const void* source, std::uint64_t bytes);
    void download(const DeviceBuffer& source, void* destination, std::uint64_t bytes);
    void fill_zero(const DeviceBuffer& buffer);

    const Device& device() const { return *device_; }

private:
    struct Sections;
    struct Slot;

    // One dispatch of a chunk: slots [begin, end) in the TV_PHASE_* phases (push_constants.h).
    struct Segment {
        std::uint32_t begin, end, phase;
    };
    /// Homes per point of `program` for `call`: values, then call.directions sets of adjoints.
    static std::uint64_t homes_per_point(const Call& call, const CompactProgram& program);
    /// Whether `program` (forward or reverse, as `call` asks) may run with local homes: at
    /// most local_home_limit_ homes per point, and the whole program in one dispatch (homes in
    /// local memory do not outlive it; CPU devices split long tapes, segment_slots()).
    bool local_fits(const Call& call, const CompactProgram& program) const;
    /// The compact program `call` runs (compact or local kernels), or null when it runs a
    /// slot-order kernel.
    const CompactProgram* compact(const Call& call) const;
    /// The pipeline that runs `call`: its compiled kernel, or the interpreter's kernel(call),
    /// specialised for local_homes(call) homes where that is a local kernel and for ops_ where
    /// it is a compact or local one.
    const vk::raii::Pipeline& pipeline(const Call& call) const;
    std::uint32_t segment_slots(const Call& call) const;
    std::vector<Segment> segments(const Call& call) const;
    ChunkCost cost(const Call& call) const;
    Sections layout(const Call& call, std::size_t lanes) const;
    void prepare_slots(const Call& call, std::size_t lanes, std::uint64_t io_bytes);
    void submit_chunk(Slot& slot, const Call& call, const Sections& sections, std::size_t first,
                      std::size_t count);
    void finish_chunk(Slot& slot, const Call& call, const Sections& sections, Report& report, Timing& timing);
    /// Waits until `fence` is signalled (throws DeviceLost when it never is).
    void wait_for(const vk::raii::Fence& fence) const;
    /// Where a slot's count of lanes whose guards fail lives in its io buffer (after the flags).
    static std::uint64_t flag_count_offset(const Sections& sections, const Slot& slot);
    /// Copies a finished chunk's guard flags to its download buffer (when its count is not 0).
    void download_flags(const Slot& slot, const Sections& sections);
    void one_shot(const std::function<void(const vk::raii::CommandBuffer&)>& record);
    void wait_all_quietly();

    std::shared_ptr<Device> device_;
    const Tape& tape_;
    std::size_t requested_chunk_points_;
    Interpreter interpreter_;         // TAPEVM_GPU_INTERPRETER
    std::uint64_t local_home_limit_;  // TAPEVM_GPU_LOCAL_HOMES
    OpSet ops_;                       // what the compact and local pipelines handle (TAPEVM_GPU_OP_SET)
    OpSet tape_ops_;                  // the tape's own ops
    CompactProgram compact_forward_, compact_reverse_;
    DeviceBuffer program_, compact_forward_buffer_, compact_reverse_buffer_, constants_f32_, constants_f64_,
        output_slots_, guards_, dummy_;
    vk::raii::CommandPool command_pool_{nullptr};
    vk::raii::DescriptorPool descriptor_pool_{nullptr};
    std::array<std::unique_ptr<Slot>, 2> slots_;
};

}  // namespace tapevm::gpu::detail
