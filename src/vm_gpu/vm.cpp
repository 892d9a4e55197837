// gpu::Vm: maps each Evaluator operation onto one kernel call of the Runner.
//
//   operation            kernel    work planes   directions/seeds K   extra operands
//   forward              forward   1             -                    -
//   gradient             reverse   2             1 (unit seed)        -
//   jacobian (reverse)   reverse   1 + m         m (unit seeds)       -
//   jacobian (forward)   tangent   1 + n         n (unit directions)  -
//   jvp                  tangent   2             1                    tangents
//   vjp                  reverse   2             1                    cotangents
//   hvp                  hvp       4             -                    cotangents, directions
#include <cstdlib>
#include <mutex>
#include <optional>
#include <type_traits>

#include "codegen.hpp"
#include "compiler.hpp"
#include "context.hpp"
#include "detail/batch_limits.hpp"
#include "errors.hpp"
#include "glsl_compiler.hpp"
#include "memory.hpp"
#include "runner.hpp"
#include "tapevm/error.hpp"
#include "tapevm/gpu.hpp"
#include "tuning.hpp"

namespace tapevm::gpu {

namespace detail {
/// What gpu::Buffer keeps private, for this file.
struct BufferAccess {
    template <class Real> static Buffer<Real> make(std::shared_ptr<BufferStorage> storage, std::size_t size) {
        return Buffer<Real>(std::move(storage), size);
    }
    template <class Real> static const BufferStorage* storage(const Buffer<Real>& buffer) {
        return buffer.storage_.get();
    }
};
}  // namespace detail

struct Vm::Impl {
    explicit Impl(Tape given)
        : shared_tape(std::make_shared<const Tape>(std::move(given))), tape(*shared_tape) {}
    std::shared_ptr<const Tape> shared_tape;  // shared with compile jobs, which may outlive the Vm
    const Tape& tape;
    Options options;
    CompileWait compile = CompileWait::background;  // options.compile with automatic resolved
    std::shared_ptr<detail::Device> device;
    std::unique_ptr<detail::Runner> runner;
    std::unique_ptr<detail::CompiledKernels> compiled;  // Engine::compiled only
};

namespace {

using detail::Call;
using detail::Kernel;
using detail::Operand;

thread_local Vm::Timing last_call_timing;

enum class Mode { forward, gradient, jacobian_forward, jacobian_reverse, jvp, vjp, hvp, value_and_gradient };

// The call of `mode` without its operands.
template <class Real> Call plan(const Tape& tape, Mode mode, std::size_t points) {
    const std::uint32_t n = tape.input_count();
    const std::uint32_t m = tape.output_count();
    Call call;
    call.double_precision = std::is_same_v<Real, double>;
    call.points = points;
    call.inputs.width = n;
    call.params.width = tape.param_count();
    switch (mode) {
        case Mode::forward:
            call.kernel = Kernel::forward;
            call.result_width = m;
            break;
        case Mode::gradient:
        case Mode::value_and_gradient:
            call.kernel = Kernel::reverse, call.planes = 2, call.directions = 1, call.result_width = n;
            break;
        case Mode::jacobian_reverse:
            call.kernel = Kernel::reverse, call.planes = 1 + m, call.directions = m,
            call.result_width = m * n;
            break;
        case Mode::jacobian_forward:
            call.kernel = Kernel::tangent, call.planes = 1 + n, call.directions = n,
            call.result_width = m * n;
            break;
        case Mode::jvp:
            call.kernel = Kernel::tangent, call.planes = 2, call.directions = 1, call.result_width = m;
            call.seeds_from_buffer = true, call.extra0.width = n;
            break;
        case Mode::vjp:
            call.kernel = Kernel::reverse, call.planes = 2, call.directions = 1, call.result_width = n;
            call.seeds_from_buffer = true, call.extra0.width = m;
            break;
        case Mode::hvp:
            call.kernel = Kernel::hvp, call.planes = 4, call.result_width = n;
            call.extra0.width = m, call.extra1.width = n;
            break;
    }
    return call;
}

Mode parse_mode(const Tape& tape, std::string_view mode) {
    if (mode == "forward") return Mode::forward;
    if (mode == "gradient") return Mode::gradient;
    if (mode == "jacobian")
        return jacobian_uses_forward_mode(tape, JacobianMode::automatic) ? Mode::jacobian_forward
                                                                         : Mode::jacobian_reverse;
    if (mode == "jvp") return Mode::jvp;
    if (mode == "vjp") return Mode::vjp;
    if (mode == "hvp") return Mode::hvp;
    if (mode == "value_and_gradient") return Mode::value_and_gradient;
    throw Unsupported("gpu: unknown mode '" + std::string(mode) + "'");
}

template <class Real> Operand host_operand(std::span<const Real> values, std::uint32_t width) {
    Operand operand;
    operand.host = values.data();
    operand.width = width;
    return operand;
}

template <class Real> void set_params(Call& call, const Batch<Real>& batch, std::uint32_t count) {
    call.params.width = count;
    call.params.host = batch.params.data();
    call.params.shared = !batch.params_per_point(count);
}

}  // namespace

namespace {
// Options::compile with automatic resolved by TAPEVM_GPU_COMPILE.
CompileWait resolve_compile_wait(CompileWait asked) {
    if (asked != CompileWait::automatic) return asked;
    const char* text = std::getenv("TAPEVM_GPU_COMPILE");
    if (text == nullptr || *text == '\0' || std::string_view(text) == "background")
        return CompileWait::background;
    if (std::string_view(text) == "wait") return CompileWait::wait;
    throw Error(std::string("TAPEVM_GPU_COMPILE: expected 'background' or 'wait', got '") + text + "'");
}
}  // namespace

Vm::Vm(Tape tape, Options options) : impl_(std::make_unique<Impl>(std::move(tape))) {
    impl_->options = std::move(options);
    impl_->compile = resolve_compile_wait(impl_->options.compile);
    if (impl_->options.engine == Engine::compiled && detail::tuning().glslang_warm_up)
        detail::warm_up_glsl_compiler();  // beside the device's start
    impl_->device = detail::Device::acquire(impl_->options);
    const std::lock_guard lock(impl_->device->mutex());
    impl_->runner = std::make_unique<detail::Runner>(impl_->device, impl_->tape, impl_->options.chunk_points);
    if (impl_->options.engine == Engine::compiled)
        impl_->compiled = std::make_unique<detail::CompiledKernels>(
            impl_->device, impl_->shared_tape, impl_->compile == CompileWait::background);
}

Vm::~Vm() {
    if (impl_ && impl_->runner) {
        const std::lock_guard lock(impl_->device->mutex());
        impl_->compiled.reset();
        impl_->runner.reset();
    }
}

Vm::Vm(Vm&&) noexcept = default;
Vm& Vm::operator=(Vm&&) noexcept = default;

const Tape& Vm::tape() const { return impl_->tape; }
std::string Vm::name() const { return "gpu (" + impl_->device->info().name + ")"; }
const DeviceInfo& Vm::device() const { return impl_->device->info(); }
bool Vm::validation() const { return impl_->device->validation(); }
Vm::Timing Vm::last_timing() const { return last_call_timing; }
Engine Vm::engine() const { return impl_->options.engine; }
CompileWait Vm::compile_wait() const { return impl_->compile; }

template <class Real> std::size_t Vm::chunk_points(std::string_view mode) const {
    const std::lock_guard lock(impl_->device->mutex());
    return impl_->runner->lanes(plan<Real>(impl_->tape, parse_mode(impl_->tape, mode), 1u << 30));
}

namespace {

// The compiled kernel that replaces `call`'s interpreter kernel.
detail::KernelSpec spec_of(const Call& call) {
    detail::KernelSpec spec;
    spec.kernel = call.kernel;
    spec.double_precision = call.double_precision;
    spec.directions = call.directions;
    spec.seeds_from_buffer = call.seeds_from_buffer;
    spec.write_values = call.device_values != nullptr;
    spec.workgroup = detail::workgroup_size();
    spec.staging = detail::tuning().compile_staging;
    return spec;
}

// Runs `call` on `impl` under the device's lock (on its compiled kernel with Engine::compiled,
// unless that falls back to the interpreter) and records the timing for last_timing().
// The kernel is looked up (or built, with CompileWait::wait) before the lock is taken, so that
// other calls on the device go on meanwhile; while it builds in the background the call runs on
// the interpreter's generic kernels (Call::generic_interpreter), which need no new pipeline.
Report execute(Vm::Impl& impl, Call call) {
    if (impl.compiled) {
        impl.device->check_alive();
        call.compiled = impl.compiled->pipeline(spec_of(call), &call.generic_interpreter);
    }
    const std::lock_guard lock(impl.device->mutex());
    detail::Timing timing;
    last_call_timing = {};
    Report report = impl.runner->run(call, timing);
    last_call_timing = {timing.compute_s, timing.transfer_s, call.compiled != nullptr};
    return report;
}

}  // namespace

namespace {
detail::KernelSpec spec_of_mode(const Tape& tape, std::string_view mode, bool double_precision) {
    const Mode kind = parse_mode(tape, mode);
    detail::KernelSpec spec =
        spec_of(double_precision ? plan<double>(tape, kind, 1) : plan<float>(tape, kind, 1));
    spec.write_values = kind == Mode::value_and_gradient;
    return spec;
}
}  // namespace

std::string generated_glsl(const Tape& tape, std::string_view mode, bool double_precision) {
    return detail::generate_glsl(tape, spec_of_mode(tape, mode, double_precision)).glsl;
}

CompilePlan planned_compile(const Tape& tape, std::string_view mode, bool double_precision) {
    CompilePlan result;
    const auto kernel = detail::generate_glsl(tape, spec_of_mode(tape, mode, double_precision));
    result.statements = kernel.statements;
    result.library_calls = kernel.library_calls;
    result.reason = detail::over_limit(kernel, "discrete", double_precision);
    result.compiled = result.reason.empty();
    return result;
}

namespace {
// The public plan of a build's report.
CompilePlan plan_of(const detail::CompileReport& report) {
    CompilePlan result;
    result.compiled = report.compiled;
    result.reason = report.reason;
    result.statements = report.statements;
    result.library_calls = report.library_calls;
    result.spirv_from_cache = report.spirv_from_cache;
    result.spirv_load_s = report.key_s + report.spirv_load_s;
    result.generate_s = report.generate_s;
    result.glslang_s = report.glslang_s;
    result.pipeline_s = report.pipeline_s;
    result.pipeline_cache_s = report.pipeline.cache_load_s;
    result.pipeline_create_s = report.pipeline.create_s;
    result.pipeline_store_s = report.pipeline.store_s;
    result.pipeline_reused = report.pipeline.reused;
    result.pipeline_from_identifier = report.pipeline.from_identifier;
    result.driver_cache_hit = report.pipeline.driver_cache_hit;
    result.total_s = report.total_s;
    result.background = report.background;
    result.queued_s = report.queued_s;
    return result;
}
}  // namespace

template <class Real> CompilePlan Vm::compile_plan(std::string_view mode) const {
    const detail::KernelSpec spec = spec_of_mode(impl_->tape, mode, std::is_same_v<Real, double>);
    CompilePlan result;
    if (!impl_->compiled) {
        result.reason = "the interpreter engine";
        const auto kernel = detail::generate_glsl(impl_->tape, spec);
        result.statements = kernel.statements;
        result.library_calls = kernel.library_calls;
        return result;
    }
    impl_->device->check_alive();
    return plan_of(impl_->compiled->report(spec));
}

template <class Real> CompilePlan Vm::compile_status(std::string_view mode) const {
    if (!impl_->compiled) return compile_plan<Real>(mode);
    const detail::KernelSpec spec = spec_of_mode(impl_->tape, mode, std::is_same_v<Real, double>);
    bool pending = false;
    const std::optional<detail::CompileReport> report = impl_->compiled->report_now(spec, pending);
    CompilePlan result;
    if (!report) {
        result.reason = "not requested yet";
        return result;
    }
    result = plan_of(*report);
    result.pending = pending;
    if (pending) result.reason = "being built";
    return result;
}

template <class Real> Report Vm::forward_impl(const Batch<Real>& batch, std::span<Real> outputs) const {
    Call call = plan<Real>(impl_->tape, Mode::forward, batch.points);
    call.inputs = host_operand(batch.inputs, tape().input_count());
    set_params(call, batch, tape().param_count());
    call.host_results = outputs.data();
    return execute(*impl_, call);
}

template <class Real> Report Vm::gradient_impl(const Batch<Real>& batch, std::span<Real> gradients) const {
    Call call = plan<Real>(impl_->tape, Mode::gradient, batch.points);
    call.inputs = host_operand(batch.inputs, tape().input_count());
    set_params(call, batch, tape().param_count());
    call.host_results = gradients.data();
    return execute(*impl_, call);
}

template <class Real>
Report Vm::jacobian_impl(const Batch<Real>& batch, std::span<Real> jacobians, JacobianMode mode) const {
    const Mode kind =
        jacobian_uses_forward_mode(tape(), mode) ? Mode::jacobian_forward : Mode::jacobian_reverse;
    Call call = plan<Real>(impl_->tape, kind, batch.points);
    call.inputs = host_operand(batch.inputs, tape().input_count());
    set_params(call, batch, tape().param_count());
    call.host_results = jacobians.data();
    return execute(*impl_, call);
}

template <class Real>
Report Vm::jvp_impl(const Batch<Real>& batch, std::span<const Real> tangents, std::span<Real> results) const {
    Call call = plan<Real>(impl_->tape, Mode::jvp, batch.points);
    call.inputs = host_operand(batch.inputs, tape().input_count());
    set_params(call, batch, tape().param_count());
    call.extra0 = host_operand(tangents, tape().input_count());
    call.host_results = results.data();
    return execute(*impl_, call);
}

template <class Real>
Report Vm::vjp_impl(const Batch<Real>& batch, std::span<const Real> cotangents,
                    std::span<Real> results) const {
    Call call = plan<Real>(impl_->tape, Mode::vjp, batch.points);
    call.inputs = host_operand(batch.inputs, tape().input_count());
    set_params(call, batch, tape().param_count());
    call.extra0 = host_operand(cotangents, tape().output_count());
    call.host_results = results.data();
    return execute(*impl_, call);
}

template <class Real>
Report Vm::hvp_impl(const Batch<Real>& batch, std::span<const Real> cotangents,
                    std::span<const Real> directions, std::span<Real> results) const {
    Call call = plan<Real>(impl_->tape, Mode::hvp, batch.points);
    call.inputs = host_operand(batch.inputs, tape().input_count());
    set_params(call, batch, tape().param_count());
    call.extra0 = host_operand(cotangents, tape().output_count());
    call.extra1 = host_operand(directions, tape().input_count());
    call.host_results = results.data();
    return execute(*impl_, call);
}

// Device-resident use.

namespace {

// The device memory of `buffer`, which must come from a Vm of `impl`'s device.
template <class Real>
const detail::DeviceBuffer& device_buffer(const Vm::Impl& impl, const Buffer<Real>& buffer,
                                          const std::string& where, const std::string& name) {
    const detail::BufferStorage* storage = detail::BufferAccess::storage(buffer);
    if (storage == nullptr)
        throw Unsupported("gpu::Vm::" + where + ": " + name + " is an empty (moved-from) Buffer");
    if (storage->device != impl.device)
        throw Unsupported("gpu::Vm::" + where + ": " + name + " was allocated on another device");
    return storage->buffer;
}

// Checks and binds the device-resident operands of `call`: inputs [points][n], params [p] or
// [points][p] (null when p = 0), results [points][result_width].
template <class Real>
Report run_resident(Vm::Impl& impl, Call call, const std::string& where, const Buffer<Real>& inputs,
                    const Buffer<Real>* params, Buffer<Real>& results, const std::string& results_name) {
    const Tape& tape = impl.tape;
    const std::size_t points = call.points;
    const std::string name = "gpu::Vm::" + where;
    tapevm::detail::check_points(tape, points, sizeof(Real), name);  // so that no product below wraps
    check_size(name, "inputs", points * tape.input_count(), inputs.size());
    call.inputs.device = &device_buffer(impl, inputs, where, "inputs");
    const std::size_t p = tape.param_count();
    const std::size_t given = params != nullptr ? params->size() : 0;
    if (p > 0 && !(given == p || given == points * p)) {
        throw ShapeError(name, "params", points > 1 ? points * p : p, given);  // per point, or shared
    }
    if (p == 0 && given != 0) throw ShapeError(name, "params", 0, given);
    if (p > 0) {
        call.params.device = &device_buffer(impl, *params, where, "params");
        call.params.shared = !(points > 1 && given == points * p);
    }
    check_size(name, results_name, points * call.result_width, results.size());
    call.device_results = &device_buffer(impl, results, where, results_name);
    return execute(impl, call);
}

}  // namespace

template <class Real> Buffer<Real> Vm::allocate(std::size_t count) const {
    if constexpr (std::is_same_v<Real, double>) {
        if (!device().float64) throw Unsupported("gpu: this device has no shaderFloat64; use float buffers");
    }
    const std::lock_guard lock(impl_->device->mutex());
    impl_->device->check_alive();
    auto storage = std::make_shared<detail::BufferStorage>();
    storage->device = impl_->device;
    try {
        storage->buffer =
            detail::DeviceBuffer(*impl_->device, count * sizeof(Real), detail::MemoryKind::device);
    } catch (const detail::OutOfDeviceMemory& error) {
        throw DeviceUnavailable("gpu::Vm::allocate: not enough device memory for " + std::to_string(count) +
                                " values (" + error.what() + ")");
    }
    impl_->runner->fill_zero(storage->buffer);
    return detail::BufferAccess::make<Real>(std::move(storage), count);
}

template <class Real> Buffer<Real> Vm::upload(std::span<const Real> values) const {
    Buffer<Real> buffer = allocate<Real>(values.size());
    const auto& destination = device_buffer(*impl_, buffer, "upload", "buffer");
    const std::lock_guard lock(impl_->device->mutex());
    impl_->runner->upload(destination, values.data(), values.size_bytes());
    return buffer;
}

template <class Real> void Vm::download(const Buffer<Real>& buffer, std::span<Real> out) const {
    const auto& source = device_buffer(*impl_, buffer, "download", "buffer");
    check_size("gpu::Vm::download", "out", buffer.size(), out.size());
    const std::lock_guard lock(impl_->device->mutex());
    impl_->runner->download(source, out.data(), out.size_bytes());
}

template <class Real>
Report Vm::forward(std::size_t points, const Buffer<Real>& inputs,
                   const std::type_identity_t<Buffer<Real>>* params, Buffer<Real>& outputs) const {
    return run_resident(*impl_, plan<Real>(impl_->tape, Mode::forward, points), "forward", inputs, params,
                        outputs, "outputs");
}

template <class Real>
Report Vm::gradient(std::size_t points, const Buffer<Real>& inputs,
                    const std::type_identity_t<Buffer<Real>>* params, Buffer<Real>& gradients) const {
    if (tape().output_count() != 1) {
        throw Unsupported("gradient: the tape has " + std::to_string(tape().output_count()) +
                          " outputs; gradient needs exactly 1 (use vjp or jacobian)");
    }
    return run_resident(*impl_, plan<Real>(impl_->tape, Mode::gradient, points), "gradient", inputs, params,
                        gradients, "gradients");
}

template <class Real>
Report Vm::jacobian(std::size_t points, const Buffer<Real>& inputs,
                    const std::type_identity_t<Buffer<Real>>* params, Buffer<Real>& jacobians,
                    JacobianMode mode) const {
    const Mode kind =
        jacobian_uses_forward_mode(tape(), mode) ? Mode::jacobian_forward : Mode::jacobian_reverse;
    return run_resident(*impl_, plan<Real>(impl_->tape, kind, points), "jacobian", inputs, params, jacobians,
                        "jacobians");
}

template <class Real>
Report Vm::value_and_gradient(std::size_t points, const Buffer<Real>& inputs,
                              const std::type_identity_t<Buffer<Real>>* params, Buffer<Real>& values,
                              Buffer<Real>& gradients) const {
    if (tape().output_count() != 1) {
        throw Unsupported("value_and_gradient: the tape has " + std::to_string(tape().output_count()) +
                          " outputs; it needs exactly 1");
    }
    check_size("gpu::Vm::value_and_gradient", "values", points, values.size());
    const auto& value_buffer = device_buffer(*impl_, values, "value_and_gradient", "values");
    bool fused = false;
    if (impl_->compiled) {
        impl_->device->check_alive();
        detail::KernelSpec spec = spec_of(plan<Real>(impl_->tape, Mode::value_and_gradient, points));
        spec.write_values = true;
        fused = impl_->compiled->pipeline(spec) != nullptr;
    }
    if (!fused) {
        forward(points, inputs, params, values);
        return gradient(points, inputs, params, gradients);
    }
    Call call = plan<Real>(impl_->tape, Mode::value_and_gradient, points);
    call.device_values = &value_buffer;
    return run_resident(*impl_, call, "value_and_gradient", inputs, params, gradients, "gradients");
}

#include "vm_instantiations.inc"

}  // namespace tapevm::gpu
