// ADOL-C as the ADBench BA Jacobian backend: the residual template taped once with adoubles
// (the feature as ADOL-C parameters, set per observation with set_param_vec), the weight
// error taped once, then jacobian() per observation, one thread (ADOL-C's tapes are global
// state). Built only with ADOL-C (bench/meson.build).
#include <atomic>
#include <memory>
#include <span>
#include <string>

#include <adolc/adolc.h>

#include "adbench_backend.hpp"
#include "tapevm/error.hpp"
#include "tapevm/examples.hpp"

namespace tapevm::bench::adbench {
namespace {

// Tags of their own, far from backend_adolc.cpp's (which count up from 1).
std::atomic<short> next_tag{20000};

class AdolcBlocks final : public BlockJacobians {
public:
    AdolcBlocks() : reprojection_tag_(next_tag++), weight_tag_(next_tag++) {
        const auto& x0 = examples::ba_test_inputs;
        double y[2];
        trace_on(reprojection_tag_);
        adouble ax[examples::ba_inputs];
        for (std::size_t i = 0; i < examples::ba_inputs; ++i) ax[i] <<= x0[i];
        const pdouble feature[2] = {mkparam(examples::ba_test_feature[0]),
                                    mkparam(examples::ba_test_feature[1])};
        const auto residual = examples::ba_residual<adouble, pdouble>(
            std::span<const adouble>(ax, examples::ba_inputs), feature);
        adouble r0 = residual[0], r1 = residual[1];
        r0 >>= y[0];
        r1 >>= y[1];
        trace_off();
        trace_on(weight_tag_);
        adouble w;
        w <<= x0[examples::ba_weight];
        adouble e = examples::ba_weight_error(w);
        e >>= y[0];
        trace_off();
    }

    void reprojection(const Batch<double>& batch, std::span<double> jacobians) const override {
        constexpr std::size_t n = examples::ba_inputs;
        double x[n];
        for (std::size_t k = 0; k < batch.points; ++k) {
            for (std::size_t i = 0; i < n; ++i) x[i] = batch.inputs[k * n + i];
            double feature[2] = {batch.params[2 * k], batch.params[2 * k + 1]};
            set_param_vec(reprojection_tag_, 2, feature);
            double* rows[2] = {jacobians.data() + k * 2 * n, jacobians.data() + k * 2 * n + n};
            if (jacobian(reprojection_tag_, 2, static_cast<int>(n), x, rows) < 0)
                throw Error("adolc: jacobian() failed at observation " + std::to_string(k) +
                            " (it left the taped branch)");
        }
    }
    void reprojection(const Batch<float>&, std::span<float>) const override {
        throw Unsupported("adolc evaluates in double only");
    }
    void weight(const Batch<double>& batch, std::span<double> derivatives) const override {
        for (std::size_t k = 0; k < batch.points; ++k) {
            double w = batch.inputs[k];
            gradient(weight_tag_, 1, &w, derivatives.data() + k);
        }
    }
    void weight(const Batch<float>&, std::span<float>) const override {
        throw Unsupported("adolc evaluates in double only");
    }
    bool weight_in_parts() const override { return false; }  // ADOL-C's tapes are global state
    std::string name() const override { return "adolc (scalar, 1 thread)"; }

private:
    short reprojection_tag_, weight_tag_;
};

}  // namespace

std::unique_ptr<BlockJacobians> make_adolc_block_jacobians() { return std::make_unique<AdolcBlocks>(); }

}  // namespace tapevm::bench::adbench
