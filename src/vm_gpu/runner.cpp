#include "runner.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string_view>
#include <limits>
#include <utility>
#include <vector>

#include "errors.hpp"
#include "tapevm/error.hpp"
#include "tuning.hpp"

namespace tapevm::gpu::detail {
namespace {

constexpr std::uint32_t query_count = 4;  // before uploads, before compute, after compute, after downloads
constexpr std::uint64_t staging_piece = std::uint64_t{64} << 20;

std::uint64_t align_up(std::uint64_t value, std::uint64_t alignment) {
    return (value + alignment - 1) / alignment * alignment;
}

// Everything made visible to everything: chunks are few and large, so one global barrier per
// step costs nothing measurable and keeps the synchronisation obviously right.
void full_barrier(const vk::raii::CommandBuffer& command) {
    using Access = vk::AccessFlagBits;
    using Stage = vk::PipelineStageFlagBits;
    const vk::MemoryBarrier barrier(Access::eShaderWrite | Access::eTransferWrite | Access::eHostWrite,
                                    Access::eShaderRead | Access::eShaderWrite | Access::eTransferRead |
                                        Access::eTransferWrite | Access::eHostRead);
    command.pipelineBarrier(Stage::eComputeShader | Stage::eTransfer | Stage::eHost,
                            Stage::eComputeShader | Stage::eTransfer | Stage::eHost, {}, barrier, {}, {});
}

// A staging buffer for upload() and download(); running out of memory is the caller's clear
// error, not the chunk logic's.
DeviceBuffer staging_buffer(const Device& device, std::uint64_t bytes, MemoryKind kind) {
    try {
        return DeviceBuffer(device, bytes, kind);
    } catch (const OutOfDeviceMemory& error) {
        throw DeviceUnavailable(std::string("gpu: no memory for a staging buffer: ") + error.what());
    }
}

// The ops the compact and local pipelines handle (tuning.hpp, TAPEVM_GPU_OP_SET): automatic is
// the tape's own on GPUs (a pipeline per op set) and on CPU devices, where each pipeline takes
// seconds to compile, every op but the special functions the tape does not use (one pipeline
// serves most tapes).
OpSet pipeline_ops(OpSetChoice choice, std::string_view device_type, const Tape& tape) {
    if (choice == OpSetChoice::tape) return tape_ops(tape);
    if (choice == OpSetChoice::all) return all_ops;
    if (device_type != "cpu") return tape_ops(tape);
    return (all_ops & ~special_function_ops()) | tape_ops(tape);
}

}  // namespace

Kernel Runner::kernel(const Call& call) const {
    const bool forward = call.kernel == Kernel::forward;
    if (interpreter_ == Interpreter::slots || (!forward && call.kernel != Kernel::reverse))
        return call.kernel;
    const CompactProgram& program = forward ? compact_forward_ : compact_reverse_;
    const bool on_cpu = device_->info().type == "cpu";
    const bool try_local =
        interpreter_ == Interpreter::local || (interpreter_ == Interpreter::automatic && !on_cpu);
    if (try_local && !call.generic_interpreter && local_fits(call, program))
        return forward ? Kernel::forward_local : Kernel::reverse_local;
    return forward ? Kernel::forward_compact : Kernel::reverse_compact;
}

bool Runner::local_fits(const Call& call, const CompactProgram& program) const {
    // Local homes do not outlive a dispatch, so the whole program must run in one (segments()).
    const std::uint32_t step = segment_slots(call);
    const bool one_dispatch = tape_.slot_count() <= step && program.reverse_count <= step;
    return one_dispatch && homes_per_point(call, program) <= local_home_limit_;
}

std::uint64_t Runner::homes_per_point(const Call& call, const CompactProgram& program) {
    return program.value_count + std::uint64_t{call.directions} * program.adjoint_count;
}

const CompactProgram* Runner::compact(const Call& call) const {
    switch (kernel(call)) {
        case Kernel::forward_compact:
        case Kernel::forward_local: return &compact_forward_;
        case Kernel::reverse_compact:
        case Kernel::reverse_local: return &compact_reverse_;
        default: return nullptr;
    }
}

std::uint32_t Runner::local_homes(const Call& call) const {
    const Kernel chosen = kernel(call);
    if (!is_local(chosen)) return 0;
    return local_home_count(static_cast<std::uint32_t>(homes_per_point(call, *compact(call))));
}

const vk::raii::Pipeline& Runner::pipeline(const Call& call) const {
    if (call.compiled != nullptr) return *call.compiled;
    // Pipelines made for the tape (exactly its ops) are made for the call's seeds too; the
    // shared ones of CPU devices (all ops, or all but unused special functions) are not.
    const bool reverse = call.kernel == Kernel::reverse;
    const OpSet ops = call.generic_interpreter ? all_ops : ops_;
    const bool per_tape = ops == tape_ops_;
    return device_->kernels().pipeline(kernel(call), call.double_precision,
                                       {local_homes(call), ops, per_tape && reverse ? call.directions : 0u});
}

std::uint64_t Runner::work_values_per_lane(const Call& call) const {
    if (call.compiled != nullptr || is_local(kernel(call))) return 0;
    if (const CompactProgram* program = compact(call)) return homes_per_point(call, *program);
    return std::uint64_t{call.planes} * tape_.slot_count();
}

std::uint32_t Runner::segment_slots(const Call& call) const {
    // Workaround for llvmpipe/lavapipe (Mesa's CPU driver): gallivm cuts every shader loop
    // after 65535 iterations (LP_MAX_TGSI_LOOP_ITERATIONS), counting the iterations of inner
    // loops (the directions, the math library's) too, and silently returns wrong results for
    // long tapes. On CPU devices a chunk is therefore evaluated by several dispatches of a few
    // hundred slots each; GPUs take the whole tape in one dispatch.
    if (device_->info().type != "cpu") return std::numeric_limits<std::uint32_t>::max();
    const std::uint32_t per_slot = 16 + 8 * std::max<std::uint32_t>(call.directions, call.planes);
    return std::max<std::uint32_t>(16, 8192 / per_slot);
}

std::vector<Runner::Segment> Runner::segments(const Call& call) const {
    constexpr std::uint32_t all = TV_PHASE_FORWARD | TV_PHASE_SEED | TV_PHASE_REVERSE | TV_PHASE_FINISH;
    const bool reverse = call.kernel == Kernel::reverse || call.kernel == Kernel::hvp;
    const CompactProgram* program = compact(call);
    // Forward entries are the slots; a compact reverse sweep runs its own entries upwards, the
    // slot-order one runs the slots downwards.
    const std::uint32_t forward_length = tape_.slot_count();
    const std::uint32_t reverse_length = program != nullptr ? program->reverse_count : tape_.slot_count();
    const std::uint32_t step =
        call.compiled != nullptr ? std::numeric_limits<std::uint32_t>::max() : segment_slots(call);
    if (forward_length <= step && (!reverse || reverse_length <= step)) return {{0, forward_length, all}};
    std::vector<Segment> segments;
    for (std::uint32_t begin = 0; begin < forward_length; begin += step) {
        const std::uint32_t end = std::min(forward_length, begin + step);
        std::uint32_t phase = TV_PHASE_FORWARD;
        if (end == forward_length) phase |= reverse ? TV_PHASE_SEED : TV_PHASE_FINISH;
        segments.push_back({begin, end, phase});
    }
    if (!reverse) return segments;
    if (program != nullptr) {
        for (std::uint32_t begin = 0;; begin += step) {
            const std::uint32_t end = std::min(reverse_length, begin + step);
            segments.push_back(
                {begin, end, TV_PHASE_REVERSE | (end == reverse_length ? TV_PHASE_FINISH : 0u)});
            if (end == reverse_length) break;
        }
        return segments;
    }
    for (std::uint32_t end = reverse_length; end > 0;) {
        const std::uint32_t begin = end > step ? end - step : 0;
        segments.push_back({begin, end, TV_PHASE_REVERSE | (begin == 0 ? TV_PHASE_FINISH : 0u)});
        end = begin;
    }
    return segments;
}

// Where each operand of a chunk lives in the io buffer (and at the same offsets in the
// staging buffers): offsets aligned for storage-buffer binding.
struct Runner::Sections {
    std::uint64_t element = 4;
    std::uint64_t offset[6] = {};  // inputs, params, extra0, extra1, results, flags
    std::uint64_t bytes[6] = {};
    std::uint64_t total = 0;
};

struct Runner::Slot {
    std::size_t lanes = 0;
    DeviceBuffer work, io, up, down;
    vk::raii::DescriptorSet set{nullptr};
    vk::raii::CommandBuffer command{nullptr};
    vk::raii::Fence fence{nullptr};
    vk::raii::QueryPool queries{nullptr};
    bool busy = false;
    std::size_t first = 0;
    std::size_t count = 0;
};

Runner::Runner(std::shared_ptr<Device> device, const Tape& tape, std::size_t requested_chunk_points,
               const Tuning& tuning)
    : device_(std::move(device)), tape_(tape),
      requested_chunk_points_(requested_chunk_points != 0 ? requested_chunk_points : tuning.chunk_points),
      interpreter_(tuning.interpreter), local_home_limit_(tuning.local_homes),
      ops_(pipeline_ops(tuning.op_set, device_->info().type, tape)), tape_ops_(tape_ops(tape)),
      compact_forward_(compact_program(tape, false)), compact_reverse_(compact_program(tape, true)) {
    const auto& vk_device = device_->device();
    try {
        command_pool_ = vk::raii::CommandPool(
            vk_device, vk::CommandPoolCreateInfo(vk::CommandPoolCreateFlagBits::eResetCommandBuffer,
                                                 device_->queue_family()));
        const vk::DescriptorPoolSize size(vk::DescriptorType::eStorageBuffer, 2 * binding_count);
        descriptor_pool_ = vk::raii::DescriptorPool(
            vk_device,
            vk::DescriptorPoolCreateInfo(vk::DescriptorPoolCreateFlagBits::eFreeDescriptorSet, 2, size));
    } catch (...) {
        rethrow_setup_error("gpu::Runner: cannot create command and descriptor pools");
    }
    try {
        const auto put = [&](DeviceBuffer& buffer, const void* data, std::uint64_t bytes) {
            buffer = DeviceBuffer(*device_, bytes, MemoryKind::device);
            if (bytes > 0) upload(buffer, data, bytes);
        };
        const auto program = device_program(tape);
        put(program_, program.data(), program.size() * sizeof(program[0]));
        for (auto [buffer, program] : {std::pair{&compact_forward_buffer_, &compact_forward_},
                                       std::pair{&compact_reverse_buffer_, &compact_reverse_}})
            put(*buffer, program->words.data(), program->words.size() * sizeof(program->words[0]));
        put(output_slots_, tape.outputs().data(), tape.outputs().size_bytes());
        put(guards_, tape.guards().data(), tape.guards().size_bytes());
        std::vector<float> constants(tape.constants().begin(), tape.constants().end());
        put(constants_f32_, constants.data(), constants.size() * sizeof(float));
        if (device_->info().float64)
            put(constants_f64_, tape.constants().data(), tape.constants().size_bytes());
        dummy_ = DeviceBuffer(*device_, 16, MemoryKind::device);
    } catch (const OutOfDeviceMemory& error) {
        throw DeviceUnavailable(std::string("gpu: the tape does not fit in device memory: ") + error.what());
    }
}

Runner::~Runner() { wait_all_quietly(); }

void Runner::wait_all_quietly() {
    for (auto& slot : slots_) {
        if (slot && slot->busy) {
            try {
                (void)device_->device().waitForFences(*slot->fence, VK_TRUE, UINT64_MAX);
            } catch (...) {  // lost: nothing to wait for
            }
            slot->busy = false;
        }
    }
}

ChunkCost Runner::cost(const Call& call) const {
    const std::uint64_t element = call.double_precision ? 8 : 4;
    ChunkCost cost;
    cost.work_bytes_per_lane = work_values_per_lane(call) * element;
    for (const Operand* operand : {&call.inputs, &call.params, &call.extra0, &call.extra1}) {
        if (operand->shared) continue;
        cost.io_bytes_per_lane += operand->width * element;
        cost.largest_io_bytes_per_lane = std::max(cost.largest_io_bytes_per_lane, operand->width * element);
    }
    cost.io_bytes_per_lane += call.result_width * element + 4;
    cost.largest_io_bytes_per_lane = std::max(cost.largest_io_bytes_per_lane, call.result_width * element);
    return cost;
}

std::size_t Runner::lanes(const Call& call) const {
    const auto& info = device_->info();
    ChunkLimits limits;
    limits.max_storage_buffer_range = info.max_storage_buffer_range;
    limits.max_allocation_bytes = device_->max_allocation_bytes();
    limits.max_workgroup_count_x = info.max_workgroup_count_x;
    limits.memory_bytes = info.memory_bytes;
    limits.working_set_bytes = working_set_target(info.type.c_str());
    limits.occupancy_lanes = occupancy_target(info.type.c_str());
    limits.workgroup_size = workgroup_size();
    return chunk_lanes(limits, cost(call), call.points, requested_chunk_points_);
}

void Runner::prepare_slots(const Call& call, std::size_t lanes, std::uint64_t io_bytes) {
    const std::uint64_t element = call.double_precision ? 8 : 4;
    const std::uint64_t work_bytes = work_values_per_lane(call) * lanes * element;
    for (auto& slot : slots_) {
        if (!slot) {
            slot = std::make_unique<Slot>();
            try {
                const auto& vk_device = device_->device();
                const vk::DescriptorSetLayout layout = *device_->kernels().set_layout();
                slot->set = std::move(vk::raii::DescriptorSets(vk_device, vk::DescriptorSetAllocateInfo(
                                                                              *descriptor_pool_, 1, &layout))
                                          .front());
                slot->command =
                    std::move(vk::raii::CommandBuffers(
                                  vk_device, vk::CommandBufferAllocateInfo(
                                                 *command_pool_, vk::CommandBufferLevel::ePrimary, 1))
                                  .front());
                slot->fence = vk::raii::Fence(vk_device, vk::FenceCreateInfo());
                if (device_->timestamp_bits() > 0) {
                    slot->queries = vk::raii::QueryPool(
                        vk_device, vk::QueryPoolCreateInfo({}, vk::QueryType::eTimestamp, query_count));
                }
            } catch (...) {
                slot.reset();
                rethrow_work_error("gpu::Runner: cannot create chunk resources");
            }
        }
        if (slot->work.bytes() < work_bytes) {
            slot->work = {};
            slot->work = DeviceBuffer(*device_, work_bytes, MemoryKind::device);
        }
        if (slot->io.bytes() < io_bytes) {
            slot->io = {};
            slot->up = {};
            slot->down = {};
            slot->io = DeviceBuffer(*device_, io_bytes, MemoryKind::device);
            slot->up = DeviceBuffer(*device_, io_bytes, MemoryKind::upload);
            slot->down = DeviceBuffer(*device_, io_bytes, MemoryKind::download);
        }
        slot->lanes = lanes;
    }
}

Runner::Sections Runner::layout(const Call& call, std::size_t lanes) const {
    Sections sections;
    sections.element = call.double_precision ? 8 : 4;
    const std::uint64_t alignment =
        std::max<std::uint64_t>(256, device_->limits().minStorageBufferOffsetAlignment);
    const Operand* operands[4] = {&call.inputs, &call.params, &call.extra0, &call.extra1};
    std::uint64_t offset = 0;
    for (int i = 0; i < 6; ++i) {
        std::uint64_t bytes = 0;
        if (i < 4) bytes = operands[i]->width * sections.element * (operands[i]->shared ? 1 : lanes);
        if (i == 4) bytes = std::uint64_t{call.result_width} * sections.element * lanes;
        if (i == 5) bytes = 4 * (std::uint64_t{lanes} + 1);  // the flags, then their count
        sections.offset[i] = offset;
        sections.bytes[i] = bytes;
        offset = align_up(offset + std::max<std::uint64_t>(bytes, 16), alignment);
    }
    sections.total = offset;
    return sections;
}

Report Runner::run(const Call& call, Timing& timing) {
    device_->check_alive();
    Report report;
    if (call.points == 0) return report;
    (void)pipeline(call);  // Unsupported before any work

    // Plan the chunk size; when memory runs out, halve it down to one workgroup.
    std::size_t lanes = this->lanes(call);
    Sections sections;
    for (;;) {
        try {
            sections = layout(call, lanes);
            prepare_slots(call, lanes, sections.total);
            break;
        } catch (const OutOfDeviceMemory& error) {
            for (auto& slot : slots_) slot.reset();
            if (lanes <= workgroup_size()) {
                throw OutOfMemory(std::string("gpu: out of device memory even with chunks of ") +
                                  std::to_string(lanes) + " points (" + error.what() + ")");
            }
            lanes = std::max<std::size_t>(workgroup_size(), lanes / 2 / workgroup_size() * workgroup_size());
        }
    }

    try {
        std::size_t chunk = 0;
        for (std::size_t first = 0; first < call.points; first += lanes, ++chunk) {
            Slot& slot = *slots_[chunk % 2];
            if (slot.busy) finish_chunk(slot, call, sections, report, timing);
            submit_chunk(slot, call, sections, first, std::min(lanes, call.points - first));
        }
        for (std::size_t k = 0; k < 2; ++k) {
            Slot& slot = *slots_[(chunk + k) % 2];
            if (slot.busy) finish_chunk(slot, call, sections, report, timing);
        }
    } catch (const DeviceLost& error) {
        device_->mark_lost(error.what());
        wait_all_quietly();
        throw;
    } catch (const OutOfDeviceMemory& error) {  // while submitting: the queue is in an unknown state
        device_->mark_lost(error.what());
        wait_all_quietly();
        throw DeviceLost(std::string("gpu: out of memory while submitting work: ") + error.what());
    } catch (...) {
        wait_all_quietly();
        throw;
    }
    return report;
}

void Runner::submit_chunk(Slot& slot, const Call& call, const Sections& sections, std::size_t first,
                          std::size_t count) {
    const std::uint64_t element = sections.element;
    const Operand* operands[4] = {&call.inputs, &call.params, &call.extra0, &call.extra1};
    std::vector<vk::BufferCopy> uploads;
    std::array<vk::DescriptorBufferInfo, binding_count> infos;

    // Per-point operands: staged from the host, or bound in place on the device.
    for (int i = 0; i < 4; ++i) {
        const Operand& operand = *operands[i];
        const std::uint32_t binding = binding_inputs + static_cast<std::uint32_t>(i);
        const std::uint64_t row = operand.width * element;
        const std::uint64_t source_offset = operand.shared ? 0 : first * row;
        const std::uint64_t bytes = operand.shared ? row : count * row;
        if (operand.width == 0) {
            infos[binding] = vk::DescriptorBufferInfo(dummy_.buffer(), 0, VK_WHOLE_SIZE);
        } else if (operand.device != nullptr) {
            infos[binding] = vk::DescriptorBufferInfo(operand.device->buffer(), source_offset, bytes);
        } else {
            std::memcpy(slot.up.mapped() + sections.offset[i],
                        static_cast<const std::byte*>(operand.host) + source_offset, bytes);
            uploads.emplace_back(sections.offset[i], sections.offset[i], bytes);
            infos[binding] =
                vk::DescriptorBufferInfo(slot.io.buffer(), sections.offset[i], sections.bytes[i]);
        }
    }
    const std::uint64_t result_bytes = count * std::uint64_t{call.result_width} * element;
    if (call.result_width == 0) {
        infos[binding_results] = vk::DescriptorBufferInfo(dummy_.buffer(), 0, VK_WHOLE_SIZE);
    } else if (call.device_results != nullptr) {
        infos[binding_results] = vk::DescriptorBufferInfo(
            call.device_results->buffer(), first * std::uint64_t{call.result_width} * element, result_bytes);
    } else {
        infos[binding_results] =
            vk::DescriptorBufferInfo(slot.io.buffer(), sections.offset[4], sections.bytes[4]);
    }
    infos[binding_flags] = vk::DescriptorBufferInfo(slot.io.buffer(), sections.offset[5], sections.bytes[5]);
    if (call.device_values != nullptr) {
        const std::uint64_t row = std::uint64_t{tape_.output_count()} * element;
        infos[binding_work] =
            vk::DescriptorBufferInfo(call.device_values->buffer(), first * row, count * row);
    } else if (call.compiled != nullptr || is_local(kernel(call))) {  // no work buffer
        infos[binding_work] = vk::DescriptorBufferInfo(dummy_.buffer(), 0, VK_WHOLE_SIZE);
    } else {
        infos[binding_work] = vk::DescriptorBufferInfo(slot.work.buffer(), 0, VK_WHOLE_SIZE);
    }
    const CompactProgram* program = compact(call);
    const DeviceBuffer& program_buffer =
        program == nullptr
            ? program_
            : (program == &compact_forward_ ? compact_forward_buffer_ : compact_reverse_buffer_);
    infos[binding_program] = vk::DescriptorBufferInfo(program_buffer.buffer(), 0, VK_WHOLE_SIZE);
    infos[binding_constants] = vk::DescriptorBufferInfo(
        call.double_precision ? constants_f64_.buffer() : constants_f32_.buffer(), 0, VK_WHOLE_SIZE);
    infos[binding_output_slots] = vk::DescriptorBufferInfo(output_slots_.buffer(), 0, VK_WHOLE_SIZE);
    infos[binding_guards] = vk::DescriptorBufferInfo(guards_.buffer(), 0, VK_WHOLE_SIZE);

    try {
        std::array<vk::WriteDescriptorSet, binding_count> writes;
        for (std::uint32_t b = 0; b < binding_count; ++b) {
            writes[b] = vk::WriteDescriptorSet(*slot.set, b, 0, 1, vk::DescriptorType::eStorageBuffer,
                                               nullptr, &infos[b]);
        }
        device_->device().updateDescriptorSets(writes, {});

        PushConstants push{};
        push.lanes = static_cast<std::uint32_t>(slot.lanes);
        push.points = static_cast<std::uint32_t>(count);
        push.slot_count = program != nullptr ? program->value_count : tape_.slot_count();
        push.input_count = tape_.input_count();
        push.param_count = tape_.param_count();
        push.params_per_point = call.params.width > 0 && !call.params.shared ? 1 : 0;
        push.output_count = tape_.output_count();
        push.guard_count = tape_.guard_count();
        push.directions = call.directions;
        push.seeds_from_buffer = call.seeds_from_buffer ? 1 : 0;
        if (program != nullptr) {
            push.adjoint_count = program->adjoint_count;
            push.reverse_begin = program->reverse_begin;
            push.table_begin = program->table_begin;
        }

        const auto& command = slot.command;
        const bool timed = device_->timestamp_bits() > 0;
        command.reset({});
        command.begin(vk::CommandBufferBeginInfo(vk::CommandBufferUsageFlagBits::eOneTimeSubmit));
        if (timed) {
            command.resetQueryPool(*slot.queries, 0, query_count);
            command.writeTimestamp(vk::PipelineStageFlagBits::eTopOfPipe, *slot.queries, 0);
        }
        if (tape_.guard_count() > 0)
            command.fillBuffer(slot.io.buffer(), flag_count_offset(sections, slot), 4, 0);
        full_barrier(command);
        if (!uploads.empty()) {  // (the barrier above also orders the flag count's zero)
            command.copyBuffer(slot.up.buffer(), slot.io.buffer(), uploads);
            full_barrier(command);
        }
        if (timed) command.writeTimestamp(vk::PipelineStageFlagBits::eAllCommands, *slot.queries, 1);
        const auto& kernels = device_->kernels();
        command.bindPipeline(vk::PipelineBindPoint::eCompute, *pipeline(call));
        command.bindDescriptorSets(vk::PipelineBindPoint::eCompute, *kernels.layout(), 0, *slot.set, {});
        const auto groups = static_cast<std::uint32_t>((count + workgroup_size() - 1) / workgroup_size());
        const std::vector<Segment> dispatches = segments(call);
        if (is_local(kernel(call)) && dispatches.size() != 1)
            throw Error("gpu: internal error: a local kernel split into several dispatches");
        for (const Segment& segment : dispatches) {
            push.slot_begin = segment.begin;
            push.slot_end = segment.end;
            push.phase = segment.phase;
            command.pushConstants<PushConstants>(*kernels.layout(), vk::ShaderStageFlagBits::eCompute, 0,
                                                 push);
            command.dispatch(groups, 1, 1);
            full_barrier(command);
        }
        if (timed) command.writeTimestamp(vk::PipelineStageFlagBits::eAllCommands, *slot.queries, 2);
        std::vector<vk::BufferCopy> downloads;
        if (call.device_results == nullptr && result_bytes > 0)
            downloads.emplace_back(sections.offset[4], sections.offset[4], result_bytes);
        if (tape_.guard_count() > 0)  // the count of failing lanes; their flags only when it is not 0
            downloads.emplace_back(flag_count_offset(sections, slot), flag_count_offset(sections, slot), 4);
        if (!downloads.empty()) {
            command.copyBuffer(slot.io.buffer(), slot.down.buffer(), downloads);
            full_barrier(command);  // the copies visible to the host
        }
        if (timed) command.writeTimestamp(vk::PipelineStageFlagBits::eBottomOfPipe, *slot.queries, 3);
        command.end();

        device_->device().resetFences(*slot.fence);
        const vk::CommandBuffer buffer = *command;
        device_->queue().submit(vk::SubmitInfo({}, {}, buffer), *slot.fence);
    } catch (...) {
        rethrow_work_error("gpu::Runner: cannot submit a chunk");
    }
    slot.busy = true;
    slot.first = first;
    slot.count = count;
}

void Runner::wait_for(const vk::raii::Fence& fence) const {
    // Polled for up to a millisecond first: a blocked wait wakes up tens of microseconds after
    // the GPU is done, which is the whole kernel time of a small batch.
    const auto start = std::chrono::steady_clock::now();
    while (std::chrono::steady_clock::now() - start < std::chrono::milliseconds(1)) {
        if (fence.getStatus() == vk::Result::eSuccess) return;
    }
    if (device_->device().waitForFences(*fence, VK_TRUE, UINT64_MAX) != vk::Result::eSuccess)
        throw DeviceLost("gpu::Runner: waiting for a chunk timed out");
}

std::uint64_t Runner::flag_count_offset(const Sections& sections, const Slot& slot) {
    return sections.offset[5] + 4 * std::uint64_t{slot.lanes};
}

void Runner::download_flags(const Slot& slot, const Sections& sections) {
    // The chunk's work is done (its fence signalled): one more submission copies its flags.
    one_shot([&](const vk::raii::CommandBuffer& command) {
        command.copyBuffer(
            slot.io.buffer(), slot.down.buffer(),
            vk::BufferCopy(sections.offset[5], sections.offset[5], 4 * std::uint64_t{slot.count}));
    });
}

void Runner::finish_chunk(Slot& slot, const Call& call, const Sections& sections, Report& report,
                          Timing& timing) {
    try {
        wait_for(slot.fence);
    } catch (...) {
        rethrow_work_error("gpu::Runner: a chunk failed");
    }
    slot.busy = false;
    const std::uint64_t element = sections.element;
    if (call.host_results != nullptr && call.result_width > 0) {
        const std::uint64_t row = std::uint64_t{call.result_width} * element;
        std::memcpy(static_cast<std::byte*>(call.host_results) + slot.first * row,
                    slot.down.mapped() + sections.offset[4], slot.count * row);
    }
    if (tape_.guard_count() > 0) {
        std::uint32_t failing = 0;
        std::memcpy(&failing, slot.down.mapped() + flag_count_offset(sections, slot), sizeof failing);
        if (failing > 0) {
            download_flags(slot, sections);
            const auto* flags =
                reinterpret_cast<const std::uint32_t*>(slot.down.mapped() + sections.offset[5]);
            for (std::size_t lane = 0; lane < slot.count; ++lane) {
                if (flags[lane] != 0) report.diverged.push_back(slot.first + lane);
            }
        }
    }
    if (device_->timestamp_bits() > 0) {
        try {
            const auto results = slot.queries.getResults<std::uint64_t>(
                0, query_count, query_count * sizeof(std::uint64_t), sizeof(std::uint64_t),
                vk::QueryResultFlagBits::e64 | vk::QueryResultFlagBits::eWait);
            const std::vector<std::uint64_t>& ticks = results.second;
            if (results.first == vk::Result::eSuccess) {
                const std::uint32_t bits = device_->timestamp_bits();
                const std::uint64_t mask = bits >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << bits) - 1;
                const double seconds = device_->limits().timestampPeriod * 1e-9;
                const auto span = [&](int a, int b) {
                    return double(((ticks[b] - ticks[a]) & mask)) * seconds;
                };
                timing.transfer_s += span(0, 1) + span(2, 3);
                timing.compute_s += span(1, 2);
            }
        } catch (...) {
            rethrow_work_error("gpu::Runner: cannot read timestamps");
        }
    }
}

void Runner::one_shot(const std::function<void(const vk::raii::CommandBuffer&)>& record) {
    try {
        const auto& vk_device = device_->device();
        auto commands = vk::raii::CommandBuffers(
            vk_device, vk::CommandBufferAllocateInfo(*command_pool_, vk::CommandBufferLevel::ePrimary, 1));
        const auto& command = commands.front();
        command.begin(vk::CommandBufferBeginInfo(vk::CommandBufferUsageFlagBits::eOneTimeSubmit));
        full_barrier(command);
        record(command);
        full_barrier(command);
        command.end();
        const vk::raii::Fence fence(vk_device, vk::FenceCreateInfo());
        const vk::CommandBuffer buffer = *command;
        device_->queue().submit(vk::SubmitInfo({}, {}, buffer), *fence);
        if (vk_device.waitForFences(*fence, VK_TRUE, UINT64_MAX) != vk::Result::eSuccess)
            throw DeviceLost("gpu::Runner: a transfer timed out");
    } catch (const DeviceLost& error) {
        device_->mark_lost(error.what());
        throw;
    } catch (const OutOfDeviceMemory& error) {
        device_->mark_lost(error.what());
        throw DeviceLost(std::string("gpu: out of memory while submitting a transfer: ") + error.what());
    } catch (...) {
        try {
            rethrow_work_error("gpu::Runner: a transfer failed");
        } catch (const DeviceLost& error) {
            device_->mark_lost(error.what());
            throw;
        }
    }
}

void Runner::upload(const DeviceBuffer& destination, const void* source, std::uint64_t bytes) {
    device_->check_alive();
    if (bytes == 0) return;
    const DeviceBuffer staging = staging_buffer(*device_, std::min(bytes, staging_piece), MemoryKind::upload);
    for (std::uint64_t done = 0; done < bytes; done += staging_piece) {
        const std::uint64_t piece = std::min(staging_piece, bytes - done);
        std::memcpy(staging.mapped(), static_cast<const std::byte*>(source) + done, piece);
        one_shot([&](const vk::raii::CommandBuffer& command) {
            command.copyBuffer(staging.buffer(), destination.buffer(), vk::BufferCopy(0, done, piece));
        });
    }
}

void Runner::download(const DeviceBuffer& source, void* destination, std::uint64_t bytes) {
    device_->check_alive();
    if (bytes == 0) return;
    const DeviceBuffer staging =
        staging_buffer(*device_, std::min(bytes, staging_piece), MemoryKind::download);
    for (std::uint64_t done = 0; done < bytes; done += staging_piece) {
        const std::uint64_t piece = std::min(staging_piece, bytes - done);
        one_shot([&](const vk::raii::CommandBuffer& command) {
            command.copyBuffer(source.buffer(), staging.buffer(), vk::BufferCopy(done, 0, piece));
        });
        std::memcpy(static_cast<std::byte*>(destination) + done, staging.mapped(), piece);
    }
}

void Runner::fill_zero(const DeviceBuffer& buffer) {
    device_->check_alive();
    one_shot([&](const vk::raii::CommandBuffer& command) {
        command.fillBuffer(buffer.buffer(), 0, VK_WHOLE_SIZE, 0);
    });
}

}  // namespace tapevm::gpu::detail
