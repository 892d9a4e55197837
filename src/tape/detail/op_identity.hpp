// Which operand an instruction reduces to, given which of its operands are constants: an
// exact identity from the op table (x*1, x/1, x+(-0), x-0) or a Select on a constant
// condition. The recorder and the optimiser both call this, so they simplify alike.
#pragma once

#include <bit>
#include <cstdint>
#include <optional>

#include "detail/op_formulas.hpp"

namespace tapevm::detail {

/// `constants[k]` holds operand k's value when it is a constant. Callers fold instructions
/// whose operands are all constants before asking.
inline std::optional<std::uint32_t> reduces_to(Op op, const std::optional<double> (&constants)[3]) {
    if (op == Op::Select && constants[0]) return *constants[0] != 0.0 ? 1u : 2u;  // NaN counts as true
    for (const Identity& identity : exact_identities) {
        const std::optional<double>& constant = constants[identity.constant_operand];
        if (identity.op == op && constant &&
            std::bit_cast<std::uint64_t>(*constant) == std::bit_cast<std::uint64_t>(identity.constant)) {
            return identity.result;
        }
    }
    return std::nullopt;
}

}  // namespace tapevm::detail
