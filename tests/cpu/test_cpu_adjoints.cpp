// The CPU VM's adjoint storage sharing (Plan::adjoint_home): an adjoint first written through
// a partial identically 1 (Add, Sub's first operand, Fma's third, ...) lives in its consumer's
// storage. These tapes put
// sums of terms that are used again elsewhere, in every order, against the reference VM:
// sharing one storage between two live adjoints shows up as wrong derivatives here.
#include <algorithm>
#include <bit>
#include <random>
#include <vector>

#include "cpu_test_support.hpp"
#include "plan.hpp"
#include "tapevm/var.hpp"

namespace {

using tapevm::Op;
using tapevm::Tape;
using tapevm::Var;
using tapevm::cpu::Vm;
using namespace tapevm::cpu_test;

void check_tape(const Tape& tape, const char* what) {
    CAPTURE(what);
    const RandomBatch<double> data(tape, 37, 3, false);
    const tapevm::reference::Vm reference(tape);
    for (const tapevm::cpu::Isa isa : tapevm::cpu::supported_isas()) {
        CAPTURE(tapevm::cpu::isa_name(isa));
        const Vm vm(tape, {.threads = 1, .isa = isa, .block_lanes = 16});
        check_all_operations<double>(vm, reference, data, 1e-12, what);
    }
}

}  // namespace

TEST_CASE("sums whose terms are used again elsewhere") {
    // e = a + b and out = e + c: e and c are first written by one Add, then a and b by
    // another, and c's step adds to a afterwards (b's adjoint must not see it).
    check_tape(tapevm::record(2,
                              [](std::span<const Var> x) {
                                  const Var a = sin(x[0]);
                                  const Var b = cos(x[1]);
                                  const Var c = a * 3.0;
                                  const Var e = a + b;
                                  return e + c;
                              }),
               "sibling terms");
    check_tape(tapevm::record(2,
                              [](std::span<const Var> x) {
                                  const Var a = sin(x[0]);
                                  const Var b = exp(x[1]);
                                  const Var s = a - b;
                                  const Var t = b - a;
                                  return (s + t) * (s - a) + (a + a) + b * s;
                              }),
               "differences");
    check_tape(tapevm::record(3,
                              [](std::span<const Var> x) {
                                  // A chain of partial sums whose terms also feed products.
                                  std::vector<Var> terms;
                                  for (int k = 0; k < 6; ++k) terms.push_back(sin(x[k % 3] * (k + 1.0)));
                                  Var sum = terms[0];
                                  for (int k = 1; k < 6; ++k) sum = sum + terms[k];
                                  return std::vector<Var>{sum, terms[2] * sum + terms[4], sum - terms[1]};
                              }),
               "chained sums, three outputs");
    // The other unit partials of the op table: fma's third operand, fmod's first, fract's;
    // each of those operands has no other consumer, so its adjoint is shared.
    const Tape others = tapevm::record(2, [](std::span<const Var> x) {
        const Var a = sin(x[0]) * 3.0;
        const Var b = exp(x[1]);
        const Var c = fma(x[0], x[1], cos(x[1]) * 2.0);
        const Var d = fmod(b * 5.0, 1.5 + x[0] * x[0]) + fract(a * b) * b;
        return std::vector<Var>{c * a + d, d - a * b};
    });
    const tapevm::cpu::detail::Plan plan(others);
    for (const Op op : {Op::Fma, Op::Rem, Op::Fract}) {
        CAPTURE(tapevm::info(op).name);
        CHECK(std::any_of(plan.reverse_steps.begin(), plan.reverse_steps.end(), [&](const auto& step) {
            return others.instructions()[step.slot].op == op && step.alias != 0;
        }));
    }
    check_tape(others, "fma, fmod, fract");
}

TEST_CASE("arithmetic chains, with rows reused and steps fused in pairs, are bit for bit the reference") {
    // Plan::value_row and adjoint_row reuse rows of dead slots; the value sweep fuses an
    // arithmetic instruction with the next one reading it, the adjoint sweep a step with the
    // next one whose adjoint only it writes (kept in a register: d * d hands both terms).
    // Only + - * and negation, so the results are exact, in reverse mode with one row
    // (gradient, vjp) and several (the Jacobian), at block sizes of one vector and more.
    const auto chains = [](std::span<const Var> x, std::size_t outputs) {
        const Var d = x[0] - x[1];
        const Var square = d * d;
        const Var n = -(square * x[2]);
        const Var t = (n + x[0]) * (x[1] - 2.0);
        const Var u = t * t - n;
        const Var v = -(u * x[0]) * d;
        std::vector<Var> results{u + v * d, square - t * x[2], v - 3.0 * -x[1]};
        results.resize(outputs);
        return results;
    };
    // Three outputs, and two (the kernels have loops for exactly two rows).
    const Tape tape = tapevm::record(3, [&](std::span<const Var> x) { return chains(x, 3); });
    const Tape pair = tapevm::record(3, [&](std::span<const Var> x) { return chains(x, 2); });
    const RandomBatch<double> pair_data(pair, 45, 13, false);
    const tapevm::reference::Vm pair_reference(pair);
    const Tape sum = tapevm::record(3, [&](std::span<const Var> x) {
        const Var d = x[0] - x[1];
        const Var e = -(d * d) * x[2];
        return std::vector<Var>{(e - x[0]) * (e + d)};
    });
    const tapevm::cpu::detail::Plan plan(tape);
    CHECK(plan.value_rows < plan.slots);
    CHECK(std::count(plan.adjoint_private.begin(), plan.adjoint_private.end(), 1) >= 2);
    const RandomBatch<double> data(tape, 45, 11, false);
    const RandomBatch<double> sum_data(sum, 45, 12, false);
    const tapevm::reference::Vm reference(tape);
    const tapevm::reference::Vm sum_reference(sum);
    for (const tapevm::cpu::Isa isa : tapevm::cpu::supported_isas()) {
        for (const std::size_t lanes : {1, 16, 40}) {
            CAPTURE(tapevm::cpu::isa_name(isa));
            CAPTURE(lanes);
            const Vm vm(tape, {.threads = 1, .isa = isa, .block_lanes = lanes});
            const auto jacobian = vm.jacobian(data.batch(), tapevm::JacobianMode::reverse);
            const auto expected = reference.jacobian(data.batch(), tapevm::JacobianMode::reverse);
            CHECK(tapevm::test::first_different_value(jacobian.values, expected.values) == -1);
            const auto vjp = vm.vjp<double>(data.batch(), data.cotangents);
            CHECK(tapevm::test::first_different_value(
                      vjp.values, reference.vjp<double>(data.batch(), data.cotangents).values) == -1);
            const Vm pair_vm(pair, {.threads = 1, .isa = isa, .block_lanes = lanes});
            CHECK(tapevm::test::first_different_value(
                      pair_vm.jacobian(pair_data.batch(), tapevm::JacobianMode::reverse).values,
                      pair_reference.jacobian(pair_data.batch(), tapevm::JacobianMode::reverse).values) ==
                  -1);
            const Vm sum_vm(sum, {.threads = 1, .isa = isa, .block_lanes = lanes});
            const auto gradient = sum_vm.gradient(sum_data.batch());
            CHECK(tapevm::test::first_different_value(gradient.values,
                                                      sum_reference.gradient(sum_data.batch()).values) == -1);
        }
    }
}

TEST_CASE("random sums and products: reordered steps and shared storage are bit for bit the reference") {
    // Plan::reverse_steps moves the step of a slot whose adjoint one step alone writes up to
    // right after that step, and several operands of one step may share its adjoint storage
    // (Plan::adjoint_home) while none of them is written. Random DAGs of + - * and negation
    // whose nodes are reused (so adjoints are written by several steps, in every order) are
    // exact, so every reverse-mode result must equal the reference's bit for bit.
    std::size_t hoisted = 0;
    std::size_t shared = 0;
    for (std::uint64_t seed = 1; seed <= 60; ++seed) {
        CAPTURE(seed);
        std::mt19937_64 generator(seed);
        const std::size_t inputs = 2 + seed % 4;
        const std::size_t outputs = 1 + seed % 3;
        const Tape tape = tapevm::record(inputs, [&](std::span<const Var> x) {
            std::vector<Var> nodes(x.begin(), x.end());
            // Operands mostly among the last few nodes (chains), sometimes anywhere (reuse).
            const auto pick = [&] {
                const std::size_t n = nodes.size();
                const std::size_t back =
                    generator() % 4 == 0 ? generator() % n : generator() % std::min<std::size_t>(n, 4);
                return nodes[n - 1 - back];
            };
            for (int k = 0; k < 40; ++k) {
                const Var a = pick();
                const Var b = pick();
                switch (generator() % 7) {
                    case 0:
                    case 1: nodes.push_back(a + b); break;
                    case 2: nodes.push_back(a - b); break;
                    case 3:
                    case 4: nodes.push_back(a * b); break;
                    case 5: nodes.push_back(-a); break;
                    default: nodes.push_back(a * a + b); break;
                }
            }
            std::vector<Var> results;
            for (std::size_t k = 0; k < outputs; ++k) results.push_back(nodes[nodes.size() - 1 - 3 * k]);
            return results;
        });
        const tapevm::cpu::detail::Plan plan(tape);
        for (std::size_t i = 0; i + 1 < plan.reverse_steps.size(); ++i)
            hoisted += plan.reverse_steps[i].slot < plan.reverse_steps[i + 1].slot ? 1 : 0;
        for (const auto& step : plan.reverse_steps) shared += std::popcount(step.alias) == 2 ? 1 : 0;
        // Values within [-1, 1] keep the products of 40 levels finite.
        RandomBatch<double> data(tape, 23, seed, false);
        for (double& v : data.inputs) v /= 2;
        const tapevm::reference::Vm reference(tape);
        for (const tapevm::cpu::Isa isa : tapevm::cpu::supported_isas()) {
            for (const std::size_t lanes : {1, 16}) {
                CAPTURE(tapevm::cpu::isa_name(isa));
                CAPTURE(lanes);
                const Vm vm(tape, {.threads = 1, .isa = isa, .block_lanes = lanes});
                CHECK(tapevm::test::first_different_value(
                          vm.jacobian(data.batch(), tapevm::JacobianMode::reverse).values,
                          reference.jacobian(data.batch(), tapevm::JacobianMode::reverse).values) == -1);
                CHECK(tapevm::test::first_different_value(
                          vm.vjp<double>(data.batch(), data.cotangents).values,
                          reference.vjp<double>(data.batch(), data.cotangents).values) == -1);
                CHECK(tapevm::test::first_different_value(
                          vm.hvp<double>(data.batch(), data.cotangents, data.directions).values,
                          reference.hvp<double>(data.batch(), data.cotangents, data.directions).values) ==
                      -1);
            }
        }
    }
    // The tapes exercise both: steps out of reverse tape order, steps sharing two operands.
    CHECK(hoisted > 0);
    CHECK(shared > 0);
}
