// Cases of the token kernels: embedding (gather: exact), embedding_backward (scatter-add in
// token order, with repeated ids) and the fused cross-entropy (losses and dlogits, pad rows,
// logits of +-1e4, dlogits in place or skipped).
#include <algorithm>
#include <cmath>
#include <string>

#include "harness.hpp"

namespace tapevm::nn::conformance {
namespace {

struct TokenShape {
    std::size_t tokens, vocab, dim;
};

std::string ts(const TokenShape& s) {
    return std::to_string(s.tokens) + " tokens, V " + std::to_string(s.vocab) + ", D " +
           std::to_string(s.dim);
}

void add_embedding(std::vector<Case>& cases, bool sweep) {
    std::vector<TokenShape> shapes = {{7, 65, 16}, {64, 5, 129}, {0, 5, 7}, {3, 1, 1}};
    if (sweep) {
        for (const std::size_t d : {1, 63, 64, 127, 384, 385, 1000}) shapes.push_back({129, 65, d});
        shapes.push_back({1000, 1000, 64});
    }
    for (const TokenShape s : shapes) {
        cases.push_back({KernelId::embedding, ts(s), [s](Context& c) {
                             const auto ids = c.random_ids(s.tokens, static_cast<std::int32_t>(s.vocab));
                             const Tensor out = c.empty({s.tokens, s.dim});
                             embedding(c.upload_ids({s.tokens}, ids),
                                       c.upload({s.vocab, s.dim}, c.random(s.vocab * s.dim)), out);
                             Output result = c.output("out", out);
                             result.exact = true;
                             return std::vector<Output>{result};
                         }});
        // ids of shape [2, tokens/2] as a batch of sequences, many repeats (small vocab).
        cases.push_back(
            {KernelId::embedding_backward, ts(s), [s](Context& c) {
                 const auto ids = c.random_ids(s.tokens, static_cast<std::int32_t>(s.vocab));
                 const auto dout = c.random(s.tokens * s.dim);
                 const auto table0 = c.random(s.vocab * s.dim);
                 const Tensor dtable = c.upload({s.vocab, s.dim}, table0);
                 embedding_backward(c.upload_ids({s.tokens}, ids), c.upload({s.tokens, s.dim}, dout), dtable);
                 Output result = c.output("dtable", dtable);
                 result.scale.resize(table0.size());
                 std::vector<std::size_t> uses(s.vocab, 0);
                 for (std::size_t i = 0; i < table0.size(); ++i) result.scale[i] = std::fabs(table0[i]);
                 for (std::size_t t = 0; t < s.tokens; ++t) {
                     ++uses[static_cast<std::size_t>(ids[t])];
                     for (std::size_t d = 0; d < s.dim; ++d)
                         result.scale[static_cast<std::size_t>(ids[t]) * s.dim + d] +=
                             std::fabs(dout[t * s.dim + d]);
                 }
                 result.depth = static_cast<double>(*std::max_element(uses.begin(), uses.end()) + 2);
                 return std::vector<Output>{result};
             }});
    }
}

void add_cross_entropy(std::vector<Case>& cases, bool sweep) {
    struct CeShape {
        std::size_t rows, vocab;
    };
    std::vector<CeShape> shapes = {{7, 65}, {3, 1000}, {0, 16}, {5, 1}};
    if (sweep) {
        for (const std::size_t v : {7, 16, 63, 64, 127, 129, 384, 385}) shapes.push_back({65, v});
        shapes.push_back({1000, 385});
    }
    for (const CeShape s : shapes) {
        for (const int variant : {0, 1, 2, 3}) {  // 0 plain, 1 logits +-1e4, 2 dlogits in place, 3 no dlogits
            if (variant == 1 && s.vocab < 2) continue;
            const char* names[] = {"", " logits +-1e4", " dlogits in place", " losses only"};
            cases.push_back(
                {KernelId::cross_entropy, text("[", s.rows, ", ", s.vocab, "]", names[variant]),
                 [s, variant](Context& c) {
                     const std::size_t count = s.rows * s.vocab;
                     auto x = c.random(count, -4, 4);
                     if (variant == 1) {
                         const auto signs = c.random(count, -1, 1);
                         for (std::size_t i = 0; i < count; ++i)
                             x[i] = round_to(c.tested(), (signs[i] < 0 ? -1e4 : 1e4) + x[i]);
                     }
                     auto targets = c.random_ids(s.rows, static_cast<std::int32_t>(s.vocab));
                     const std::int32_t pad = variant == 0 ? -1 : static_cast<std::int32_t>(s.vocab) - 1;
                     for (std::size_t r = 0; r < s.rows; r += 3)
                         targets[r] = variant == 0 ? -1 : pad;  // pad rows
                     const double dloss =
                         variant == 2 ? 0.5 : 1.0 / static_cast<double>(std::max<std::size_t>(s.rows, 1));
                     const Tensor logits = c.upload({s.rows, s.vocab}, x);
                     const Tensor losses = c.empty_stats({s.rows});
                     const Tensor dlogits = variant == 3   ? Tensor()
                                            : variant == 2 ? logits
                                                           : c.empty({s.rows, s.vocab});
                     cross_entropy(logits, c.upload_ids({s.rows}, targets), losses, dlogits, pad, dloss);
                     std::vector<Output> outs = {c.output("losses", losses)};
                     if (dlogits) outs.push_back(c.output("dlogits", dlogits));
                     for (std::size_t r = 0; r < s.rows; ++r) {
                         double big = 0;
                         for (std::size_t j = 0; j < s.vocab; ++j)
                             big = std::max(big, std::fabs(x[r * s.vocab + j]));
                         outs[0].scale.push_back(big + std::log(static_cast<double>(s.vocab)) + 1);
                     }
                     outs[0].depth = static_cast<double>(ceil_log2(s.vocab + 1)) + 24;
                     if (dlogits) {
                         outs[1].scale.assign(count, std::fabs(dloss));
                         outs[1].depth = static_cast<double>(ceil_log2(s.vocab + 1)) + 24;
                     }
                     return outs;
                 }});
        }
    }
}

}  // namespace

void add_token_cases(std::vector<Case>& cases, bool sweep) {
    add_embedding(cases, sweep);
    add_cross_entropy(cases, sweep);
}

}  // namespace tapevm::nn::conformance
