// ReducedTape on the CPU VM's shared-input path (the shared parameters filled into every block,
// their adjoints summed per block along the fixed tree): bit for bit the result of Evaluator's
// default path (each point's whole row, groups summed from the vjp's rows) and of the lifted
// rows path (per-point gradients asked for), at every instruction set, thread count, block
// size and chunking; weights, guards, values.
#include <bit>
#include <cstdint>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "tapevm/cpu.hpp"
#include "tapevm/gmm.hpp"
#include "tapevm/reduced.hpp"

namespace tapevm {
namespace {

// The CPU VM behind Evaluator's default shared-input hooks (no forward_shared_impl here).
class DefaultHooks final : public EvaluatorBase<DefaultHooks> {
public:
    explicit DefaultHooks(const cpu::Vm& vm) : vm_(vm) {}
    const Tape& tape() const override { return vm_.tape(); }
    std::string name() const override { return vm_.name() + " (default shared-input hooks)"; }

private:
    friend class EvaluatorBase<DefaultHooks>;
    template <class Real> Report forward_impl(const Batch<Real>& b, std::span<Real> out) const {
        return vm_.forward(b, out);
    }
    template <class Real> Report gradient_impl(const Batch<Real>& b, std::span<Real> out) const {
        return vm_.gradient(b, out);
    }
    template <class Real>
    Report jacobian_impl(const Batch<Real>& b, std::span<Real> out, JacobianMode mode) const {
        return vm_.jacobian(b, out, mode);
    }
    template <class Real>
    Report jvp_impl(const Batch<Real>& b, std::span<const Real> t, std::span<Real> out) const {
        return vm_.jvp(b, t, out);
    }
    template <class Real>
    Report vjp_impl(const Batch<Real>& b, std::span<const Real> c, std::span<Real> out) const {
        return vm_.vjp(b, c, out);
    }
    template <class Real>
    Report hvp_impl(const Batch<Real>& b, std::span<const Real> c, std::span<const Real> d,
                    std::span<Real> out) const {
        return vm_.hvp(b, c, d, out);
    }
    const cpu::Vm& vm_;
};

template <class Real> std::vector<std::uint64_t> bits(Real value, const std::vector<Real>& gradient) {
    std::vector<std::uint64_t> out = {std::bit_cast<std::uint64_t>(static_cast<double>(value))};
    for (const Real g : gradient) out.push_back(std::bit_cast<std::uint64_t>(static_cast<double>(g)));
    return out;
}

template <class Real> void check_paths(std::size_t points, unsigned seed) {
    const std::size_t d = 3, k = 4;
    const examples::GmmInstance g = examples::gmm_instance(d, k, points == 0 ? 1 : points, seed);
    const ReducedTape reduced = ReducedTape::all_params(examples::gmm_point_tape(d, k));
    const std::vector<double> theta = g.theta();
    const std::vector<Real> x(g.x.begin(), g.x.begin() + static_cast<std::ptrdiff_t>(points * d)),
        params(theta.begin(), theta.end());
    std::vector<Real> weights(points);
    for (std::size_t p = 0; p < points; ++p)
        weights[p] = static_cast<Real>(0.5 + 0.25 * static_cast<double>(p % 5));
    const Batch<Real> batch{points, x, params};
    for (const cpu::Isa isa : cpu::supported_isas()) {
        // Evaluator's default hooks on a CPU VM of this instruction set: the reference bits (the
        // instruction sets' f32 kernels may differ in the last bit: FMA).
        const cpu::Vm plain(reduced.tape(), {.threads = 1, .isa = isa});
        const DefaultHooks hooks(plain);
        const ReducedGradient<Real> want = reduced.gradient(hooks, batch, std::span<const Real>(weights));
        const std::vector<std::uint64_t> want_bits = bits(want.value, want.gradient);
        for (const unsigned threads : {1u, 3u}) {
            for (const std::size_t lanes :
                 {std::size_t{0}, std::size_t{16}, std::size_t{48}, std::size_t{256}}) {
                CAPTURE(cpu::isa_name(isa));
                CAPTURE(threads);
                CAPTURE(lanes);
                CAPTURE(points);
                const cpu::Vm vm(reduced.tape(), {.threads = threads, .isa = isa, .block_lanes = lanes});
                for (const std::size_t chunk : {std::size_t{0}, std::size_t{4}, std::size_t{64}}) {
                    CAPTURE(chunk);
                    Real value = 0;
                    std::vector<Real> gradient(theta.size());
                    ReducedOptions<Real> options;
                    options.weights = weights;
                    options.value = &value;
                    options.chunk_points = chunk;
                    const Report report = reduced.gradient(vm, batch, std::span<Real>(gradient), options);
                    CHECK(bits(value, gradient) == want_bits);
                    CHECK(report.diverged == want.report.diverged);
                }
                // The lifted rows path (per-point gradients asked for): the same sums.
                Real value = 0;
                std::vector<Real> gradient(theta.size()), terms(points * (d + theta.size()));
                ReducedOptions<Real> options;
                options.weights = weights;
                options.value = &value;
                options.point_gradients = terms;
                reduced.gradient(vm, batch, std::span<Real>(gradient), options);
                CHECK(bits(value, gradient) == want_bits);
            }
        }
    }
}

TEST_CASE_TEMPLATE("reduced gradient on the CPU VM: the shared-input path has the default path's bits", Real,
                   double, float) {
    for (const std::size_t points : {0, 1, 7, 100, 1000})
        check_paths<Real>(points, 3 + static_cast<unsigned>(points));
}

}  // namespace
}  // namespace tapevm
