// The kernel set's front end (kernels.hpp): every documented constraint is checked here,
// before anything is recorded, so that backends may assume valid input. Then the call is
// lowered to the device's backend (backend.hpp): default options resolved (attention's
// scale), shapes reduced to the extents a backend needs (reduce_sum's outer/n/inner), and
// calls with nothing to write dropped.
//
// Errors: a wrong shape throws ShapeError, anything else (undefined tensor, dtype, device,
// aliasing, a bad option) tapevm::Error; each message starts "<kernel>: <argument>: ".
#include "tapevm/nn/kernels.hpp"

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "backend.hpp"
#include "dropout_mask.hpp"
#include "tapevm/error.hpp"
#include "tapevm/tape.hpp"

namespace tapevm::nn {

namespace {

/// A ShapeError whose message reads "<kernel>: <argument>: expected shape [..], got [..]"
/// (ShapeError's own message speaks of value counts; expected() and given() still do).
class KernelShapeError : public ShapeError {
public:
    KernelShapeError(const std::string& message, std::size_t expected, std::size_t given)
        : ShapeError("", "", expected, given), message_(message) {}
    const char* what() const noexcept override { return message_.c_str(); }

private:
    std::string message_;
};

/// One kernel call being checked: its name, and the device of its first tensor, which every
/// other tensor must share.
class Call {
public:
    explicit Call(const char* kernel) : kernel_(kernel) {}

    const char* kernel() const { return kernel_; }

    [[noreturn]] void fail(const std::string& argument, const std::string& message) const {
        throw Error(std::string(kernel_) + ": " + argument + ": " + message);
    }
    [[noreturn]] void fail_shape(const std::string& argument, const std::string& expected, const Shape& given,
                                 std::size_t expected_count) const {
        throw KernelShapeError(std::string(kernel_) + ": " + argument + ": expected shape " + expected +
                                   ", got " + shape_string(given),
                               expected_count, element_count(given));
    }

    /// A required tensor: defined and on the call's device.
    const Tensor& tensor(const std::string& argument, const Tensor& tensor) {
        if (!tensor.defined()) fail(argument, "undefined tensor");
        detail::Backend* backend = tensor.storage().backend.get();
        if (backend_ == nullptr) {
            backend_ = backend;
            first_argument_ = argument;
        } else if (backend != backend_) {
            fail(argument, "on a different device (" + backend->name() + ") than " + first_argument_ + " (" +
                               backend_->name() + ")");
        }
        return tensor;
    }
    /// An optional tensor: undefined, or as for tensor(). True when defined.
    bool optional(const std::string& argument, const Tensor& tensor) {
        if (!tensor.defined()) return false;
        this->tensor(argument, tensor);
        return true;
    }

    detail::Backend& backend() const { return *backend_; }
    DType accumulate_dtype() const {
        return backend_->kind() == DeviceKind::reference ? DType::f64 : DType::f32;
    }

    void dtype(const std::string& argument, const Tensor& tensor, DType expected) const {
        if (tensor.dtype() != expected) {
            fail(argument, "expected dtype " + std::string(dtype_name(expected)) + ", got " +
                               std::string(dtype_name(tensor.dtype())));
        }
    }
    /// A floating-point tensor; the first one fixes the dtype the others must share.
    void float_dtype(const std::string& argument, const Tensor& tensor) {
        if (!is_float(tensor.dtype())) {
            fail(argument, "expected a float dtype, got " + std::string(dtype_name(tensor.dtype())));
        }
        if (!float_argument_.empty()) {
            if (tensor.dtype() != float_dtype_) {
                fail(argument, "dtype " + std::string(dtype_name(tensor.dtype())) + " differs from " +
                                   float_argument_ + "'s " + std::string(dtype_name(float_dtype_)));
            }
            return;
        }
        float_dtype_ = tensor.dtype();
        float_argument_ = argument;
    }
    void any_float(const std::string& argument, const Tensor& tensor) const {
        if (!is_float(tensor.dtype())) {
            fail(argument, "expected a float dtype, got " + std::string(dtype_name(tensor.dtype())));
        }
    }
    /// A statistic or loss: the device's accumulate dtype.
    void accumulate(const std::string& argument, const Tensor& tensor) const {
        dtype(argument, tensor, accumulate_dtype());
    }

    void shape(const std::string& argument, const Tensor& tensor, const Shape& expected) const {
        if (tensor.shape() != expected)
            fail_shape(argument, shape_string(expected), tensor.shape(), element_count(expected));
    }
    void rank_at_least(const std::string& argument, const Tensor& tensor, std::size_t rank) const {
        if (tensor.rank() < rank) {
            fail_shape(argument, "rank >= " + std::to_string(rank), tensor.shape(), tensor.size());
        }
    }
    void distinct(const std::string& argument, const Tensor& tensor, const std::string& other_argument,
                  const Tensor& other) const {
        if (tensor.defined() && other.defined() && tensor.same_memory(other)) {
            fail(argument, "shares memory with " + other_argument);
        }
    }

private:
    const char* kernel_;
    detail::Backend* backend_ = nullptr;
    std::string first_argument_;
    DType float_dtype_ = DType::f32;
    std::string float_argument_;
};

/// The number of rows of a [rows][N] view of `shape` (all axes but the last, flattened).
std::size_t rows_of(const Shape& shape) {
    std::size_t rows = 1;
    for (std::size_t i = 0; i + 1 < shape.size(); ++i) rows *= shape[i];
    return rows;
}

Shape without_last(const Shape& shape) { return Shape(shape.begin(), shape.end() - 1); }

Shape with_last(Shape shape, std::size_t extent) {
    shape.push_back(extent);
    return shape;
}

void check_finite(const Call& call, const char* argument, double value) {
    if (!std::isfinite(value)) call.fail(argument, "expected a finite value, got " + std::to_string(value));
}

/// A per-row statistic: shape [rows] or the row tensor's leading axes.
void check_per_row(const Call& call, const std::string& argument, const Tensor& tensor,
                   const Shape& rows_shape) {
    const std::size_t rows = rows_of(rows_shape);
    const Shape leading = without_last(rows_shape);
    if (tensor.shape() != Shape{rows} && tensor.shape() != leading) {
        const std::string expected = leading == Shape{rows}
                                         ? shape_string(leading)
                                         : shape_string({rows}) + " or " + shape_string(leading);
        call.fail_shape(argument, expected, tensor.shape(), rows);
    }
}

}  // namespace

// ---- memory -------------------------------------------------------------------------------

void zero(const Tensor& x) {
    Call call("zero");
    call.tensor("x", x);
    if (x.size() == 0) return;
    call.backend().zero(x);
}

void fill(const Tensor& x, double value) {
    Call call("fill");
    call.tensor("x", x);
    if (x.size() == 0) return;
    call.backend().fill(x, value);
}

void copy(const Tensor& src, const Tensor& dst) {
    Call call("copy");
    call.tensor("src", src);
    call.tensor("dst", dst);
    if (src.size() != dst.size()) {
        call.fail_shape("dst", std::to_string(src.size()) + " elements (src's)", dst.shape(), src.size());
    }
    if (dst.size() == 0 || (src.same_memory(dst) && src.dtype() == dst.dtype())) return;
    call.backend().copy(src, dst);
}

// ---- contractions -------------------------------------------------------------------------

namespace {

/// A matmul operand: `expected` per batch, with c's batch axis in front when both c and the
/// operand have one (else the operand is shared by every batch).
void check_matmul_operand(const Call& call, const char* argument, const Tensor& t, const Tensor& c,
                          Shape expected, const char* layout) {
    if (c.rank() == 3 && t.rank() == 3) expected.insert(expected.begin(), c.shape()[0]);
    if (t.shape() != expected)
        call.fail_shape(argument, shape_string(expected) + layout, t.shape(), element_count(expected));
}

}  // namespace

void matmul(const Tensor& a, const Tensor& b, const Tensor& c, MatmulOptions options) {
    Call call("matmul");
    call.tensor("a", a);
    call.tensor("b", b);
    call.tensor("c", c);
    call.float_dtype("a", a);
    call.float_dtype("b", b);
    call.any_float("c", c);
    call.distinct("c", c, "a", a);
    call.distinct("c", c, "b", b);
    check_finite(call, "alpha", options.alpha);
    check_finite(call, "beta", options.beta);
    if (c.rank() != 2 && c.rank() != 3) call.fail_shape("c", "[M, N] or [batch, M, N]", c.shape(), c.size());
    const std::size_t m = c.dim(-2);
    const std::size_t n = c.dim(-1);
    // a is [M][K] (transpose_a: [K][M]) and gives K; b is [K][N] (transpose_b: [N][K]). Each
    // has c's batch axis too, or none (shared by every batch).
    if (a.rank() < 2) call.fail_shape("a", options.transpose_a ? "[K, M]" : "[M, K]", a.shape(), a.size());
    const std::size_t k = options.transpose_a ? a.dim(-2) : a.dim(-1);
    check_matmul_operand(call, "a", a, c, options.transpose_a ? Shape{k, m} : Shape{m, k},
                         options.transpose_a ? " ([K, M]: transpose_a)" : " ([M, K])");
    check_matmul_operand(call, "b", b, c, options.transpose_b ? Shape{n, k} : Shape{k, n},
                         options.transpose_b ? " ([N, K]: transpose_b)" : " ([K, N])");
    const Tensor bias = options.bias;
    if (bias.defined()) {
        call.tensor("bias", bias);
        call.any_float("bias", bias);
        if (bias.dtype() != c.dtype())
            call.fail("bias", "dtype " + std::string(dtype_name(bias.dtype())) + " differs from c's " +
                                  std::string(dtype_name(c.dtype())));
        call.shape("bias", bias, {n});
        call.distinct("c", c, "bias", bias);
    }
    if (c.size() == 0) return;
    // The backend adds the bias itself where it says so; else bias_add after the product.
    const bool fused = bias.defined() && call.backend().matmul_adds_bias();
    if (bias.defined() && !fused) options.bias = Tensor();
    if (k == 0 || options.alpha == 0) {
        // C = beta C: nothing to multiply.
        if (options.beta == 0) {
            call.backend().zero(c);
        } else if (options.beta != 1) {
            call.backend().matmul(a, b, c, options);
        }
        if (bias.defined()) call.backend().bias_add(c, bias);
        return;
    }
    call.backend().matmul(a, b, c, options);
    if (bias.defined() && !fused) call.backend().bias_add(c, bias);
}

// ---- elementwise and reductions -----------------------------------------------------------

void bias_add(const Tensor& x, const Tensor& bias) {
    Call call("bias_add");
    call.tensor("x", x);
    call.tensor("bias", bias);
    call.float_dtype("x", x);
    call.float_dtype("bias", bias);
    call.rank_at_least("x", x, 1);
    call.shape("bias", bias, {x.dim(-1)});
    call.distinct("bias", bias, "x", x);
    if (x.size() == 0) return;
    call.backend().bias_add(x, bias);
}

void add_assign(const Tensor& dst, const Tensor& src, double alpha) {
    Call call("add_assign");
    call.tensor("dst", dst);
    call.tensor("src", src);
    call.float_dtype("dst", dst);
    call.float_dtype("src", src);
    check_finite(call, "alpha", alpha);
    if (src.size() != dst.size()) {
        call.fail_shape("src", std::to_string(dst.size()) + " elements (dst's)", src.shape(), dst.size());
    }
    if (dst.size() == 0 || alpha == 0) return;
    call.backend().add_assign(dst, src, alpha);
}

void dropout(const Tensor& x, const Tensor& y, double p, std::uint64_t seed, std::uint64_t stream) {
    Call call("dropout");
    call.tensor("x", x);
    call.tensor("y", y);
    call.float_dtype("x", x);
    call.float_dtype("y", y);
    call.shape("y", y, x.shape());
    if (!(p >= 0 && p < 1)) call.fail("p", "must be in [0, 1), got " + std::to_string(p));
    if (x.size() >= (std::size_t{1} << 32))
        call.fail("x", "has 2^32 elements or more (the mask indexes with 32 bits)");
    if (x.size() == 0) return;
    call.backend().dropout(x, y, p, seed, stream);
}

bool dropout_keeps(double p, std::uint64_t seed, std::uint64_t stream, std::uint32_t index) {
    return detail::DropoutMask(p, seed, stream).keeps(index);
}

void reduce_sum(const Tensor& x, const Tensor& y, std::size_t axis, bool accumulate) {
    Call call("reduce_sum");
    call.tensor("x", x);
    call.tensor("y", y);
    call.float_dtype("x", x);
    call.float_dtype("y", y);
    call.distinct("y", y, "x", x);
    if (axis >= x.rank()) {
        call.fail("axis", std::to_string(axis) + " out of range for x of shape " + shape_string(x.shape()));
    }
    Shape dropped = x.shape();
    dropped.erase(dropped.begin() + static_cast<std::ptrdiff_t>(axis));
    Shape kept = x.shape();
    kept[axis] = 1;
    if (y.shape() != dropped && y.shape() != kept) {
        call.fail_shape("y", shape_string(dropped) + " or " + shape_string(kept), y.shape(),
                        element_count(dropped));
    }
    std::size_t outer = 1;
    std::size_t inner = 1;
    for (std::size_t i = 0; i < axis; ++i) outer *= x.shape()[i];
    for (std::size_t i = axis + 1; i < x.rank(); ++i) inner *= x.shape()[i];
    const std::size_t n = x.shape()[axis];
    if (y.size() == 0) return;
    if (n == 0) {  // a sum of nothing: 0
        if (!accumulate) call.backend().zero(y);
        return;
    }
    call.backend().reduce_sum(x, y, outer, n, inner, accumulate);
}

void transpose_2d(const Tensor& x, const Tensor& y) {
    Call call("transpose_2d");
    call.tensor("x", x);
    call.tensor("y", y);
    call.dtype("y", y, x.dtype());
    call.distinct("y", y, "x", x);
    if (x.rank() != 2 && x.rank() != 3) call.fail_shape("x", "[R, C] or [batch, R, C]", x.shape(), x.size());
    const std::size_t batch = x.rank() == 3 ? x.shape()[0] : 1;
    const std::size_t rows = x.dim(-2);
    const std::size_t cols = x.dim(-1);
    call.shape("y", y, x.rank() == 3 ? Shape{batch, cols, rows} : Shape{cols, rows});
    if (x.size() == 0) return;
    call.backend().transpose_2d(x, y, batch, rows, cols);
}

// ---- row kernels ---------------------------------------------------------------------------

void softmax(const Tensor& x, const Tensor& y) {
    Call call("softmax");
    call.tensor("x", x);
    call.tensor("y", y);
    call.float_dtype("x", x);
    call.float_dtype("y", y);
    call.rank_at_least("x", x, 1);
    call.shape("y", y, x.shape());
    if (x.size() == 0) return;
    call.backend().softmax(x, y);
}

void softmax_backward(const Tensor& y, const Tensor& dy, const Tensor& dx) {
    Call call("softmax_backward");
    call.tensor("y", y);
    call.tensor("dy", dy);
    call.tensor("dx", dx);
    call.float_dtype("y", y);
    call.float_dtype("dy", dy);
    call.float_dtype("dx", dx);
    call.rank_at_least("y", y, 1);
    call.shape("dy", dy, y.shape());
    call.shape("dx", dx, y.shape());
    call.distinct("dx", dx, "y", y);
    if (y.size() == 0) return;
    call.backend().softmax_backward(y, dy, dx);
}

void layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, const Tensor& y, const Tensor& mean,
                const Tensor& rstd, double eps) {
    Call call("layer_norm");
    call.tensor("x", x);
    call.tensor("gamma", gamma);
    const bool has_beta = call.optional("beta", beta);
    call.tensor("y", y);
    call.tensor("mean", mean);
    call.tensor("rstd", rstd);
    call.float_dtype("x", x);
    call.float_dtype("gamma", gamma);
    if (has_beta) call.float_dtype("beta", beta);
    call.float_dtype("y", y);
    call.accumulate("mean", mean);
    call.accumulate("rstd", rstd);
    call.rank_at_least("x", x, 1);
    const std::size_t n = x.dim(-1);
    call.shape("gamma", gamma, {n});
    if (has_beta) call.shape("beta", beta, {n});
    call.shape("y", y, x.shape());
    check_per_row(call, "mean", mean, x.shape());
    check_per_row(call, "rstd", rstd, x.shape());
    call.distinct("mean", mean, "rstd", rstd);
    if (!(eps >= 0) || !std::isfinite(eps))
        call.fail("eps", "expected a finite value >= 0, got " + std::to_string(eps));
    if (x.size() == 0) return;
    call.backend().layer_norm(x, gamma, beta, y, mean, rstd, eps);
}

void layer_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& gamma, const Tensor& mean,
                         const Tensor& rstd, const Tensor& dx, const Tensor& dgamma, const Tensor& dbeta) {
    Call call("layer_norm_backward");
    call.tensor("dy", dy);
    call.tensor("x", x);
    call.tensor("gamma", gamma);
    call.tensor("mean", mean);
    call.tensor("rstd", rstd);
    const bool has_dx = call.optional("dx", dx);
    const bool has_dgamma = call.optional("dgamma", dgamma);
    const bool has_dbeta = call.optional("dbeta", dbeta);
    call.float_dtype("dy", dy);
    call.float_dtype("x", x);
    call.float_dtype("gamma", gamma);
    if (has_dx) call.float_dtype("dx", dx);
    if (has_dgamma) call.float_dtype("dgamma", dgamma);
    if (has_dbeta) call.float_dtype("dbeta", dbeta);
    call.accumulate("mean", mean);
    call.accumulate("rstd", rstd);
    call.rank_at_least("x", x, 1);
    const std::size_t n = x.dim(-1);
    call.shape("dy", dy, x.shape());
    call.shape("gamma", gamma, {n});
    check_per_row(call, "mean", mean, x.shape());
    check_per_row(call, "rstd", rstd, x.shape());
    if (has_dx) call.shape("dx", dx, x.shape());
    if (has_dgamma) call.shape("dgamma", dgamma, {n});
    if (has_dbeta) call.shape("dbeta", dbeta, {n});
    for (const auto& [name, grad] :
         {std::pair<const char*, const Tensor*>{"dx", &dx}, {"dgamma", &dgamma}, {"dbeta", &dbeta}}) {
        call.distinct(name, *grad, "dy", dy);
        call.distinct(name, *grad, "x", x);
        call.distinct(name, *grad, "gamma", gamma);
    }
    call.distinct("dgamma", dgamma, "dbeta", dbeta);
    if (x.size() == 0 || (!has_dx && !has_dgamma && !has_dbeta)) return;
    call.backend().layer_norm_backward(dy, x, gamma, mean, rstd, dx, dgamma, dbeta);
}

void rms_norm(const Tensor& x, const Tensor& gamma, const Tensor& y, const Tensor& rstd, double eps) {
    Call call("rms_norm");
    call.tensor("x", x);
    call.tensor("gamma", gamma);
    call.tensor("y", y);
    call.tensor("rstd", rstd);
    call.float_dtype("x", x);
    call.float_dtype("gamma", gamma);
    call.float_dtype("y", y);
    call.accumulate("rstd", rstd);
    call.rank_at_least("x", x, 1);
    call.shape("gamma", gamma, {x.dim(-1)});
    call.shape("y", y, x.shape());
    check_per_row(call, "rstd", rstd, x.shape());
    if (!(eps >= 0) || !std::isfinite(eps))
        call.fail("eps", "expected a finite value >= 0, got " + std::to_string(eps));
    if (x.size() == 0) return;
    call.backend().rms_norm(x, gamma, y, rstd, eps);
}

void rms_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& gamma, const Tensor& rstd,
                       const Tensor& dx, const Tensor& dgamma) {
    Call call("rms_norm_backward");
    call.tensor("dy", dy);
    call.tensor("x", x);
    call.tensor("gamma", gamma);
    call.tensor("rstd", rstd);
    const bool has_dx = call.optional("dx", dx);
    const bool has_dgamma = call.optional("dgamma", dgamma);
    call.float_dtype("dy", dy);
    call.float_dtype("x", x);
    call.float_dtype("gamma", gamma);
    if (has_dx) call.float_dtype("dx", dx);
    if (has_dgamma) call.float_dtype("dgamma", dgamma);
    call.accumulate("rstd", rstd);
    call.rank_at_least("x", x, 1);
    const std::size_t n = x.dim(-1);
    call.shape("dy", dy, x.shape());
    call.shape("gamma", gamma, {n});
    check_per_row(call, "rstd", rstd, x.shape());
    if (has_dx) call.shape("dx", dx, x.shape());
    if (has_dgamma) call.shape("dgamma", dgamma, {n});
    for (const auto& [name, grad] : {std::pair<const char*, const Tensor*>{"dx", &dx}, {"dgamma", &dgamma}}) {
        call.distinct(name, *grad, "dy", dy);
        call.distinct(name, *grad, "x", x);
        call.distinct(name, *grad, "gamma", gamma);
    }
    if (x.size() == 0 || (!has_dx && !has_dgamma)) return;
    call.backend().rms_norm_backward(dy, x, gamma, rstd, dx, dgamma);
}

// ---- embeddings and losses ----------------------------------------------------------------

void embedding(const Tensor& ids, const Tensor& table, const Tensor& out) {
    Call call("embedding");
    call.tensor("ids", ids);
    call.tensor("table", table);
    call.tensor("out", out);
    call.dtype("ids", ids, DType::i32);
    call.float_dtype("table", table);
    call.float_dtype("out", out);
    if (table.rank() != 2) call.fail_shape("table", "[V, D]", table.shape(), table.size());
    call.shape("out", out, with_last(ids.shape(), table.dim(1)));
    call.distinct("out", out, "table", table);
    if (out.size() == 0) return;
    call.backend().embedding(ids, table, out);
}

void embedding_backward(const Tensor& ids, const Tensor& dout, const Tensor& dtable) {
    Call call("embedding_backward");
    call.tensor("ids", ids);
    call.tensor("dout", dout);
    call.tensor("dtable", dtable);
    call.dtype("ids", ids, DType::i32);
    call.float_dtype("dout", dout);
    call.float_dtype("dtable", dtable);
    if (dtable.rank() != 2) call.fail_shape("dtable", "[V, D]", dtable.shape(), dtable.size());
    call.shape("dout", dout, with_last(ids.shape(), dtable.dim(1)));
    call.distinct("dtable", dtable, "dout", dout);
    if (dout.size() == 0) return;
    call.backend().embedding_backward(ids, dout, dtable);
}

void cross_entropy(const Tensor& logits, const Tensor& targets, const Tensor& losses, const Tensor& dlogits,
                   std::int32_t pad_id, double dloss) {
    Call call("cross_entropy");
    call.tensor("logits", logits);
    call.tensor("targets", targets);
    call.tensor("losses", losses);
    const bool has_dlogits = call.optional("dlogits", dlogits);
    call.float_dtype("logits", logits);
    call.dtype("targets", targets, DType::i32);
    call.accumulate("losses", losses);
    if (has_dlogits) call.float_dtype("dlogits", dlogits);
    call.rank_at_least("logits", logits, 1);
    check_per_row(call, "targets", targets, logits.shape());
    check_per_row(call, "losses", losses, logits.shape());
    if (has_dlogits) call.shape("dlogits", dlogits, logits.shape());
    call.distinct("losses", losses, "logits", logits);
    check_finite(call, "dloss", dloss);
    const std::size_t rows = rows_of(logits.shape());
    if (rows == 0) return;
    if (logits.dim(-1) == 0)
        call.fail_shape("logits", "[rows, V] with V >= 1", logits.shape(), logits.size());
    call.backend().cross_entropy(logits, targets, losses, dlogits, pad_id, dloss);
}

void global_norm_squared(std::span<const Tensor> tensors, const Tensor& out) {
    Call call("global_norm_squared");
    call.tensor("out", out);
    call.accumulate("out", out);
    if (out.size() != 1) call.fail_shape("out", "one element", out.shape(), 1);
    for (std::size_t i = 0; i < tensors.size(); ++i) {
        const std::string argument = "tensors[" + std::to_string(i) + "]";
        call.tensor(argument, tensors[i]);
        call.float_dtype(argument, tensors[i]);
        call.distinct("out", out, argument, tensors[i]);
    }
    call.backend().global_norm_squared(tensors, out);
}

// ---- attention ------------------------------------------------------------------------------

namespace {

/// The extents of an attention call: q [B][Tq][Hq][D], k and v [B][Tk][Hkv][D].
struct AttentionShape {
    std::size_t batch = 0, query_length = 0, query_heads = 0, head_dim = 0, key_length = 0, kv_heads = 0;
};

AttentionShape check_attention_inputs(Call& call, const Tensor& q, const Tensor& k, const Tensor& v,
                                      const char* k_name, const char* v_name) {
    call.tensor("q", q);
    call.tensor(k_name, k);
    call.tensor(v_name, v);
    call.float_dtype("q", q);
    call.float_dtype(k_name, k);
    call.float_dtype(v_name, v);
    if (q.rank() != 4) call.fail_shape("q", "[B, T, Hq, D]", q.shape(), q.size());
    if (k.rank() != 4) call.fail_shape(k_name, "[B, T, Hkv, D]", k.shape(), k.size());
    AttentionShape s;
    s.batch = q.shape()[0];
    s.query_length = q.shape()[1];
    s.query_heads = q.shape()[2];
    s.head_dim = q.shape()[3];
    s.key_length = k.shape()[1];
    s.kv_heads = k.shape()[2];
    if (k.shape()[0] != s.batch || k.shape()[3] != s.head_dim) {
        call.fail_shape(
            k_name,
            "[" + std::to_string(s.batch) + ", T, Hkv, " + std::to_string(s.head_dim) + "] (B and D from q)",
            k.shape(), k.size());
    }
    if (s.kv_heads == 0 ? s.query_heads != 0 : s.query_heads % s.kv_heads != 0) {
        call.fail_shape(
            k_name, "a head count dividing q's " + std::to_string(s.query_heads) + " (grouped-query heads)",
            k.shape(), k.size());
    }
    call.shape(v_name, v, k.shape());
    return s;
}

double resolve_scale(const Call& call, double scale, std::size_t head_dim) {
    check_finite(call, "scale", scale);
    if (scale != 0) return scale;
    return head_dim == 0 ? 1.0 : 1.0 / std::sqrt(static_cast<double>(head_dim));
}

}  // namespace

void attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out, const Tensor& lse,
               AttentionOptions options) {
    Call call("attention");
    const AttentionShape s = check_attention_inputs(call, q, k, v, "k", "v");
    call.tensor("out", out);
    call.tensor("lse", lse);
    call.float_dtype("out", out);
    call.accumulate("lse", lse);
    if (s.key_length != s.query_length) {
        call.fail_shape("k",
                        "[" + std::to_string(s.batch) + ", " + std::to_string(s.query_length) + ", Hkv, " +
                            std::to_string(s.head_dim) + "] (T from q)",
                        k.shape(), k.size());
    }
    call.shape("out", out, q.shape());
    call.shape("lse", lse, {s.batch, s.query_heads, s.query_length});
    for (const auto& [name, input] : {std::pair<const char*, const Tensor*>{"q", &q}, {"k", &k}, {"v", &v}}) {
        call.distinct("out", out, name, *input);
    }
    const double scale = resolve_scale(call, options.scale, s.head_dim);
    if (lse.size() == 0) return;
    call.backend().attention(q, k, v, out, lse, scale, options.causal);
}

void attention_backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                        const Tensor& lse, const Tensor& dout, const Tensor& dq, const Tensor& dk,
                        const Tensor& dv, AttentionOptions options) {
    Call call("attention_backward");
    const AttentionShape s = check_attention_inputs(call, q, k, v, "k", "v");
    call.tensor("out", out);
    call.tensor("lse", lse);
    call.tensor("dout", dout);
    const bool has_dq = call.optional("dq", dq);
    const bool has_dk = call.optional("dk", dk);
    const bool has_dv = call.optional("dv", dv);
    call.float_dtype("out", out);
    call.accumulate("lse", lse);
    call.float_dtype("dout", dout);
    if (has_dq) call.float_dtype("dq", dq);
    if (has_dk) call.float_dtype("dk", dk);
    if (has_dv) call.float_dtype("dv", dv);
    if (s.key_length != s.query_length) {
        call.fail_shape("k",
                        "[" + std::to_string(s.batch) + ", " + std::to_string(s.query_length) + ", Hkv, " +
                            std::to_string(s.head_dim) + "] (T from q)",
                        k.shape(), k.size());
    }
    call.shape("out", out, q.shape());
    call.shape("lse", lse, {s.batch, s.query_heads, s.query_length});
    call.shape("dout", dout, q.shape());
    if (has_dq) call.shape("dq", dq, q.shape());
    if (has_dk) call.shape("dk", dk, k.shape());
    if (has_dv) call.shape("dv", dv, v.shape());
    const std::pair<const char*, const Tensor*> reads[] = {{"q", &q},     {"k", &k},     {"v", &v},
                                                           {"out", &out}, {"lse", &lse}, {"dout", &dout}};
    const std::pair<const char*, const Tensor*> grads[] = {{"dq", &dq}, {"dk", &dk}, {"dv", &dv}};
    for (const auto& [grad_name, grad] : grads) {
        for (const auto& [read_name, read] : reads) call.distinct(grad_name, *grad, read_name, *read);
    }
    call.distinct("dk", dk, "dq", dq);
    call.distinct("dv", dv, "dq", dq);
    call.distinct("dv", dv, "dk", dk);
    const double scale = resolve_scale(call, options.scale, s.head_dim);
    if (q.size() == 0 || (!has_dq && !has_dk && !has_dv)) return;
    call.backend().attention_backward(q, k, v, out, lse, dout, dq, dk, dv, scale, options.causal);
}

void kv_attention(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache, const Tensor& out,
                  std::size_t past, AttentionOptions options) {
    Call call("kv_attention");
    const AttentionShape s = check_attention_inputs(call, q, k_cache, v_cache, "k_cache", "v_cache");
    call.tensor("out", out);
    call.float_dtype("out", out);
    call.shape("out", out, q.shape());
    if (past + s.query_length > s.key_length) {
        call.fail("past", "past " + std::to_string(past) + " + Tq " + std::to_string(s.query_length) +
                              " exceeds the cache's Tmax " + std::to_string(s.key_length));
    }
    for (const auto& [name, input] :
         {std::pair<const char*, const Tensor*>{"q", &q}, {"k_cache", &k_cache}, {"v_cache", &v_cache}}) {
        call.distinct("out", out, name, *input);
    }
    const double scale = resolve_scale(call, options.scale, s.head_dim);
    if (out.size() == 0) return;
    call.backend().kv_attention(q, k_cache, v_cache, out, past, scale, options.causal);
}

// ---- elementwise tapes ----------------------------------------------------------------------

namespace {

/// Checks that `input` broadcasts to `shape` (kernels.hpp: S, one element, [N], [..., 1]).
void check_broadcast(const Call& call, const std::string& argument, const Tensor& input, const Shape& shape) {
    if (input.shape() == shape || input.size() == 1) return;
    if (!shape.empty() && input.shape() == Shape{shape.back()}) return;
    if (!shape.empty()) {
        Shape column = shape;
        column.back() = 1;
        if (input.shape() == column) return;
    }
    Shape column = shape;
    if (!column.empty()) column.back() = 1;
    call.fail_shape(argument,
                    shape_string(shape) + " or one that broadcasts to it (one element, " +
                        shape_string(shape.empty() ? Shape{} : Shape{shape.back()}) + ", " +
                        shape_string(column) + ")",
                    input.shape(), element_count(shape));
}

void check_tape_counts(const Call& call, const Tape& tape, std::size_t inputs, std::size_t outputs,
                       const char* outputs_name, std::size_t params) {
    if (inputs != tape.input_count()) {
        call.fail("inputs", std::to_string(inputs) + " tensors for a tape of " +
                                std::to_string(tape.input_count()) + " inputs");
    }
    if (outputs != tape.output_count()) {
        call.fail(outputs_name, std::to_string(outputs) + " tensors for a tape of " +
                                    std::to_string(tape.output_count()) + " outputs");
    }
    if (params != tape.param_count()) {
        call.fail("params", std::to_string(params) + " values for a tape of " +
                                std::to_string(tape.param_count()) + " parameters");
    }
}

}  // namespace

void elementwise(const Tape& tape, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                 std::span<const double> params) {
    Call call("elementwise");
    check_tape_counts(call, tape, inputs.size(), outputs.size(), "outputs", params.size());
    if (outputs.empty()) call.fail("outputs", "a tape with no outputs writes nothing");
    const Shape& shape = outputs[0].defined() ? outputs[0].shape() : Shape{};
    for (std::size_t j = 0; j < outputs.size(); ++j) {
        const std::string argument = "outputs[" + std::to_string(j) + "]";
        call.tensor(argument, outputs[j]);
        call.float_dtype(argument, outputs[j]);
        call.shape(argument, outputs[j], shape);
        for (std::size_t other = 0; other < j; ++other) {
            call.distinct(argument, outputs[j], "outputs[" + std::to_string(other) + "]", outputs[other]);
        }
    }
    for (std::size_t i = 0; i < inputs.size(); ++i) {
        const std::string argument = "inputs[" + std::to_string(i) + "]";
        call.tensor(argument, inputs[i]);
        call.float_dtype(argument, inputs[i]);
        check_broadcast(call, argument, inputs[i], shape);
        if (inputs[i].shape() != shape) {
            for (std::size_t j = 0; j < outputs.size(); ++j) {
                call.distinct(argument, inputs[i], "outputs[" + std::to_string(j) + "] (it broadcasts)",
                              outputs[j]);
            }
        }
    }
    for (std::size_t p = 0; p < params.size(); ++p) check_finite(call, "params", params[p]);
    if (element_count(shape) == 0) return;
    call.backend().elementwise(tape, inputs, outputs, params);
}

void elementwise_backward(const Tape& tape, std::span<const Tensor> inputs,
                          std::span<const Tensor> output_grads, std::span<const Tensor> input_grads,
                          std::span<const double> params) {
    Call call("elementwise_backward");
    check_tape_counts(call, tape, inputs.size(), output_grads.size(), "output_grads", params.size());
    if (input_grads.size() != inputs.size()) {
        call.fail("input_grads", std::to_string(input_grads.size()) + " tensors for " +
                                     std::to_string(inputs.size()) + " inputs (undefined ones are skipped)");
    }
    if (output_grads.empty()) call.fail("output_grads", "a tape with no outputs has no gradient");
    const Shape& shape = output_grads[0].defined() ? output_grads[0].shape() : Shape{};
    for (std::size_t j = 0; j < output_grads.size(); ++j) {
        const std::string argument = "output_grads[" + std::to_string(j) + "]";
        call.tensor(argument, output_grads[j]);
        call.float_dtype(argument, output_grads[j]);
        call.shape(argument, output_grads[j], shape);
    }
    bool any_grad = false;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
        const std::string argument = "inputs[" + std::to_string(i) + "]";
        call.tensor(argument, inputs[i]);
        call.float_dtype(argument, inputs[i]);
        check_broadcast(call, argument, inputs[i], shape);
        const std::string grad_argument = "input_grads[" + std::to_string(i) + "]";
        if (!call.optional(grad_argument, input_grads[i])) continue;
        any_grad = true;
        call.float_dtype(grad_argument, input_grads[i]);
        call.shape(grad_argument, input_grads[i], inputs[i].shape());
        for (std::size_t other = 0; other < inputs.size(); ++other) {
            call.distinct(grad_argument, input_grads[i], "inputs[" + std::to_string(other) + "]",
                          inputs[other]);
        }
        for (std::size_t j = 0; j < output_grads.size(); ++j) {
            call.distinct(grad_argument, input_grads[i], "output_grads[" + std::to_string(j) + "]",
                          output_grads[j]);
        }
        for (std::size_t other = 0; other < i; ++other) {
            call.distinct(grad_argument, input_grads[i], "input_grads[" + std::to_string(other) + "]",
                          input_grads[other]);
        }
    }
    for (std::size_t p = 0; p < params.size(); ++p) check_finite(call, "params", params[p]);
    if (element_count(shape) == 0 || !any_grad) return;
    call.backend().elementwise_backward(tape, inputs, output_grads, input_grads, params);
}

}  // namespace tapevm::nn
