// The reference embedding lookups and the fused softmax cross-entropy. Ids and targets are
// checked here (the front end cannot read device memory): one out of range throws before
// anything is written.
#include <cmath>
#include <limits>
#include <string>

#include "reference/reference_backend.hpp"

namespace tapevm::nn::detail {

namespace {

/// Throws Error "<kernel>: <argument>[t] = id is outside [0, V)" for the first bad id
/// (pad_id, when given, is allowed too).
void check_ids(const char* kernel, const char* argument, const Tensor& ids, std::size_t vocabulary,
               bool has_pad = false, std::int32_t pad_id = 0) {
    const std::int32_t* id = i32_data(ids);
    for (std::size_t t = 0; t < ids.size(); ++t) {
        if (has_pad && id[t] == pad_id) continue;
        if (id[t] < 0 || static_cast<std::size_t>(id[t]) >= vocabulary) {
            throw Error(std::string(kernel) + ": " + argument + "[" + std::to_string(t) + "] = " +
                        std::to_string(id[t]) + " is outside [0, " + std::to_string(vocabulary) + ")");
        }
    }
}

}  // namespace

void ReferenceBackend::embedding(const Tensor& ids, const Tensor& table, const Tensor& out) {
    count_kernel();
    const std::size_t vocabulary = table.dim(0);
    const std::size_t d = table.dim(1);
    check_ids("embedding", "ids", ids, vocabulary);
    const std::int32_t* id = i32_data(ids);
    for (std::size_t t = 0; t < ids.size(); ++t) {
        const double* row = f64_data(table) + static_cast<std::size_t>(id[t]) * d;
        for (std::size_t j = 0; j < d; ++j) f64_data(out)[t * d + j] = row[j];
    }
}

void ReferenceBackend::embedding_backward(const Tensor& ids, const Tensor& dout, const Tensor& dtable) {
    count_kernel();
    const std::size_t vocabulary = dtable.dim(0);
    const std::size_t d = dtable.dim(1);
    check_ids("embedding_backward", "ids", ids, vocabulary);
    const std::int32_t* id = i32_data(ids);
    for (std::size_t t = 0; t < ids.size(); ++t) {  // token order
        double* row = f64_data(dtable) + static_cast<std::size_t>(id[t]) * d;
        for (std::size_t j = 0; j < d; ++j) row[j] += f64_data(dout)[t * d + j];
    }
}

void ReferenceBackend::cross_entropy(const Tensor& logits, const Tensor& targets, const Tensor& losses,
                                     const Tensor& dlogits, std::int32_t pad_id, double dloss) {
    count_kernel();
    const std::size_t vocabulary = logits.dim(-1);
    const std::size_t rows = logits.size() / vocabulary;
    check_ids("cross_entropy", "targets", targets, vocabulary, true, pad_id);
    for (std::size_t r = 0; r < rows; ++r) {
        const double* logit = f64_data(logits) + r * vocabulary;
        const std::int32_t target = i32_data(targets)[r];
        if (target == pad_id) {
            f64_data(losses)[r] = 0;
            if (dlogits.defined()) {
                for (std::size_t j = 0; j < vocabulary; ++j) f64_data(dlogits)[r * vocabulary + j] = 0;
            }
            continue;
        }
        double max = -std::numeric_limits<double>::infinity();
        for (std::size_t j = 0; j < vocabulary; ++j) max = std::max(max, logit[j]);
        double sum = 0;
        for (std::size_t j = 0; j < vocabulary; ++j) sum += std::exp(logit[j] - max);
        const double log_sum_exp = max + std::log(sum);
        const auto t = static_cast<std::size_t>(target);
        f64_data(losses)[r] = log_sum_exp - logit[t];
        if (dlogits.defined()) {  // may be logits itself: each logit read before it is written
            for (std::size_t j = 0; j < vocabulary; ++j) {
                const double probability = std::exp(logit[j] - log_sum_exp);
                f64_data(dlogits)[r * vocabulary + j] = (probability - (j == t ? 1.0 : 0.0)) * dloss;
            }
        }
    }
}

}  // namespace tapevm::nn::detail
