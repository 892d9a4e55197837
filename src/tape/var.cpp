#include "tapevm/var.hpp"

#include <atomic>
#include <bit>
#include <initializer_list>
#include <optional>
#include <unordered_map>

#include "detail/op_identity.hpp"
#include "detail/op_value.hpp"
#include "tapevm/error.hpp"

namespace tapevm {
namespace detail {

struct RecordingScope::State {
    std::uint64_t id = 0;
    TapeParts parts;
    std::unordered_map<std::uint64_t, std::uint32_t> constant_slots;  // by bit pattern
};

namespace {
std::atomic<std::uint64_t> next_recording_id{1};
thread_local RecordingScope::State* current = nullptr;
}  // namespace

/// Everything that reads or makes Vars' private parts.
struct VarAccess {
    using State = RecordingScope::State;

    static Var variable(double value, std::uint32_t slot, std::uint64_t id) { return Var(value, slot, id); }

    // The recording the variable operands belong to; at least one operand is a variable.
    static State& state_of(std::initializer_list<const Var*> operands) {
        for (const Var* v : operands) {
            if (v->is_constant()) continue;
            if (current == nullptr || current->id != v->recording_) {
                throw RecordingError(
                    "a Var of another recording: Vars of two tapes cannot be mixed, and a Var "
                    "cannot be used after its record() returned");
            }
        }
        return *current;
    }

    static std::uint32_t push(State& state, Instruction instruction) {
        if (state.parts.instructions.size() >= UINT32_MAX) {
            throw RecordingError("record: the tape exceeds 2^32 - 1 slots");
        }
        state.parts.instructions.push_back(instruction);
        return static_cast<std::uint32_t>(state.parts.instructions.size() - 1);
    }

    // The slot holding v: a variable's own slot, or a Const slot for a constant.
    static std::uint32_t slot_of(State& state, const Var& v) {
        if (!v.is_constant()) return v.slot_;
        const auto bits = std::bit_cast<std::uint64_t>(v.value_);
        if (auto found = state.constant_slots.find(bits); found != state.constant_slots.end()) {
            return found->second;
        }
        const auto index = static_cast<std::uint32_t>(state.parts.constants.size());
        state.parts.constants.push_back(v.value_);
        const std::uint32_t slot = push(state, Instruction{Op::Const, index, 0, 0});
        state.constant_slots.emplace(bits, slot);
        return slot;
    }

    // Records `op` on `operands`: folds it when they are all constants, returns the operand it
    // reduces to under an exact identity, else appends an instruction.
    static Var record(Op op, std::initializer_list<const Var*> operands, std::int32_t exponent = 0) {
        double values[3] = {0, 0, 0};
        std::optional<double> constants[3];
        bool all_constant = true;
        std::size_t k = 0;
        for (const Var* v : operands) {
            values[k] = v->value_;
            if (v->is_constant()) constants[k] = v->value_;
            all_constant = all_constant && v->is_constant();
            ++k;
        }
        const double value = op_value(op, values[0], values[1], values[2], exponent);
        if (all_constant) return Var(value);
        State& state = state_of(operands);
        if (auto operand = reduces_to(op, constants)) return *std::data(operands)[*operand];
        std::uint32_t slots[3] = {0, 0, 0};
        k = 0;
        for (const Var* v : operands) slots[k++] = slot_of(state, *v);
        Instruction instruction{op, slots[0], slots[1], slots[2]};
        if (has_flag(op, op_flag::immediate)) instruction.b = static_cast<std::uint32_t>(exponent);
        return Var(value, push(state, instruction), state.id);
    }
};

namespace {

Var apply(Op op, const Var& a) { return VarAccess::record(op, {&a}); }
Var apply(Op op, const Var& a, const Var& b) { return VarAccess::record(op, {&a, &b}); }

}  // namespace

RecordingScope::RecordingScope(std::span<const double> inputs, std::span<const double> params)
    : state_(std::make_unique<State>()), previous_(current) {
    if (inputs.size() + params.size() >= UINT32_MAX)
        throw RecordingError("record: too many inputs and parameters");
    state_->id = next_recording_id.fetch_add(1);
    state_->parts.inputs = static_cast<std::uint32_t>(inputs.size());
    state_->parts.params = static_cast<std::uint32_t>(params.size());
    for (std::uint32_t i = 0; i < inputs.size(); ++i) {
        state_->parts.instructions.push_back(Instruction{Op::Input, i, 0, 0});
        inputs_.push_back(VarAccess::variable(inputs[i], i, state_->id));
    }
    for (std::uint32_t j = 0; j < params.size(); ++j) {
        state_->parts.instructions.push_back(Instruction{Op::Param, j, 0, 0});
        params_.push_back(VarAccess::variable(params[j], state_->parts.inputs + j, state_->id));
    }
    current = state_.get();
}

RecordingScope::~RecordingScope() { current = previous_; }

Tape RecordingScope::finish(std::span<const Var> outputs) {
    for (const Var& output : outputs) {
        VarAccess::state_of({&output});
        state_->parts.outputs.push_back(VarAccess::slot_of(*state_, output));
    }
    return Tape(std::move(state_->parts));
}

}  // namespace detail

using detail::apply;
using detail::VarAccess;

Var operator+(const Var& a, const Var& b) { return apply(Op::Add, a, b); }
Var operator-(const Var& a, const Var& b) { return apply(Op::Sub, a, b); }
Var operator*(const Var& a, const Var& b) { return apply(Op::Mul, a, b); }
Var operator/(const Var& a, const Var& b) { return apply(Op::Div, a, b); }
Var operator-(const Var& a) { return apply(Op::Neg, a); }

Var& Var::operator+=(const Var& other) { return *this = *this + other; }
Var& Var::operator-=(const Var& other) { return *this = *this - other; }
Var& Var::operator*=(const Var& other) { return *this = *this * other; }
Var& Var::operator/=(const Var& other) { return *this = *this / other; }

Cond operator<(const Var& a, const Var& b) { return Cond(apply(Op::Lt, a, b)); }
Cond operator<=(const Var& a, const Var& b) { return Cond(apply(Op::Le, a, b)); }
Cond operator>(const Var& a, const Var& b) { return Cond(apply(Op::Gt, a, b)); }
Cond operator>=(const Var& a, const Var& b) { return Cond(apply(Op::Ge, a, b)); }
Cond operator==(const Var& a, const Var& b) { return Cond(apply(Op::Eq, a, b)); }
Cond operator!=(const Var& a, const Var& b) { return Cond(apply(Op::Ne, a, b)); }

Cond::operator bool() const {
    const bool outcome = flag_.value() != 0.0;
    if (!flag_.is_constant()) {
        auto& state = VarAccess::state_of({&flag_});
        state.parts.guards.push_back(Guard{flag_.slot(), outcome ? 1u : 0u});
    }
    return outcome;
}

Var select(const Cond& condition, const Var& if_true, const Var& if_false) {
    return VarAccess::record(Op::Select, {&condition.var(), &if_true, &if_false});
}

Var sqrt(const Var& x) { return apply(Op::Sqrt, x); }
Var cbrt(const Var& x) { return apply(Op::Cbrt, x); }
Var exp(const Var& x) { return apply(Op::Exp, x); }
Var exp2(const Var& x) { return apply(Op::Exp2, x); }
Var expm1(const Var& x) { return apply(Op::Expm1, x); }
Var log(const Var& x) { return apply(Op::Ln, x); }
Var log2(const Var& x) { return apply(Op::Log2, x); }
Var log10(const Var& x) { return apply(Op::Log10, x); }
Var log1p(const Var& x) { return apply(Op::Ln1p, x); }
Var sin(const Var& x) { return apply(Op::Sin, x); }
Var cos(const Var& x) { return apply(Op::Cos, x); }
Var tan(const Var& x) { return apply(Op::Tan, x); }
Var asin(const Var& x) { return apply(Op::Asin, x); }
Var acos(const Var& x) { return apply(Op::Acos, x); }
Var atan(const Var& x) { return apply(Op::Atan, x); }
Var sinh(const Var& x) { return apply(Op::Sinh, x); }
Var cosh(const Var& x) { return apply(Op::Cosh, x); }
Var tanh(const Var& x) { return apply(Op::Tanh, x); }
Var asinh(const Var& x) { return apply(Op::Asinh, x); }
Var acosh(const Var& x) { return apply(Op::Acosh, x); }
Var atanh(const Var& x) { return apply(Op::Atanh, x); }
Var abs(const Var& x) { return apply(Op::Abs, x); }
Var fabs(const Var& x) { return apply(Op::Abs, x); }
Var floor(const Var& x) { return apply(Op::Floor, x); }
Var ceil(const Var& x) { return apply(Op::Ceil, x); }
Var round(const Var& x) { return apply(Op::Round, x); }
Var trunc(const Var& x) { return apply(Op::Trunc, x); }
Var sign(const Var& x) { return apply(Op::Signum, x); }
Var fract(const Var& x) { return apply(Op::Fract, x); }
Var recip(const Var& x) { return apply(Op::Recip, x); }
Var atan2(const Var& y, const Var& x) { return apply(Op::Atan2, y, x); }
Var hypot(const Var& x, const Var& y) { return apply(Op::Hypot, x, y); }
Var fmod(const Var& x, const Var& y) { return apply(Op::Rem, x, y); }
Var fmax(const Var& x, const Var& y) { return apply(Op::Max, x, y); }
Var fmin(const Var& x, const Var& y) { return apply(Op::Min, x, y); }
Var max(const Var& x, const Var& y) { return apply(Op::Max, x, y); }
Var min(const Var& x, const Var& y) { return apply(Op::Min, x, y); }
Var fma(const Var& x, const Var& y, const Var& z) { return VarAccess::record(Op::Fma, {&x, &y, &z}); }
Var pow(const Var& x, const Var& y) { return apply(Op::Powf, x, y); }
Var pow(const Var& x, double y) { return apply(Op::Powf, x, Var(y)); }
Var pow(double x, const Var& y) { return apply(Op::Powf, Var(x), y); }
Var powi(const Var& x, std::int32_t n) { return VarAccess::record(Op::Powi, {&x}, n); }
Var erf(const Var& x) { return apply(Op::Erf, x); }
Var erfc(const Var& x) { return apply(Op::Erfc, x); }
Var lgamma(const Var& x) { return apply(Op::Lgamma, x); }
Var digamma(const Var& x) { return apply(Op::Digamma, x); }
Var copysign(const Var& x, const Var& sign) { return apply(Op::Copysign, x, sign); }
Var log_sum_exp(const Var& x, const Var& y) { return apply(Op::LogSumExp, x, y); }

}  // namespace tapevm
